//! killsnoop's and sigsnoop's lines, in libbpf-tools' layout (`TIME PID
//! COMM SIG TPID RESULT`; `-n`: the signal's name, SIGUSR1, in the SIG
//! column), and their JSON fields. The two tools share the layout, as in
//! libbpf-tools, where killsnoop is sigsnoop under another name.

use std::io::{self, Write};

use serde_json::{Value, json};

use super::snoop::{Clock, SnoopFormat, hms};
use crate::analysis::snoop::SigEvent;

/// The layout's options.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct SigLayout {
    /// -n: the signal's name instead of its number.
    pub(crate) names: bool,
}

/// The names of the standard signals (1..31), as libbpf-tools prints them.
const NAMES: [&str; 31] = [
    "SIGHUP",
    "SIGINT",
    "SIGQUIT",
    "SIGILL",
    "SIGTRAP",
    "SIGABRT",
    "SIGBUS",
    "SIGFPE",
    "SIGKILL",
    "SIGUSR1",
    "SIGSEGV",
    "SIGUSR2",
    "SIGPIPE",
    "SIGALRM",
    "SIGTERM",
    "SIGSTKFLT",
    "SIGCHLD",
    "SIGCONT",
    "SIGSTOP",
    "SIGTSTP",
    "SIGTTIN",
    "SIGTTOU",
    "SIGURG",
    "SIGXCPU",
    "SIGXFSZ",
    "SIGVTALRM",
    "SIGPROF",
    "SIGWINCH",
    "SIGIO",
    "SIGPWR",
    "SIGSYS",
];

/// A signal's name (`SIGUSR1`), or None for 0 and the real-time ones.
pub(crate) fn signal_name(sig: i32) -> Option<&'static str> {
    NAMES
        .get(usize::try_from(sig).ok()?.checked_sub(1)?)
        .copied()
}

/// A signal's number from its name or number (`USR1`, `SIGUSR1`, `10`).
pub(crate) fn signal_number(text: &str) -> Option<i32> {
    if let Ok(n) = text.parse::<i32>() {
        return (1..=64).contains(&n).then_some(n);
    }
    let upper = text.to_ascii_uppercase();
    let name = upper.strip_prefix("SIG").unwrap_or(&upper);
    (1..=31).find(|&n| signal_name(n).is_some_and(|s| &s[3..] == name))
}

impl SnoopFormat for SigLayout {
    type Event = SigEvent;

    fn header<W: Write>(&self, w: &mut W) -> io::Result<()> {
        let cols = ["TIME", "PID", "COMM", "SIG", "TPID", "RESULT"];
        writeln!(
            w,
            "{:<8} {:<7} {:<16} {:<9} {:<7} {}",
            cols[0], cols[1], cols[2], cols[3], cols[4], cols[5]
        )
    }

    fn line<W: Write>(&self, w: &mut W, e: &SigEvent, clock: Clock) -> io::Result<()> {
        let sig = match signal_name(e.sig) {
            Some(name) if self.names => name.to_string(),
            _ => e.sig.to_string(),
        };
        writeln!(
            w,
            "{:<8} {:<7} {:<16} {sig:<9} {:<7} {}",
            hms(clock.hms),
            e.pid,
            e.comm,
            e.tpid,
            e.ret
        )
    }

    fn fields(&self, e: &SigEvent) -> Value {
        json!({
            "pid": e.pid, "tid": e.tid, "comm": e.comm, "sig": e.sig,
            "sig_name": signal_name(e.sig), "tpid": e.tpid, "ret": e.ret,
            "source": e.source.name(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_numbers_of_signals() {
        assert_eq!(signal_name(10), Some("SIGUSR1"));
        assert_eq!(signal_name(0), None);
        assert_eq!(signal_name(34), None);
        assert_eq!(signal_number("usr1"), Some(10));
        assert_eq!(signal_number("SIGKILL"), Some(9));
        assert_eq!(signal_number("64"), Some(64));
        assert_eq!(signal_number("0"), None);
        assert_eq!(signal_number("SIGNOPE"), None);
    }

    #[test]
    fn lines_in_libbpf_tools_layout() {
        let e = SigEvent {
            pid: 12,
            comm: "kill".into(),
            sig: 10,
            tpid: -34,
            ret: -3,
            ..SigEvent::default()
        };
        let clock = Clock {
            hms: (1, 2, 3),
            secs: 0.5,
        };
        let mut out = Vec::new();
        let l = SigLayout { names: true };
        l.header(&mut out).unwrap();
        l.line(&mut out, &e, clock).unwrap();
        SigLayout::default().line(&mut out, &e, clock).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "TIME     PID     COMM             SIG       TPID    RESULT\n\
             01:02:03 12      kill             SIGUSR1   -34     -3\n\
             01:02:03 12      kill             10        -34     -3\n"
        );
    }
}
