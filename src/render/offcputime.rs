//! offcputime's and wakeuptime's text as bcc prints it (wakeuptime's:
//! `write_wakeup_stacks`). offcputime's: per entry the kernel frames
//! (innermost first), with `-d` a `--` line, the user frames, then `-`
//! padded to 16 with `comm (tid)` and the total in µs on the next line,
//! a blank line after; or folded (`-f`): `comm;user frames outermost
//! first;[-;]kernel frames outermost first TOTAL`, one line per entry.

use std::io::{self, Write};

use crate::analysis::offcputime::{OffcpuEntry, StackPart, WakeupEntry};

const MISSED_KERNEL: &str = "[Missed Kernel Stack]";
const MISSED_USER: &str = "[Missed User Stack]";

/// The multi-line layout; `delimit`: a `--` between kernel and user frames.
pub fn write_offcpu_stacks(
    w: &mut impl Write,
    entries: &[OffcpuEntry],
    delimit: bool,
) -> io::Result<()> {
    for e in entries {
        match &e.kernel {
            StackPart::Frames(frames) => frames.iter().try_for_each(|f| writeln!(w, "    {f}"))?,
            StackPart::Missed => writeln!(w, "    {MISSED_KERNEL}")?,
            StackPart::Absent => {}
        }
        if delimit && e.has_both_stacks() {
            writeln!(w, "    --")?;
        }
        match &e.user {
            StackPart::Frames(frames) => frames.iter().try_for_each(|f| writeln!(w, "    {f}"))?,
            StackPart::Missed => writeln!(w, "    {MISSED_USER}")?,
            StackPart::Absent => {}
        }
        writeln!(w, "    {:<16} {} ({})", "-", e.comm, e.tid)?;
        writeln!(w, "        {}\n", e.us)?;
    }
    Ok(())
}

/// Folded stacks, one line per entry.
pub fn write_offcpu_folded(
    w: &mut impl Write,
    entries: &[OffcpuEntry],
    delimit: bool,
) -> io::Result<()> {
    for e in entries {
        let mut line: Vec<&str> = vec![&e.comm];
        match &e.user {
            StackPart::Frames(frames) => line.extend(frames.iter().rev().map(String::as_str)),
            StackPart::Missed => line.push(MISSED_USER),
            StackPart::Absent => {}
        }
        if delimit && e.has_both_stacks() {
            line.push("-");
        }
        match &e.kernel {
            StackPart::Frames(frames) => line.extend(frames.iter().rev().map(String::as_str)),
            StackPart::Missed => line.push(MISSED_KERNEL),
            StackPart::Absent => {}
        }
        writeln!(w, "{} {}", line.join(";"), e.us)?;
    }
    Ok(())
}

/// wakeuptime's layout (bcc's, without the addresses): `target:` and
/// `waker:` right-aligned in 16, the waker's kernel frames between, the
/// total, a blank line.
pub fn write_wakeup_stacks(w: &mut impl Write, entries: &[WakeupEntry]) -> io::Result<()> {
    for e in entries {
        writeln!(w, "{:>16} {}", "target:", e.target)?;
        match &e.stack {
            StackPart::Frames(frames) => frames.iter().try_for_each(|f| writeln!(w, "    {f}"))?,
            StackPart::Missed => writeln!(w, "    {MISSED_KERNEL}")?,
            StackPart::Absent => {}
        }
        writeln!(w, "{:>16} {}", "waker:", e.waker)?;
        writeln!(w, "        {}\n", e.us)?;
    }
    Ok(())
}

/// wakeuptime folded (bcc's): `waker;kernel frames outermost first;target
/// TOTAL`.
pub fn write_wakeup_folded(w: &mut impl Write, entries: &[WakeupEntry]) -> io::Result<()> {
    for e in entries {
        let mut line: Vec<&str> = vec![&e.waker];
        match &e.stack {
            StackPart::Frames(frames) => line.extend(frames.iter().rev().map(String::as_str)),
            StackPart::Missed => line.push(MISSED_KERNEL),
            StackPart::Absent => {}
        }
        line.push(&e.target);
        writeln!(w, "{} {}", line.join(";"), e.us)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::golden::text;

    fn entry() -> OffcpuEntry {
        OffcpuEntry {
            comm: "piper".to_string(),
            tid: 42,
            tgid: 42,
            us: 1234,
            kernel: StackPart::Frames(vec!["schedule".into(), "pipe_read".into()]),
            user: StackPart::Frames(vec!["read".into(), "wait_for_reply".into(), "main".into()]),
        }
    }

    #[test]
    fn stacks_and_folded_are_bccs_layout() {
        let entries = [entry()];
        assert_eq!(
            text(|w| write_offcpu_stacks(w, &entries, false)),
            "    schedule\n    pipe_read\n    read\n    wait_for_reply\n    main\n    -                piper (42)\n        1234\n\n"
        );
        assert!(
            text(|w| write_offcpu_stacks(w, &entries, true))
                .contains("pipe_read\n    --\n    read")
        );
        assert_eq!(
            text(|w| write_offcpu_folded(w, &entries, true)),
            "piper;main;wait_for_reply;read;-;pipe_read;schedule 1234\n"
        );
        let mut missed = entry();
        missed.kernel = StackPart::Missed;
        missed.user = StackPart::Absent;
        assert_eq!(
            text(|w| write_offcpu_folded(w, std::slice::from_ref(&missed), false)),
            "piper;[Missed Kernel Stack] 1234\n"
        );
    }

    #[test]
    fn wakeups_are_bccs_layout() {
        let entries = [WakeupEntry {
            waker: "piper".into(),
            target: "piper".into(),
            us: 500,
            stack: StackPart::Frames(vec!["try_to_wake_up".into(), "pipe_write".into()]),
        }];
        assert_eq!(
            text(|w| write_wakeup_stacks(w, &entries)),
            "         target: piper\n    try_to_wake_up\n    pipe_write\n          waker: piper\n        500\n\n"
        );
        assert_eq!(
            text(|w| write_wakeup_folded(w, &entries)),
            "piper;pipe_write;try_to_wake_up;piper 500\n"
        );
    }
}
