//! `scry profile`'s report, in trace-cmd profile's shape: buffer statistics
//! and lost events first, then one section per task (and per CPU or per
//! matched value for pinned and global hooks), each event as
//! `Event: NAME (count) Total: T Avg: A Max: M(ts:S.US) Min: m(ts:S.US)`
//! in nanoseconds, followed for hooks with stacks by the distinct stacks
//! with their share, count, total, max and min. `--format json` carries the
//! same data. Pairs summed in the kernel (BPF) are said so among the buffer
//! statistics, with the exits they could not pair.

use crate::data::threads::ThreadNames;
use std::collections::BTreeMap;
use std::io::{self, Write};

use crate::analysis::pairs::{PairStat, Scope};
use crate::analysis::sample::{FrameId, FrameKind, FrameTable};

/// One distinct stack of an event: frames leaf first and its durations.
#[derive(Clone, Debug, serde::Serialize)]
pub(crate) struct StackStat {
    #[serde(skip)]
    pub(crate) frames: Vec<FrameId>,
    pub(crate) count: u64,
    pub(crate) total: u64,
    pub(crate) max: u64,
    pub(crate) min: u64,
}

/// A CPU's ring: records, bytes, lost.
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub(crate) struct CpuStat {
    pub(crate) cpu: u32,
    pub(crate) records: u64,
    pub(crate) bytes: u64,
    pub(crate) lost: u64,
}

/// The pairs summed in the kernel (BPF) instead of streamed: what they
/// cover and what they could not count.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub(crate) struct KernelNote {
    /// The kinds of pairs summed there ("syscalls", "page faults", ...).
    pub(crate) covered: Vec<String>,
    /// Pairs counted.
    pub(crate) pairs: u64,
    /// Exits whose enter was never seen (began before the start): not counted.
    pub(crate) exits_without_enter: u64,
    /// Pairs or starts not counted because a BPF map was full.
    pub(crate) map_full: u64,
}

/// Everything the report shows.
#[derive(Debug, Default)]
pub(crate) struct ProfileReport {
    pub(crate) cpus: Vec<CpuStat>,
    pub(crate) unmatched: u64,
    /// Blocked intervals whose wakeup was not seen, ended at the switch-in.
    pub(crate) ended_at_switch_in: u64,
    /// Pairs dropped because records were lost (never stretched).
    pub(crate) lost_dropped: u64,
    /// Section → event label → statistic (stacks already grouped).
    pub(crate) sections: BTreeMap<Scope, Vec<(String, PairStat, Vec<StackStat>)>>,
    /// Names of tasks, by tid.
    pub(crate) comms: ThreadNames,
    /// Set when some pairs were summed in the kernel.
    pub(crate) kernel: Option<KernelNote>,
}

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
        .map(|(scope, events)| (scope, events.iter().map(|(_, s, _)| s.total).sum::<u64>()))
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
