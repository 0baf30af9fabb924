//! `scry sched`'s outputs: the run-queue latency histogram in bcc
//! runqlat's layout (`render::hist`) with its total, and the
//! per-switch timeline in perf sched timehist's columns (times in msec).
//! Both also as JSON.

use crate::data::threads::ThreadNames;
use std::io::{self, Write};

use crate::analysis::hist::{Histogram, KeyedHistogram};
use crate::analysis::sched::TimehistRow;
use crate::render::hist::{write_hist, write_keyed};

/// What the header lines say about the capture.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub(crate) struct SchedSummary {
    /// Records the kernel could not store.
    pub(crate) lost: u64,
    /// Latencies or rows dropped because records were lost.
    pub(crate) lost_dropped: u64,
}

/// The histograms (one, or one per key), then the total: the bcc layout
/// of `render::hist`, with a warning first when events were lost.
pub(crate) fn write_runqlat(
    w: &mut impl Write,
    hists: &[KeyedHistogram],
    summary: &SchedSummary,
) -> io::Result<()> {
    if summary.lost > 0 || summary.lost_dropped > 0 {
        writeln!(
            w,
            "WARNING: {} events lost: {} latencies they may have reached were dropped, not stretched",
            summary.lost, summary.lost_dropped
        )?;
    }
    let merged = merge(hists);
    if hists.iter().all(|h| h.label.is_empty()) {
        write_hist(w, &merged)?;
    } else {
        write_keyed(w, hists)?;
        writeln!(w)?;
    }
    writeln!(w, "total: {} run-queue waits", merged.total())
}

/// All the histograms added together (the unit of the first).
fn merge(hists: &[KeyedHistogram]) -> Histogram {
    let mut all = hists.first().map_or_else(
        || Histogram::log2("usecs"),
        |h| Histogram::log2(&h.hist.unit),
    );
    for keyed in hists {
        all.merge(&keyed.hist);
    }
    all
}

fn buckets_json(hist: &Histogram) -> Vec<serde_json::Value> {
    hist.buckets
        .iter()
        .enumerate()
        .map(|(slot, &count)| {
            let (low, high) = hist.range(slot);
            serde_json::json!({"low": low, "high": high, "count": count})
        })
        .collect()
}

/// One document: the unit, the total and buckets of all keys together,
/// the losses, and with keys (`-P`, `-L`) each key's own.
pub(crate) fn write_runqlat_json(
    w: &mut impl Write,
    hists: &[KeyedHistogram],
    summary: &SchedSummary,
) -> io::Result<()> {
    let merged = merge(hists);
    let mut value = serde_json::json!({
        "unit": merged.unit,
        "count": merged.total(),
        "buckets": buckets_json(&merged),
        "lost": summary.lost,
        "lost_dropped": summary.lost_dropped,
    });
    if hists.iter().any(|h| !h.label.is_empty()) {
        value["keys"] = hists
            .iter()
            .map(|h| {
                serde_json::json!({
                    "key": h.key,
                    "label": h.label,
                    "count": h.hist.total(),
                    "buckets": buckets_json(&h.hist),
                })
            })
            .collect();
    }
    serde_json::to_writer_pretty(&mut *w, &value).map_err(io::Error::from)?;
    writeln!(w)
}

fn msec(ns: Option<u64>) -> String {
    ns.map_or_else(|| "-".to_string(), |ns| format!("{:.3}", ns as f64 / 1e6))
}

pub(crate) fn write_timehist(
    w: &mut impl Write,
    rows: &[TimehistRow],
    comms: &ThreadNames,
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
            .recorded(r.tid)
            .or_else(|| comms.recorded(r.pid))
            .unwrap_or("<...>");
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

pub(crate) fn write_timehist_json(
    w: &mut impl Write,
    rows: &[TimehistRow],
    comms: &ThreadNames,
    summary: &SchedSummary,
) -> io::Result<()> {
    let rows: Vec<_> = rows
        .iter()
        .map(|r| {
            serde_json::json!({
                "time": r.time, "cpu": r.cpu, "tid": r.tid, "pid": r.pid,
                "comm": comms.recorded(r.tid).or_else(|| comms.recorded(r.pid)), "wait_ns": r.wait, "delay_ns": r.delay,
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
