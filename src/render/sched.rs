//! `scry sched`'s outputs: the run-queue latency histogram in bcc
//! runqlat's layout (`usecs : count distribution` with a star bar), and the
//! per-switch timeline in perf sched timehist's columns (times in msec).
//! Both also as JSON.

use std::collections::BTreeMap;
use std::io::{self, Write};

use crate::analysis::sched::{Log2Hist, TimehistRow};

/// What the header lines say about the capture.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct SchedSummary {
    /// Records the kernel could not store.
    pub lost: u64,
    /// Latencies or rows dropped because records were lost.
    pub lost_dropped: u64,
}

pub fn write_runqlat(
    w: &mut impl Write,
    hist: &Log2Hist,
    summary: &SchedSummary,
) -> io::Result<()> {
    if summary.lost > 0 || summary.lost_dropped > 0 {
        writeln!(
            w,
            "WARNING: {} events lost: {} latencies they may have reached were dropped, not stretched",
            summary.lost, summary.lost_dropped
        )?;
    }
    writeln!(w, "{:>10} {:<13}: {:<8} distribution", "usecs", "", "count")?;
    let max = hist.buckets.iter().copied().max().unwrap_or(0).max(1);
    for (slot, &count) in hist.buckets.iter().enumerate() {
        let (low, high) = Log2Hist::range(slot);
        let stars = (count * 40).div_ceil(max) as usize;
        let stars = if count == 0 { 0 } else { stars.max(1) };
        writeln!(
            w,
            "{low:>10} -> {high:<10}: {count:<8} |{:<40}|",
            "*".repeat(stars)
        )?;
    }
    writeln!(w, "total: {} run-queue waits", hist.count())
}

pub fn write_runqlat_json(
    w: &mut impl Write,
    hist: &Log2Hist,
    summary: &SchedSummary,
) -> io::Result<()> {
    let buckets: Vec<_> = hist
        .buckets
        .iter()
        .enumerate()
        .map(|(slot, &count)| {
            let (low, high) = Log2Hist::range(slot);
            serde_json::json!({"low_us": low, "high_us": high, "count": count})
        })
        .collect();
    let value = serde_json::json!({
        "unit": "usecs",
        "count": hist.count(),
        "buckets": buckets,
        "lost": summary.lost,
        "lost_dropped": summary.lost_dropped,
    });
    serde_json::to_writer_pretty(&mut *w, &value).map_err(io::Error::from)?;
    writeln!(w)
}

fn msec(ns: Option<u64>) -> String {
    ns.map_or_else(|| "-".to_string(), |ns| format!("{:.3}", ns as f64 / 1e6))
}

pub fn write_timehist(
    w: &mut impl Write,
    rows: &[TimehistRow],
    comms: &BTreeMap<i32, String>,
    summary: &SchedSummary,
) -> io::Result<()> {
    if summary.lost > 0 || summary.lost_dropped > 0 {
        writeln!(
            w,
            "WARNING: {} events lost: {} rows they may have reached were dropped",
            summary.lost, summary.lost_dropped
        )?;
    }
    writeln!(
        w,
        "{:>15} {:>6}  {:<30}  {:>9}  {:>9}  {:>9}  state",
        "time", "cpu", "task name", "wait time", "sch delay", "run time"
    )?;
    writeln!(
        w,
        "{:>15} {:>6}  {:<30}  {:>9}  {:>9}  {:>9}",
        "", "", "[tid/pid]", "(msec)", "(msec)", "(msec)"
    )?;
    writeln!(
        w,
        "{} {}  {}  {}  {}  {}  -----",
        "-".repeat(15),
        "-".repeat(6),
        "-".repeat(30),
        "-".repeat(9),
        "-".repeat(9),
        "-".repeat(9)
    )?;
    for r in rows {
        let comm = comms
            .get(&r.tid)
            .or_else(|| comms.get(&r.pid))
            .map_or("<...>", String::as_str);
        let task = if r.pid == r.tid {
            format!("{comm}[{}]", r.tid)
        } else {
            format!("{comm}[{}/{}]", r.tid, r.pid)
        };
        writeln!(
            w,
            "{:>8}.{:06} [{:04}]  {task:<30}  {:>9}  {:>9}  {:>9}  {}",
            r.time / 1_000_000_000,
            (r.time % 1_000_000_000) / 1000,
            r.cpu,
            msec(r.wait),
            msec(r.delay),
            msec(r.run),
            r.state
        )?;
    }
    Ok(())
}

pub fn write_timehist_json(
    w: &mut impl Write,
    rows: &[TimehistRow],
    comms: &BTreeMap<i32, String>,
    summary: &SchedSummary,
) -> io::Result<()> {
    let rows: Vec<_> = rows
        .iter()
        .map(|r| {
            serde_json::json!({
                "time": r.time, "cpu": r.cpu, "tid": r.tid, "pid": r.pid,
                "comm": comms.get(&r.tid).or_else(|| comms.get(&r.pid)), "wait_ns": r.wait, "delay_ns": r.delay,
                "run_ns": r.run, "state": r.state.to_string(),
            })
        })
        .collect();
    let value = serde_json::json!({
        "rows": rows,
        "lost": summary.lost,
        "lost_dropped": summary.lost_dropped,
    });
    serde_json::to_writer_pretty(&mut *w, &value).map_err(io::Error::from)?;
    writeln!(w)
}
