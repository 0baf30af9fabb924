//! The streaming tools' output: [`SnoopFormat`], what each tool's layout
//! gives (a header, a line, the JSON fields of an event), and the one
//! JSON writer they share ([`json_line`]: one object per event, the clock
//! fields added). Here the layouts of execsnoop (`PCOMM PID PPID RET
//! ARGS`), opensnoop (`PID COMM FD ERR PATH`) and exitsnoop, as
//! libbpf-tools prints them, with their optional leading columns; the
//! other tools' layouts are in their own modules (`render::sigsnoop`...).
//!
//! The clock columns come from the caller (this module reads no clock):
//! `Clock::hms` is the wall time the event was printed, as libbpf-tools
//! prints it, `Clock::secs` the seconds since the tool started.

use std::io::{self, Write};

use serde_json::{Value, json};

use crate::analysis::snoop::{ExecEvent, ExitEvent, OpenEvent};

/// The time columns of one line.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Clock {
    pub(crate) hms: (u32, u32, u32),
    pub(crate) secs: f64,
}

/// A streaming tool's layout: its table, and its events' JSON fields.
pub(crate) trait SnoopFormat {
    type Event;
    /// The table's header line(s).
    fn header<W: Write>(&self, w: &mut W) -> io::Result<()>;
    /// One event as a table line.
    fn line<W: Write>(&self, w: &mut W, e: &Self::Event, clock: Clock) -> io::Result<()>;
    /// One event's fields for `--json` (an object; [`json_line`] adds
    /// `time` and `secs`).
    fn fields(&self, e: &Self::Event) -> Value;
    /// Events arrived (one drain of the ring), about to be printed: what
    /// a layout reads when events arrive is read here, once for them all.
    fn arrived(&self) {}
}

/// One JSON object on one line: `fields` with the clock's `time`
/// (HH:MM:SS) and `secs` (since the start).
pub(crate) fn json_line(w: &mut impl Write, mut fields: Value, clock: Clock) -> io::Result<()> {
    if let Value::Object(map) = &mut fields {
        map.insert("time".into(), hms(clock.hms).into());
        map.insert("secs".into(), clock.secs.into());
    }
    serde_json::to_writer(&mut *w, &fields)?;
    writeln!(w)
}

/// `HH:MM:SS`.
pub(crate) fn hms((h, m, s): (u32, u32, u32)) -> String {
    format!("{h:02}:{m:02}:{s:02}")
}

/// execsnoop's optional columns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct ExecLayout {
    /// -T: HH:MM:SS.
    pub(crate) time: bool,
    /// -t: seconds since the start.
    pub(crate) timestamp: bool,
    /// -U: the user id.
    pub(crate) uid: bool,
    /// -q: arguments in double quotes.
    pub(crate) quote: bool,
}

impl SnoopFormat for ExecLayout {
    type Event = ExecEvent;

    fn header<W: Write>(&self, w: &mut W) -> io::Result<()> {
        if self.time {
            write!(w, "{:<8} ", "TIME")?;
        }
        if self.timestamp {
            write!(w, "{:<8} ", "TIME(s)")?;
        }
        if self.uid {
            write!(w, "{:<6} ", "UID")?;
        }
        writeln!(
            w,
            "{:<16} {:<6} {:<6} {:>3} ARGS",
            "PCOMM", "PID", "PPID", "RET"
        )
    }

    fn line<W: Write>(&self, w: &mut W, e: &ExecEvent, clock: Clock) -> io::Result<()> {
        if self.time {
            write!(w, "{:<8} ", hms(clock.hms))?;
        }
        if self.timestamp {
            write!(w, "{:<8.3} ", clock.secs)?;
        }
        if self.uid {
            write!(w, "{:<6} ", e.uid)?;
        }
        write!(w, "{:<16} {:<6} {:<6} {:>3}", e.comm, e.pid, e.ppid, e.ret)?;
        for arg in &e.args {
            if self.quote {
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

    fn fields(&self, e: &ExecEvent) -> Value {
        json!({
            "comm": e.comm, "pid": e.pid, "ppid": e.ppid, "uid": e.uid,
            "ret": e.ret, "args": e.args, "truncated": e.truncated,
        })
    }
}

/// opensnoop's optional columns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct OpenLayout {
    /// -T: HH:MM:SS.
    pub(crate) time: bool,
    /// -U: the user id.
    pub(crate) uid: bool,
    /// -e: the flags, in octal.
    pub(crate) extended: bool,
}

/// The descriptor (-1 on failure) and the errno (0 on success).
pub(crate) fn fd_err(ret: i32) -> (i32, i32) {
    if ret >= 0 { (ret, 0) } else { (-1, -ret) }
}

impl SnoopFormat for OpenLayout {
    type Event = OpenEvent;

    fn header<W: Write>(&self, w: &mut W) -> io::Result<()> {
        if self.time {
            write!(w, "{:<8} ", "TIME")?;
        }
        if self.uid {
            write!(w, "{:<7} ", "UID")?;
        }
        write!(w, "{:<6} {:<16} {:>3} {:>3} ", "PID", "COMM", "FD", "ERR")?;
        if self.extended {
            write!(w, "{:<8} ", "FLAGS")?;
        }
        writeln!(w, "PATH")
    }

    fn line<W: Write>(&self, w: &mut W, e: &OpenEvent, clock: Clock) -> io::Result<()> {
        if self.time {
            write!(w, "{:<8} ", hms(clock.hms))?;
        }
        if self.uid {
            write!(w, "{:<7} ", e.uid)?;
        }
        let (fd, err) = fd_err(e.ret);
        write!(w, "{:<6} {:<16} {fd:>3} {err:>3} ", e.pid, e.comm)?;
        if self.extended {
            write!(w, "{:08o} ", e.flags)?;
        }
        writeln!(w, "{}", e.path)
    }

    fn fields(&self, e: &OpenEvent) -> Value {
        let (fd, err) = fd_err(e.ret);
        json!({
            "pid": e.pid, "tid": e.tid, "uid": e.uid, "comm": e.comm,
            "fd": fd, "err": err, "flags": e.flags, "mode": e.mode,
            "duration_ns": e.duration_ns, "path": e.path,
        })
    }
}

/// exitsnoop's layout (`time`: -t, a leading TIME column).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct ExitLayout {
    pub(crate) time: bool,
}

impl SnoopFormat for ExitLayout {
    type Event = ExitEvent;

    fn header<W: Write>(&self, w: &mut W) -> io::Result<()> {
        if self.time {
            write!(w, "{:<8} ", "TIME")?;
        }
        let cols = ["PCOMM", "PID", "PPID", "TID", "AGE(s)"];
        writeln!(
            w,
            "{:<16} {:<7} {:<7} {:<7} {:<7} EXIT_CODE",
            cols[0], cols[1], cols[2], cols[3], cols[4]
        )
    }

    fn line<W: Write>(&self, w: &mut W, e: &ExitEvent, clock: Clock) -> io::Result<()> {
        if self.time {
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

    fn fields(&self, e: &ExitEvent) -> Value {
        json!({
            "comm": e.comm, "pid": e.pid, "ppid": e.ppid, "tid": e.tid,
            "age_ns": e.age_ns, "code": e.code(), "signal": e.signal(),
            "core_dumped": e.core_dumped(),
        })
    }
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
        l.header(&mut out).unwrap();
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
        l.line(&mut out, &e, clock).unwrap();
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
        ol.header(&mut out).unwrap();
        ol.line(&mut out, &o, clock).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "TIME     PCOMM            PID    PPID   RET ARGS\n\
             01:02:03 true             12     3       -2 /bin/true a\n\
             PID    COMM              FD ERR FLAGS    PATH\n\
             9      cat               -1   2 02000000 /nope\n"
        );
    }
}
