//! offcputime's, offwaketime's (`write_offwake_*`) and wakeuptime's
//! (`write_wakeup_*`) text as bcc prints it. offcputime's: per entry the kernel frames
//! (innermost first), with `-d` a `--` line, the user frames, then `-`
//! padded to 16 with `comm (tid)` and the total in µs on the next line,
//! a blank line after; or folded (`-f`): `comm;user frames outermost
//! first;[-;]kernel frames outermost first TOTAL`, one line per entry;
//! or JSON (`--json`, `write_offcpu_json`): the entries with their split
//! per blocked state, and the totals per state.

use std::io::{self, Write};

use serde_json::{Value, json};

use crate::analysis::offcputime::{
    OffcpuEntry, OffwakeEntry, StackPart, TaskSide, WakeupEntry, state_name, state_totals,
};

const MISSED_KERNEL: &str = "[Missed Kernel Stack]";
const MISSED_USER: &str = "[Missed User Stack]";

/// The multi-line layout; `delimit`: a `--` between kernel and user frames.
pub(crate) fn write_offcpu_stacks(
    w: &mut impl Write,
    entries: &[OffcpuEntry],
    delimit: bool,
) -> io::Result<()> {
    for e in entries {
        write_part(w, &e.kernel, MISSED_KERNEL, false)?;
        if delimit && e.has_both_stacks() {
            writeln!(w, "    --")?;
        }
        write_part(w, &e.user, MISSED_USER, false)?;
        writeln!(w, "    {:<16} {} ({})", "-", e.comm, e.tid)?;
        writeln!(w, "        {}\n", e.us)?;
    }
    Ok(())
}

/// Folded stacks, one line per entry.
pub(crate) fn write_offcpu_folded(
    w: &mut impl Write,
    entries: &[OffcpuEntry],
    delimit: bool,
) -> io::Result<()> {
    for e in entries {
        let mut line: Vec<&str> = vec![&e.comm];
        fold_part(&mut line, &e.user, MISSED_USER, true);
        if delimit && e.has_both_stacks() {
            line.push("-");
        }
        fold_part(&mut line, &e.kernel, MISSED_KERNEL, true);
        writeln!(w, "{} {}", line.join(";"), e.us)?;
    }
    Ok(())
}

/// A stack half in JSON: its frames innermost first, `"missed"`, or null.
pub(crate) fn stack_json(part: &StackPart) -> Value {
    match part {
        StackPart::Frames(frames) => json!(frames),
        StackPart::Missed => json!("missed"),
        StackPart::Absent => Value::Null,
    }
}

/// Per state (`__state` at the switch-out): its value, name and µs.
fn states_json(states: &std::collections::BTreeMap<u32, u64>) -> Value {
    states
        .iter()
        .map(|(&state, &us)| json!({"state": state, "name": state_name(state), "us": us}))
        .collect()
}

/// One JSON document: `total_us`, `states` (the time per state at the
/// switch-out) and `entries` (largest first: comm, tid, tgid, us, kernel
/// and user frames innermost first, states).
pub(crate) fn write_offcpu_json(w: &mut impl Write, entries: &[OffcpuEntry]) -> io::Result<()> {
    let rows: Vec<Value> = entries
        .iter()
        .rev()
        .map(|e| {
            json!({
                "comm": e.comm,
                "tid": e.tid,
                "tgid": e.tgid,
                "us": e.us,
                "kernel": stack_json(&e.kernel),
                "user": stack_json(&e.user),
                "states": states_json(&e.states),
            })
        })
        .collect();
    let doc = json!({
        "total_us": entries.iter().map(|e| e.us).sum::<u64>(),
        "states": states_json(&state_totals(entries)),
        "entries": rows,
    });
    serde_json::to_writer_pretty(&mut *w, &doc).map_err(io::Error::other)?;
    writeln!(w)
}

/// A stack part's lines (`    FRAME`), innermost first or (`outer_first`)
/// outermost first; `missed` the line for a stack the kernel missed.
fn write_part(
    w: &mut impl Write,
    part: &StackPart,
    missed: &str,
    outer_first: bool,
) -> io::Result<()> {
    match part {
        StackPart::Frames(frames) if outer_first => {
            frames.iter().rev().try_for_each(|f| writeln!(w, "    {f}"))
        }
        StackPart::Frames(frames) => frames.iter().try_for_each(|f| writeln!(w, "    {f}")),
        StackPart::Missed => writeln!(w, "    {missed}"),
        StackPart::Absent => Ok(()),
    }
}

/// Both halves taken (where `-d` puts its `-`).
fn both(side: &TaskSide) -> bool {
    matches!(side.kernel, StackPart::Frames(_)) && matches!(side.user, StackPart::Frames(_))
}

/// offwaketime's layout (bcc's): `waker:` with its name and tid, its user
/// then kernel frames outermost first (a chain down to the wakeup), a
/// `--  --` line, the blocked task's kernel then user frames innermost
/// first, `target:` with its name and tid, the total, a blank line.
pub(crate) fn write_offwake_stacks(
    w: &mut impl Write,
    entries: &[OffwakeEntry],
    delimit: bool,
) -> io::Result<()> {
    for e in entries {
        writeln!(w, "    {:<16} {} {}", "waker:", e.waker.comm, e.waker.tid)?;
        write_part(w, &e.waker.user, MISSED_USER, true)?;
        if delimit && both(&e.waker) {
            writeln!(w, "    -")?;
        }
        write_part(w, &e.waker.kernel, MISSED_KERNEL, true)?;
        writeln!(w, "    {:<16} --", "--")?;
        write_part(w, &e.target.kernel, MISSED_KERNEL, false)?;
        if delimit && both(&e.target) {
            writeln!(w, "    -")?;
        }
        write_part(w, &e.target.user, MISSED_USER, false)?;
        writeln!(
            w,
            "    {:<16} {} {}",
            "target:", e.target.comm, e.target.tid
        )?;
        writeln!(w, "        {}\n", e.us)?;
    }
    Ok(())
}

/// A stack part's names for a folded line.
fn fold_part<'a>(line: &mut Vec<&'a str>, part: &'a StackPart, missed: &'a str, outer_first: bool) {
    match part {
        StackPart::Frames(frames) if outer_first => {
            line.extend(frames.iter().rev().map(String::as_str))
        }
        StackPart::Frames(frames) => line.extend(frames.iter().map(String::as_str)),
        StackPart::Missed => line.push(missed),
        StackPart::Absent => {}
    }
}

/// One side of an offwaketime entry in JSON.
fn side_json(side: &TaskSide) -> Value {
    json!({
        "comm": side.comm,
        "tid": side.tid,
        "kernel": stack_json(&side.kernel),
        "user": stack_json(&side.user),
    })
}

/// offwaketime as one JSON document: `total_us` and `entries` (largest
/// first: us, target and waker, each with comm, tid, kernel and user
/// frames innermost first; a waker never seen has an empty comm).
pub(crate) fn write_offwake_json(w: &mut impl Write, entries: &[OffwakeEntry]) -> io::Result<()> {
    let rows: Vec<Value> = entries
        .iter()
        .rev()
        .map(|e| json!({"us": e.us, "target": side_json(&e.target), "waker": side_json(&e.waker)}))
        .collect();
    let total: u64 = entries.iter().map(|e| e.us).sum();
    let doc = json!({"total_us": total, "entries": rows});
    serde_json::to_writer_pretty(&mut *w, &doc).map_err(io::Error::other)?;
    writeln!(w)
}

/// offwaketime folded (bcc's): `target;its user then kernel frames
/// outermost first;--;the waker's kernel then user frames innermost
/// first;waker TOTAL` (`-d`: a `-` between each task's halves).
pub(crate) fn write_offwake_folded(
    w: &mut impl Write,
    entries: &[OffwakeEntry],
    delimit: bool,
) -> io::Result<()> {
    for e in entries {
        let mut line: Vec<&str> = vec![&e.target.comm];
        fold_part(&mut line, &e.target.user, MISSED_USER, true);
        if delimit && both(&e.target) {
            line.push("-");
        }
        fold_part(&mut line, &e.target.kernel, MISSED_KERNEL, true);
        line.push("--");
        fold_part(&mut line, &e.waker.kernel, MISSED_KERNEL, false);
        if delimit && both(&e.waker) {
            line.push("-");
        }
        fold_part(&mut line, &e.waker.user, MISSED_USER, false);
        line.push(&e.waker.comm);
        writeln!(w, "{} {}", line.join(";"), e.us)?;
    }
    Ok(())
}

/// wakeuptime's layout (bcc's, without the addresses): `target:` and
/// `waker:` right-aligned in 16, the waker's kernel frames between, the
/// total, a blank line.
pub(crate) fn write_wakeup_stacks(w: &mut impl Write, entries: &[WakeupEntry]) -> io::Result<()> {
    for e in entries {
        writeln!(w, "{:>16} {}", "target:", e.target)?;
        write_part(w, &e.stack, MISSED_KERNEL, false)?;
        writeln!(w, "{:>16} {}", "waker:", e.waker)?;
        writeln!(w, "        {}\n", e.us)?;
    }
    Ok(())
}

/// wakeuptime folded (bcc's): `waker;kernel frames outermost first;target
/// TOTAL`.
pub(crate) fn write_wakeup_folded(w: &mut impl Write, entries: &[WakeupEntry]) -> io::Result<()> {
    for e in entries {
        let mut line: Vec<&str> = vec![&e.waker];
        fold_part(&mut line, &e.stack, MISSED_KERNEL, true);
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
            states: std::collections::BTreeMap::from([(1, 1000), (0, 234)]),
        }
    }

    #[test]
    fn json_splits_the_time_per_state() {
        let mut missed = entry();
        missed.user = StackPart::Missed;
        missed.kernel = StackPart::Absent;
        missed.us = 10;
        missed.states = std::collections::BTreeMap::from([(2, 10)]);
        let entries = [missed, entry()];
        let doc: Value = serde_json::from_str(&text(|w| write_offcpu_json(w, &entries))).unwrap();
        assert_eq!(doc["total_us"], 1244);
        assert_eq!(
            doc["states"],
            json!([
                {"state": 0, "name": "running", "us": 234},
                {"state": 1, "name": "interruptible", "us": 1000},
                {"state": 2, "name": "uninterruptible", "us": 10},
            ])
        );
        assert_eq!(doc["entries"][0]["us"], 1234);
        assert_eq!(
            doc["entries"][0]["kernel"],
            json!(["schedule", "pipe_read"])
        );
        assert_eq!(doc["entries"][1]["user"], "missed");
        assert_eq!(doc["entries"][1]["kernel"], Value::Null);
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
    fn offwake_is_bccs_layout() {
        let side = |comm: &str, tid, kernel: &[&str], user: &[&str]| TaskSide {
            comm: comm.into(),
            tid,
            kernel: StackPart::Frames(kernel.iter().map(|f| f.to_string()).collect()),
            user: StackPart::Frames(user.iter().map(|f| f.to_string()).collect()),
        };
        let entries = [OffwakeEntry {
            target: side(
                "piper",
                7,
                &["schedule", "pipe_read"],
                &["wait_for_reply", "main"],
            ),
            waker: side(
                "answerer",
                8,
                &["try_to_wake_up", "pipe_write"],
                &["send_reply", "answerer"],
            ),
            us: 500,
        }];
        assert_eq!(
            text(|w| write_offwake_stacks(w, &entries, true)),
            "    waker:           answerer 8\n    answerer\n    send_reply\n    -\n    pipe_write\n    \
             try_to_wake_up\n    --               --\n    schedule\n    pipe_read\n    -\n    \
             wait_for_reply\n    main\n    target:          piper 7\n        500\n\n"
        );
        assert_eq!(
            text(|w| write_offwake_folded(w, &entries, false)),
            "piper;main;wait_for_reply;pipe_read;schedule;--;try_to_wake_up;pipe_write;send_reply;\
             answerer;answerer 500\n"
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
