//! futexctn's text as libbpf-tools prints it: per thread, lock and stack,
//! two blank lines, `comm[tid] lock 0xADDR contended N times, AVG avg
//! usecs [max: MAX usecs, min MIN usecs]`, the user frames between `-`
//! lines, the histogram of the waits; then (scry's) one line per lock:
//! its waits over every thread and stack, the threads and the functions
//! that took it. Or one JSON document (`--json`): `waits` and `locks`.

use std::io::{self, Write};

use serde_json::{Value, json};

use super::hist::{buckets_json, write_hist};
use super::offcputime::stack_json;
use crate::analysis::futexctn::{FutexEntry, LockSummary};
use crate::analysis::offcputime::StackPart;

/// The per-wait blocks, then the per-lock table.
pub(crate) fn write_futex_text(
    w: &mut impl Write,
    entries: &[FutexEntry],
    locks: &[LockSummary],
) -> io::Result<()> {
    for e in entries {
        let avg = e.total_ns / e.contended.max(1) / 1000;
        writeln!(
            w,
            "\n\n{}[{}] lock {:#x} contended {} times, {} avg usecs [max: {} usecs, min {} usecs]",
            e.comm,
            e.tid,
            e.uaddr,
            e.contended,
            avg,
            e.max_ns / 1000,
            e.min_ns / 1000
        )?;
        writeln!(w, "    -")?;
        match &e.stack {
            StackPart::Frames(frames) => frames.iter().try_for_each(|f| writeln!(w, "    {f}"))?,
            StackPart::Missed => writeln!(w, "    [Missed User Stack]")?,
            StackPart::Absent => {}
        }
        writeln!(w, "    -")?;
        write_hist(w, &e.hist)?;
    }
    writeln!(
        w,
        "\n{:<18} {:>7} {:>9} {:>11} {:>9} {:>9} {:>7}  CALLERS",
        "LOCK", "PID", "CONTENDED", "TOTAL(us)", "MAX(us)", "AVG(us)", "THREADS"
    )?;
    for l in locks {
        let callers: Vec<&str> = l.callers.iter().map(String::as_str).collect();
        writeln!(
            w,
            "{:<18} {:>7} {:>9} {:>11} {:>9} {:>9} {:>7}  {}",
            format!("{:#x}", l.uaddr),
            l.tgid,
            l.contended,
            l.total_ns / 1000,
            l.max_ns / 1000,
            l.total_ns / l.contended.max(1) / 1000,
            l.threads.len(),
            callers.join(",")
        )?;
    }
    Ok(())
}

/// One JSON document: `waits` (per thread, lock and stack, largest
/// first) and `locks` (largest first), times in ns, histograms in µs.
pub(crate) fn write_futex_json(
    w: &mut impl Write,
    entries: &[FutexEntry],
    locks: &[LockSummary],
) -> io::Result<()> {
    let waits: Vec<Value> = entries
        .iter()
        .rev()
        .map(|e| {
            json!({
                "comm": e.comm, "tid": e.tid, "pid": e.tgid,
                "lock": format!("{:#x}", e.uaddr),
                "contended": e.contended, "total_ns": e.total_ns,
                "max_ns": e.max_ns, "min_ns": e.min_ns,
                "caller": e.caller(),
                "stack": stack_json(&e.stack),
                "usecs": buckets_json(&e.hist),
            })
        })
        .collect();
    let locks: Vec<Value> = locks
        .iter()
        .map(|l| {
            let threads: Vec<Value> = l
                .threads
                .iter()
                .map(|(tid, (comm, ns))| json!({"tid": tid, "comm": comm, "total_ns": ns}))
                .collect();
            json!({
                "lock": format!("{:#x}", l.uaddr), "pid": l.tgid,
                "contended": l.contended, "total_ns": l.total_ns, "max_ns": l.max_ns,
                "threads": threads, "callers": l.callers,
                "usecs": buckets_json(&l.hist),
            })
        })
        .collect();
    serde_json::to_writer_pretty(&mut *w, &json!({"waits": waits, "locks": locks}))
        .map_err(io::Error::other)?;
    writeln!(w)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::futexctn::by_lock;
    use crate::analysis::hist::{Histogram, Scale};
    use crate::render::golden::text;

    #[test]
    fn blocks_are_libbpf_tools_layout_and_locks_follow() {
        let entries = [FutexEntry {
            comm: "locker1".into(),
            tid: 12,
            tgid: 10,
            uaddr: 0x5000,
            contended: 4,
            total_ns: 8_000_000,
            max_ns: 3_000_000,
            min_ns: 1_000_000,
            hist: Histogram::from_slots(Scale::Log2, "usecs", &[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4]),
            stack: StackPart::Frames(vec!["__lll_lock_wait".into(), "take_lock".into()]),
        }];
        let locks = by_lock(&entries);
        let out = text(|w| write_futex_text(w, &entries, &locks));
        assert!(
            out.starts_with(
                "\n\nlocker1[12] lock 0x5000 contended 4 times, 2000 avg usecs [max: 3000 usecs, \
                 min 1000 usecs]\n    -\n    __lll_lock_wait\n    take_lock\n    -\n     usecs"
            ),
            "{out}"
        );
        assert!(
            out.ends_with(
                "0x5000                  10         4        8000      3000      2000       1  \
                 take_lock\n"
            ),
            "{out}"
        );
        let doc: Value =
            serde_json::from_str(&text(|w| write_futex_json(w, &entries, &locks))).unwrap();
        assert_eq!(doc["waits"][0]["caller"], "take_lock");
        assert_eq!(doc["locks"][0]["threads"][0]["comm"], "locker1");
        assert_eq!(doc["locks"][0]["total_ns"], 8_000_000);
    }
}
