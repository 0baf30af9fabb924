//! statsnoop's lines, in libbpf-tools' layout (`PID COMM RET ERR PATH`;
//! `-t`: a leading `TIME(s)`, seconds since the tool started; `-s`: the
//! call's name before the path), and filelife's (`TIME PID COMM AGE(s)
//! FILE`), the other tool of paths; their JSON fields.

use std::io::{self, Write};

use serde_json::{Value, json};

use super::snoop::{Clock, SnoopFormat, fd_err};
use crate::analysis::snoop::{LifeEvent, StatEvent};

/// statsnoop's optional columns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct StatLayout {
    /// -t: seconds since the start.
    pub(crate) timestamp: bool,
    /// -s: the system call's name.
    pub(crate) syscall: bool,
}

impl SnoopFormat for StatLayout {
    type Event = StatEvent;

    fn header<W: Write>(&self, w: &mut W) -> io::Result<()> {
        if self.timestamp {
            write!(w, "{:<14} ", "TIME(s)")?;
        }
        write!(w, "{:<7} {:<20} {:<4} {:<4}", "PID", "COMM", "RET", "ERR")?;
        if self.syscall {
            write!(w, " {:<10}", "SYSCALL")?;
        }
        writeln!(w, " PATH")
    }

    fn line<W: Write>(&self, w: &mut W, e: &StatEvent, clock: Clock) -> io::Result<()> {
        if self.timestamp {
            write!(w, "{:<14.9} ", clock.secs)?;
        }
        let (ret, err) = fd_err(e.ret);
        write!(w, "{:<7} {:<20} {ret:<4} {err:<4}", e.pid, e.comm)?;
        if self.syscall {
            write!(w, " {:<10}", e.call)?;
        }
        writeln!(w, " {}", e.path)
    }

    fn fields(&self, e: &StatEvent) -> Value {
        let (ret, err) = fd_err(e.ret);
        json!({
            "pid": e.pid, "tid": e.tid, "comm": e.comm, "ret": ret,
            "err": err, "syscall": e.call, "path": e.path,
        })
    }
}

/// filelife's layout.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct LifeLayout;

impl SnoopFormat for LifeLayout {
    type Event = LifeEvent;

    fn header<W: Write>(&self, w: &mut W) -> io::Result<()> {
        writeln!(
            w,
            "{:<8} {:<6} {:<16} {:<7} FILE",
            "TIME", "PID", "COMM", "AGE(s)"
        )
    }

    fn line<W: Write>(&self, w: &mut W, e: &LifeEvent, clock: Clock) -> io::Result<()> {
        writeln!(
            w,
            "{:<8} {:<6} {:<16} {:<7.2} {}",
            super::snoop::hms(clock.hms),
            e.pid,
            e.comm,
            e.age_ns as f64 / 1e9,
            e.path
        )
    }

    fn fields(&self, e: &LifeEvent) -> Value {
        json!({
            "pid": e.pid, "tid": e.tid, "comm": e.comm,
            "age_s": e.age_ns as f64 / 1e9, "file": e.path,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_in_libbpf_tools_layout() {
        let e = StatEvent {
            pid: 7,
            comm: "stat".into(),
            ret: -2,
            call: "statx",
            path: "/nope".into(),
            ..StatEvent::default()
        };
        let clock = Clock {
            hms: (1, 2, 3),
            secs: 0.25,
        };
        let mut out = Vec::new();
        let all = StatLayout {
            timestamp: true,
            syscall: true,
        };
        StatLayout::default().header(&mut out).unwrap();
        StatLayout::default().line(&mut out, &e, clock).unwrap();
        all.header(&mut out).unwrap();
        all.line(&mut out, &e, clock).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "PID     COMM                 RET  ERR  PATH\n\
             7       stat                 -1   2    /nope\n\
             TIME(s)        PID     COMM                 RET  ERR  SYSCALL    PATH\n\
             0.250000000    7       stat                 -1   2    statx      /nope\n"
        );
    }
}
