//! `scry profile`'s report, in trace-cmd profile's shape: buffer statistics
//! and lost events first, then one section per task (and per CPU or per
//! matched value for pinned and global hooks), each event as
//! `Event: NAME (count) Total: T Avg: A Max: M(ts:S.US) Min: m(ts:S.US)`
//! in nanoseconds, followed for hooks with stacks by the distinct stacks
//! with their share, count, total, max and min. `--format json` carries the
//! same data. Pairs summed in the kernel (BPF) are said so among the buffer
//! statistics, with the exits they could not pair.

use crate::data::threads::ThreadNames;
use std::io::{self, Write};

use crate::analysis::pairs::Scope;
use crate::analysis::pairs_report::ProfileReport;
use crate::analysis::sample::{FrameKind, FrameTable};

fn ts(ns: u64) -> String {
    format!("{}.{:06}", ns / 1_000_000_000, (ns % 1_000_000_000) / 1000)
}

fn section_title(scope: &Scope, comms: &ThreadNames) -> String {
    match scope {
        Scope::Task(tid) => format!("task: {}-{tid}", comms.recorded(*tid).unwrap_or("<...>")),
        Scope::Cpu(cpu) => format!("CPU: {cpu}"),
        Scope::Global(value) => format!("Global: {value:#x}"),
    }
}

/// Sections ordered by their total time, largest first.
fn ordered(report: &ProfileReport) -> Vec<&Scope> {
    let mut scopes: Vec<(&Scope, u64)> = report
        .sections
        .iter()
        .map(|(scope, events)| {
            let total = events
                .iter()
                .fold(0u64, |sum, (_, s, _)| sum.saturating_add(s.total));
            (scope, total)
        })
        .collect();
    scopes.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    scopes.into_iter().map(|(s, _)| s).collect()
}

pub(crate) fn write_text(
    w: &mut impl Write,
    report: &ProfileReport,
    frames: &FrameTable,
) -> io::Result<()> {
    let lost: u64 = report.cpus.iter().map(|c| c.lost).sum();
    for cpu in &report.cpus {
        writeln!(
            w,
            "CPU {}: {} records, {} bytes, {} lost",
            cpu.cpu, cpu.records, cpu.bytes, cpu.lost
        )?;
    }
    if let Some(k) = &report.kernel {
        writeln!(
            w,
            "{} aggregated in kernel (BPF): {} pairs; {} exits without a seen enter not counted",
            k.covered.join(", "),
            k.pairs,
            k.exits_without_enter
        )?;
        if k.map_full > 0 {
            writeln!(
                w,
                "WARNING: {} in-kernel pairs were not counted: a BPF map was full",
                k.map_full
            )?;
        }
    }
    if lost > 0 || report.lost_dropped > 0 {
        writeln!(
            w,
            "WARNING: {lost} events were lost: {} pairs they may have reached were dropped, not stretched",
            report.lost_dropped
        )?;
    }
    if report.ended_at_switch_in > 0 {
        writeln!(
            w,
            "{} blocked intervals had no visible wakeup: they end at the task's switch-in",
            report.ended_at_switch_in
        )?;
    }
    if report.unmatched > 0 {
        writeln!(
            w,
            "{} starts had no end before the recording stopped (dropped)",
            report.unmatched
        )?;
    }
    writeln!(w)?;
    for scope in ordered(report) {
        writeln!(w, "{}", section_title(scope, &report.comms))?;
        let Some(events) = report.sections.get(scope) else {
            continue;
        };
        for (label, s, stacks) in events {
            writeln!(
                w,
                "  Event: {label} ({}) Total: {} Avg: {} Max: {}(ts:{}) Min: {}(ts:{})",
                s.count,
                s.total,
                s.avg(),
                s.max,
                ts(s.max_ts),
                s.min,
                ts(s.min_ts)
            )?;
            for stack in stacks {
                let share = if s.total > 0 {
                    stack.total as f64 * 100.0 / s.total as f64
                } else {
                    0.0
                };
                writeln!(
                    w,
                    "       {share:.2}% ({}) Total: {} Max: {} Min: {}",
                    stack.count, stack.total, stack.max, stack.min
                )?;
                for frame in &stack.frames {
                    let f = frames.get(*frame);
                    let marker = match f.kind {
                        FrameKind::Kernel => "[k]",
                        FrameKind::User => "[.]",
                    };
                    writeln!(
                        w,
                        "         {marker} {}",
                        f.sym.as_deref().unwrap_or("[unknown]")
                    )?;
                }
            }
        }
        writeln!(w)?;
    }
    Ok(())
}

pub(crate) fn write_json(
    w: &mut impl Write,
    report: &ProfileReport,
    frames: &FrameTable,
) -> io::Result<()> {
    use serde_json::json;
    let sections: Vec<_> = ordered(report)
        .into_iter()
        .map(|scope| {
            let (kind, id) = match scope {
                Scope::Task(tid) => ("task", *tid as i64),
                Scope::Cpu(cpu) => ("cpu", i64::from(*cpu)),
                Scope::Global(v) => ("global", *v as i64),
            };
            let events: Vec<_> = report.sections.get(scope).into_iter().flatten().map(|(label, s, stacks)| {
                let stacks: Vec<_> = stacks
                    .iter()
                    .map(|st| {
                        let names: Vec<String> = st
                            .frames
                            .iter()
                            .map(|f| frames.get(*f).sym.as_deref().unwrap_or("[unknown]").to_string())
                            .collect();
                        json!({"frames": names, "count": st.count, "total_ns": st.total, "max_ns": st.max, "min_ns": st.min})
                    })
                    .collect();
                json!({"event": label, "count": s.count, "total_ns": s.total, "avg_ns": s.avg(),
                       "max_ns": s.max, "max_ts": s.max_ts, "min_ns": s.min, "min_ts": s.min_ts, "stacks": stacks})
            }).collect();
            let comm = match scope {
                Scope::Task(tid) => report.comms.recorded(*tid),
                _ => None,
            };
            json!({"kind": kind, "id": id, "comm": comm, "events": events})
        })
        .collect();
    let value = json!({"cpus": report.cpus, "unmatched": report.unmatched,
                       "ended_at_switch_in": report.ended_at_switch_in,
                       "lost_dropped": report.lost_dropped, "kernel": report.kernel,
                       "sections": sections});
    serde_json::to_writer_pretty(&mut *w, &value).map_err(io::Error::from)?;
    writeln!(w)
}
