//! `scry trace` as text: one line per system call or event, in perf
//! trace's layout, and the `-s` summary table.
//!
//! ```text
//!      0.000 ( 0.004 ms): cat/1234 openat(dfd: CWD, filename: "/etc/hostname", flags: 0) = 3
//!      0.020 ( 0.002 ms): cat/1234 openat(dfd: CWD, filename: "/nope") = -1 ENOENT (No such file or directory)
//! ```
//!
//! Arguments are named and left out as perf trace does (`render::trace_args`).
//! Times are milliseconds since the first line. A call whose entry was not
//! seen shows `?` as duration and no arguments; a call that never returned
//! (exit_group) shows `= ?`. Strings and buffers copied at the entry are
//! quoted with C escapes (`"a\tb\n"`), `...` after one cut short; one that
//! was not copied shows its address and why (`filename: 0x7ffd12 (not
//! copied)`), never bytes read later.

use std::io::{self, Write};

use crate::analysis::syscalls::{ArgKind, ArgText, Summary, SyscallCall, TraceOutput};

use super::trace_args::{self, Shown};

/// Writes trace lines to `out`.
pub(crate) struct TextOutput<W: Write> {
    out: W,
    first_time: Option<u64>,
    line: String,
}

impl<W: Write> TextOutput<W> {
    pub(crate) fn new(out: W) -> Self {
        TextOutput {
            out,
            first_time: None,
            line: String::new(),
        }
    }

    pub(crate) fn get_mut(&mut self) -> &mut W {
        &mut self.out
    }

    fn relative_ms(&mut self, time: u64) -> f64 {
        let t0 = *self.first_time.get_or_insert(time);
        time.saturating_sub(t0) as f64 / 1e6
    }
}

/// `-1 ENOENT (No such file or directory)`.
pub(crate) fn errno_text(errno: i32) -> String {
    match syscalls::Errno::new(errno).name_and_description() {
        Some((name, desc)) => format!("-1 {name} ({desc})"),
        None => format!("-1 E{errno}"),
    }
}

fn write_args(call: &SyscallCall, line: &mut String) {
    use std::fmt::Write as _;
    let Some(enter) = &call.enter else {
        line.push_str("...");
        return;
    };
    let mut first = true;
    for (i, (arg, value)) in call.desc.args.iter().zip(enter.args).enumerate() {
        let shown = trace_args::shown(&call.desc.name, &arg.name, value, &enter.args);
        if shown == Shown::Omitted {
            continue;
        }
        if !first {
            line.push_str(", ");
        }
        first = false;
        let _ = write!(line, "{}: ", arg.name);
        let _ = match (shown, arg.kind) {
            (Shown::Text(text), _) => write!(line, "{text}"),
            (_, ArgKind::Signed(4)) => write!(line, "{}", value as u32 as i32),
            (_, ArgKind::Signed(_)) => write!(line, "{}", value as i64),
            (_, ArgKind::Unsigned(4)) => write!(line, "{}", value as u32),
            (_, ArgKind::Unsigned(_)) => write!(line, "{value}"),
            (_, ArgKind::Hex) => write!(line, "{value:#x}"),
            (_, ArgKind::DirFd) if value as u32 as i32 == libc::AT_FDCWD => write!(line, "CWD"),
            (_, ArgKind::DirFd) => write!(line, "{}", value as u32 as i32),
            (_, ArgKind::Str | ArgKind::Buffer { .. }) => {
                match enter.strings.iter().find(|(j, _)| *j == i) {
                    Some((_, ArgText::Copied { bytes, truncated })) => {
                        quote(bytes, line);
                        if *truncated {
                            line.push_str("...");
                        }
                        Ok(())
                    }
                    Some((_, ArgText::Unavailable(why))) => write!(line, "{value:#x} ({why})"),
                    None => write!(line, "{value:#x}"),
                }
            }
        };
    }
}

/// `bytes` in double quotes, C escapes for quotes, backslashes, control
/// characters and bytes that are not UTF-8 (as strace shows them).
fn quote(bytes: &[u8], line: &mut String) {
    use std::fmt::Write as _;
    line.push('"');
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            let _ = match c {
                '"' => write!(line, "\\\""),
                '\\' => write!(line, "\\\\"),
                '\n' => write!(line, "\\n"),
                '\t' => write!(line, "\\t"),
                '\r' => write!(line, "\\r"),
                c if c.is_control() => write!(line, "\\x{:02x}", c as u32),
                c => write!(line, "{c}"),
            };
        }
        for b in chunk.invalid() {
            let _ = write!(line, "\\x{b:02x}");
        }
    }
    line.push('"');
}

impl<W: Write> TraceOutput for TextOutput<W> {
    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    fn call(&mut self, call: &SyscallCall, comm: &str) -> io::Result<()> {
        use std::fmt::Write as _;
        let ms = self.relative_ms(call.time());
        let mut line = std::mem::take(&mut self.line);
        line.clear();
        let _ = write!(line, "{ms:>10.3} (");
        let _ = match call.duration_ns() {
            Some(d) => write!(line, "{:>6.3} ms", d as f64 / 1e6),
            None => write!(line, "{:>9}", "?"),
        };
        let _ = write!(line, "): {comm}/{} {}(", call.tid, call.desc.name);
        write_args(call, &mut line);
        line.push(')');
        let _ = match (call.ret, call.errno()) {
            (None, _) => write!(line, " = ?"),
            (Some(_), Some(errno)) => write!(line, " = {}", errno_text(errno)),
            (Some(ret), None) if ret > 0xffff => write!(line, " = {ret:#x}"),
            (Some(ret), None) => write!(line, " = {ret}"),
        };
        line.push('\n');
        let result = self.out.write_all(line.as_bytes());
        self.line = line;
        result
    }

    fn event(
        &mut self,
        time: u64,
        _pid: i32,
        tid: i32,
        comm: &str,
        name: &str,
        text: &str,
    ) -> io::Result<()> {
        let ms = self.relative_ms(time);
        writeln!(self.out, "{ms:>10.3} {comm}/{tid} {name}: {text}")
    }
}

/// The `-s` table, per thread, busiest system call first (as perf trace).
pub(crate) fn write_summary(summary: &Summary, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "\n Summary of events:")?;
    let total = summary.total_events.max(1) as f64;
    for (&(_pid, tid), thread) in &summary.threads {
        let comm = if thread.comm.is_empty() {
            ":?"
        } else {
            &thread.comm
        };
        writeln!(
            out,
            "\n {comm} ({tid}), {} events, {:.1}%\n",
            thread.events,
            100.0 * thread.events as f64 / total
        )?;
        if thread.syscalls.is_empty() {
            continue;
        }
        writeln!(
            out,
            "   syscall            calls  errors  total       min       avg       max       stddev"
        )?;
        writeln!(
            out,
            "                                     (msec)    (msec)    (msec)    (msec)        (%)"
        )?;
        writeln!(
            out,
            "   --------------- --------  ------ -------- --------- --------- ---------     ------"
        )?;
        let mut rows: Vec<_> = thread.syscalls.iter().collect();
        rows.sort_by(|a, b| b.1.total_ns.cmp(&a.1.total_ns).then(a.0.cmp(b.0)));
        for (nr, st) in rows {
            let name = summary.names.get(nr).map_or("?", String::as_str);
            writeln!(
                out,
                "   {:<15} {:>8} {:>7} {:>8.3} {:>9.3} {:>9.3} {:>9.3}     {:>5.2}%",
                name,
                st.calls,
                st.errors,
                st.total_ns as f64 / 1e6,
                st.min_ns as f64 / 1e6,
                st.avg_ns() / 1e6,
                st.max_ns as f64 / 1e6,
                st.stddev_pct()
            )?;
        }
    }
    writeln!(out)
}

#[cfg(test)]
mod tests {
    use std::rc::Rc;

    use super::*;
    use crate::analysis::syscalls::{SyscallDesc, SyscallEnter, TraceItem, Tracer, TracerOptions};
    use crate::event::syscall::ArgDesc;

    fn openat() -> Rc<SyscallDesc> {
        let arg = |name: &str, kind| ArgDesc {
            name: name.into(),
            kind,
        };
        Rc::new(SyscallDesc {
            nr: 257,
            name: "openat".into(),
            args: vec![
                arg("dfd", ArgKind::DirFd),
                arg("filename", ArgKind::Str),
                arg("flags", ArgKind::Hex),
            ],
        })
    }

    fn run(items: Vec<TraceItem>, opts: TracerOptions) -> (String, Summary) {
        let mut out = TextOutput::new(Vec::new());
        let mut tracer = Tracer::new(opts);
        for item in items {
            tracer.item(item, &mut out).unwrap();
        }
        tracer.finish(&mut out).unwrap();
        (String::from_utf8(out.out).unwrap(), tracer.summary)
    }

    fn enter(time: u64, path: ArgText) -> TraceItem {
        TraceItem::Enter(SyscallEnter {
            pid: 7,
            tid: 7,
            time,
            desc: openat(),
            args: [(-100i64) as u64, 0x1000, 0x80000, 0, 0, 0],
            strings: vec![(1, path)],
        })
    }

    fn copied(s: &str) -> ArgText {
        ArgText::Copied {
            bytes: s.as_bytes().to_vec(),
            truncated: false,
        }
    }

    #[test]
    fn quotes_with_c_escapes() {
        let mut line = String::new();
        quote(b"a\"b\\c\n\x01\xff\xc3\xa9", &mut line);
        assert_eq!(line, r#""a\"b\\c\n\x01\xffé""#);
    }

    fn exit(time: u64, ret: i64) -> TraceItem {
        TraceItem::Exit {
            pid: 7,
            tid: 7,
            time,
            desc: openat(),
            ret,
        }
    }

    #[test]
    fn lines_as_perf_trace() {
        let items = vec![
            TraceItem::Comm {
                tid: 7,
                comm: "cat".into(),
                time: 0,
            },
            enter(1_000_000, copied("/etc/hostname")),
            exit(1_004_000, 3),
            enter(2_000_000, ArgText::NOT_COPIED),
            exit(2_500_000, -2),
        ];
        let (text, summary) = run(
            items,
            TracerOptions {
                show_events: true,
                ..TracerOptions::default()
            },
        );
        let expected = "     0.000 ( 0.004 ms): cat/7 openat(dfd: CWD, filename: \"/etc/hostname\", flags: RDONLY|CLOEXEC) = 3\n     \
1.000 ( 0.500 ms): cat/7 openat(dfd: CWD, filename: 0x1000 (not copied), flags: RDONLY|CLOEXEC) = -1 ENOENT (No such file or directory)\n";
        assert_eq!(text, expected);
        let st = &summary.threads[&(7, 7)].syscalls[&257];
        assert_eq!((st.calls, st.errors), (2, 1));
        let mut table = Vec::new();
        write_summary(&summary, &mut table).unwrap();
        let table = String::from_utf8(table).unwrap();
        assert!(table.contains(" cat (7), 4 events, 100.0%"), "{table}");
        assert!(
            table.contains(
                "   openat                 2       1    0.504     0.004     0.252     0.500"
            ),
            "{table}"
        );
    }

    #[test]
    fn duration_filter_and_unfinished() {
        let items = vec![
            enter(0, copied("a")),
            exit(1_000, 3),
            enter(10_000, copied("b")),
            exit(3_010_000, 4),
            enter(4_000_000, copied("c")),
        ];
        let (text, _) = run(
            items,
            TracerOptions {
                show_events: true,
                min_duration_ns: Some(2_000_000),
            },
        );
        assert_eq!(text.lines().count(), 1, "{text}");
        assert!(text.contains("\"b\"") && text.contains("= 4"));
        let (text, _) = run(
            vec![enter(0, copied("c"))],
            TracerOptions {
                show_events: true,
                min_duration_ns: None,
            },
        );
        assert!(text.trim_end().ends_with("= ?"), "{text}");
    }
}
