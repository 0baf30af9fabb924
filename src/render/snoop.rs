//! The streaming tools' lines in libbpf-tools' layout (execsnoop's
//! `PCOMM PID PPID RET ARGS`, opensnoop's `PID COMM FD ERR PATH`, with
//! their optional leading columns), and one JSON object per event.
//!
//! The clock columns come from the caller (this module reads no clock):
//! `Clock::hms` is the wall time the event was printed, as libbpf-tools
//! prints it, `Clock::secs` the seconds since the tool started.

use std::io::{self, Write};

use serde_json::json;

use crate::analysis::snoop::{ExecEvent, ExitEvent, OpenEvent};

/// The time columns of one line.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Clock {
    pub hms: (u32, u32, u32),
    pub secs: f64,
}

/// execsnoop's optional columns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExecLayout {
    /// -T: HH:MM:SS.
    pub time: bool,
    /// -t: seconds since the start.
    pub timestamp: bool,
    /// -U: the user id.
    pub uid: bool,
    /// -q: arguments in double quotes.
    pub quote: bool,
}

fn hms((h, m, s): (u32, u32, u32)) -> String {
    format!("{h:02}:{m:02}:{s:02}")
}

pub fn exec_header(w: &mut impl Write, l: ExecLayout) -> io::Result<()> {
    if l.time {
        write!(w, "{:<8} ", "TIME")?;
    }
    if l.timestamp {
        write!(w, "{:<8} ", "TIME(s)")?;
    }
    if l.uid {
        write!(w, "{:<6} ", "UID")?;
    }
    writeln!(
        w,
        "{:<16} {:<6} {:<6} {:>3} ARGS",
        "PCOMM", "PID", "PPID", "RET"
    )
}

pub fn exec_line(w: &mut impl Write, e: &ExecEvent, l: ExecLayout, clock: Clock) -> io::Result<()> {
    if l.time {
        write!(w, "{:<8} ", hms(clock.hms))?;
    }
    if l.timestamp {
        write!(w, "{:<8.3} ", clock.secs)?;
    }
    if l.uid {
        write!(w, "{:<6} ", e.uid)?;
    }
    write!(w, "{:<16} {:<6} {:<6} {:>3}", e.comm, e.pid, e.ppid, e.ret)?;
    for arg in &e.args {
        if l.quote {
            write!(w, " \"{}\"", arg.replace('"', "\\\""))?;
        } else {
            write!(w, " {arg}")?;
        }
    }
    if e.truncated {
        write!(w, " ...")?;
    }
    writeln!(w)
}

pub fn exec_json(w: &mut impl Write, e: &ExecEvent, clock: Clock) -> io::Result<()> {
    let v = json!({
        "time": hms(clock.hms), "secs": clock.secs,
        "comm": e.comm, "pid": e.pid, "ppid": e.ppid, "uid": e.uid,
        "ret": e.ret, "args": e.args, "truncated": e.truncated,
    });
    serde_json::to_writer(&mut *w, &v)?;
    writeln!(w)
}

/// opensnoop's optional columns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OpenLayout {
    /// -T: HH:MM:SS.
    pub time: bool,
    /// -U: the user id.
    pub uid: bool,
    /// -e: the flags, in octal.
    pub extended: bool,
}

pub fn open_header(w: &mut impl Write, l: OpenLayout) -> io::Result<()> {
    if l.time {
        write!(w, "{:<8} ", "TIME")?;
    }
    if l.uid {
        write!(w, "{:<7} ", "UID")?;
    }
    write!(w, "{:<6} {:<16} {:>3} {:>3} ", "PID", "COMM", "FD", "ERR")?;
    if l.extended {
        write!(w, "{:<8} ", "FLAGS")?;
    }
    writeln!(w, "PATH")
}

/// The descriptor (-1 on failure) and the errno (0 on success).
fn fd_err(ret: i32) -> (i32, i32) {
    if ret >= 0 { (ret, 0) } else { (-1, -ret) }
}

pub fn open_line(w: &mut impl Write, e: &OpenEvent, l: OpenLayout, clock: Clock) -> io::Result<()> {
    if l.time {
        write!(w, "{:<8} ", hms(clock.hms))?;
    }
    if l.uid {
        write!(w, "{:<7} ", e.uid)?;
    }
    let (fd, err) = fd_err(e.ret);
    write!(w, "{:<6} {:<16} {fd:>3} {err:>3} ", e.pid, e.comm)?;
    if l.extended {
        write!(w, "{:08o} ", e.flags)?;
    }
    writeln!(w, "{}", e.path)
}

pub fn open_json(w: &mut impl Write, e: &OpenEvent, clock: Clock) -> io::Result<()> {
    let (fd, err) = fd_err(e.ret);
    let v = json!({
        "time": hms(clock.hms), "secs": clock.secs,
        "pid": e.pid, "tid": e.tid, "uid": e.uid, "comm": e.comm,
        "fd": fd, "err": err, "flags": e.flags, "mode": e.mode,
        "duration_ns": e.duration_ns, "path": e.path,
    });
    serde_json::to_writer(&mut *w, &v)?;
    writeln!(w)
}

/// exitsnoop's header (`-t`: a leading TIME column).
pub fn exit_header(w: &mut impl Write, time: bool) -> io::Result<()> {
    if time {
        write!(w, "{:<8} ", "TIME")?;
    }
    let cols = ["PCOMM", "PID", "PPID", "TID", "AGE(s)"];
    writeln!(
        w,
        "{:<16} {:<7} {:<7} {:<7} {:<7} EXIT_CODE",
        cols[0], cols[1], cols[2], cols[3], cols[4]
    )
}

pub fn exit_line(w: &mut impl Write, e: &ExitEvent, time: bool, clock: Clock) -> io::Result<()> {
    if time {
        write!(w, "{:<8} ", hms(clock.hms))?;
    }
    let age = e.age_ns as f64 / 1e9;
    write!(
        w,
        "{:<16} {:<7} {:<7} {:<7} {age:<7.2} ",
        e.comm, e.pid, e.ppid, e.tid
    )?;
    match e.signal() {
        Some(sig) => {
            write!(w, "signal {sig} ({})", signal_name(sig))?;
            if e.core_dumped() {
                write!(w, ", core dumped")?;
            }
            writeln!(w)
        }
        None if e.code() == 0 => writeln!(w, "0"),
        None => writeln!(w, "code {}", e.code()),
    }
}

pub fn exit_json(w: &mut impl Write, e: &ExitEvent, clock: Clock) -> io::Result<()> {
    let v = json!({
        "time": hms(clock.hms), "secs": clock.secs,
        "comm": e.comm, "pid": e.pid, "ppid": e.ppid, "tid": e.tid,
        "age_ns": e.age_ns, "code": e.code(), "signal": e.signal(),
        "core_dumped": e.core_dumped(),
    });
    serde_json::to_writer(&mut *w, &v)?;
    writeln!(w)
}

/// strsignal(3)'s words for the common signals.
fn signal_name(sig: u32) -> &'static str {
    match sig {
        1 => "Hangup",
        2 => "Interrupt",
        3 => "Quit",
        4 => "Illegal instruction",
        6 => "Aborted",
        7 => "Bus error",
        8 => "Floating point exception",
        9 => "Killed",
        11 => "Segmentation fault",
        13 => "Broken pipe",
        14 => "Alarm clock",
        15 => "Terminated",
        _ => "Unknown signal",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_in_libbpf_tools_layout() {
        let mut out = Vec::new();
        let l = ExecLayout {
            time: true,
            ..ExecLayout::default()
        };
        exec_header(&mut out, l).unwrap();
        let e = ExecEvent {
            comm: "true".into(),
            pid: 12,
            ppid: 3,
            ret: -2,
            args: vec!["/bin/true".into(), "a".into()],
            ..ExecEvent::default()
        };
        let clock = Clock {
            hms: (1, 2, 3),
            secs: 0.5,
        };
        exec_line(&mut out, &e, l, clock).unwrap();
        let o = OpenEvent {
            pid: 9,
            comm: "cat".into(),
            ret: -2,
            flags: 0o2000000,
            path: "/nope".into(),
            ..OpenEvent::default()
        };
        let ol = OpenLayout {
            extended: true,
            ..OpenLayout::default()
        };
        open_header(&mut out, ol).unwrap();
        open_line(&mut out, &o, ol, clock).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "TIME     PCOMM            PID    PPID   RET ARGS\n\
             01:02:03 true             12     3       -2 /bin/true a\n\
             PID    COMM              FD ERR FLAGS    PATH\n\
             9      cat               -1   2 02000000 /nope\n"
        );
    }
}
