//! `scry profile`'s report as data: the pairs engine's results (with the
//! pairs a BPF program summed in the kernel, when it ran) finished, each
//! event's stacks grouped into distinct stacks with their durations, and
//! the sections sorted by total time. `render::profile` prints it as text
//! or JSON; live runs and perf.data files (`pairs_file`) build it alike.
//!
//! The kernel's sums join the engine as summed pairs of the same labels,
//! so a system call counted by BPF and one streamed print the same way.

use std::collections::{BTreeMap, HashMap};

use super::pairs::{Builtin, PairEngine, PairStat, Scope, SummedKind};
use super::pairs_feed::PairsFeed;
use super::sample::{FrameId, FrameTable, ResolvedSample};
use crate::data::threads::ThreadNames;
use crate::sys::bpf_profile::{self, Covered, KernelSums};

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

/// The report of a finished run: `feed` after its last record, the rings'
/// statistics, the kernel's sums and what they covered (when BPF ran).
/// Returns the report, the frames its stacks point into, and the samples
/// whose fields could not be decoded (skipped).
pub(crate) fn build_report(
    feed: PairsFeed,
    cpus: Vec<CpuStat>,
    kernel: Option<(KernelSums, Covered)>,
) -> (ProfileReport, FrameTable, u64) {
    let PairsFeed {
        mut engine,
        resolver,
        comms,
        undecodable,
        ..
    } = feed;
    engine.finish();
    let kernel = kernel.map(|(sums, covered)| add_kernel_sums(&mut engine, &sums, covered));
    let crate::symbol::Resolution {
        samples: resolved,
        frames,
        ..
    } = resolver.finish();
    let mut report = ProfileReport {
        cpus,
        unmatched: engine.unmatched,
        ended_at_switch_in: engine.ended_at_switch_in,
        lost_dropped: engine.lost_dropped,
        comms,
        kernel,
        ..Default::default()
    };
    for (scope, stats) in std::mem::take(&mut engine.stats) {
        let mut events: Vec<_> = stats
            .into_iter()
            .map(|(label, stat)| {
                let stacks = group_stacks(&stat.stacks, &resolved);
                (label, stat, stacks)
            })
            .collect();
        events.sort_by(|a, b| b.1.total.cmp(&a.1.total).then(a.0.cmp(&b.0)));
        report.sections.insert(scope, events);
    }
    (report, frames, undecodable)
}

/// An event's stacks (sample index, duration) grouped by their frames,
/// the largest total first.
fn group_stacks(stacks: &[(usize, u64)], resolved: &[ResolvedSample]) -> Vec<StackStat> {
    let mut by_stack: HashMap<&[FrameId], StackStat> = HashMap::new();
    for &(seq, duration) in stacks {
        let Some(sample) = resolved.get(seq) else {
            continue;
        };
        let entry = by_stack
            .entry(&sample.stack[..])
            .or_insert_with(|| StackStat {
                frames: sample.stack.to_vec(),
                count: 0,
                total: 0,
                max: 0,
                min: u64::MAX,
            });
        entry.count += 1;
        entry.total += duration;
        entry.max = entry.max.max(duration);
        entry.min = entry.min.min(duration);
    }
    let mut out: Vec<StackStat> = by_stack.into_values().collect();
    out.sort_by(|a, b| b.total.cmp(&a.total).then(a.frames.cmp(&b.frames)));
    out
}

/// System call names by number, for the engine's labels.
pub(crate) fn syscall_names() -> HashMap<u64, String> {
    syscalls::Sysno::iter()
        .map(|s| (s.id() as u64, s.name().to_string()))
        .collect()
}

/// The pairs the kernel summed, into the engine; what the report says of them.
fn add_kernel_sums(engine: &mut PairEngine, sums: &KernelSums, covered: Covered) -> KernelNote {
    for s in &sums.stats {
        let kind = match s.kind {
            bpf_profile::KIND_SYSCALL => SummedKind::Syscall(s.nr),
            bpf_profile::KIND_PAGE_FAULT_USER => SummedKind::PageFaultUser,
            bpf_profile::KIND_PAGE_FAULT_KERNEL => SummedKind::PageFaultKernel,
            bpf_profile::KIND_IRQ => SummedKind::Irq(s.nr),
            bpf_profile::KIND_SOFTIRQ => SummedKind::Softirq(s.nr),
            bpf_profile::KIND_SOFTIRQ_RAISE => SummedKind::SoftirqRaise(s.nr),
            _ => continue,
        };
        let stat = PairStat::from_sums(s.sums);
        engine.add_summed(s.tid as i32, kind, &stat);
    }
    // As the streamed engine does: enters still open at the end.
    engine.unmatched += sums.open_starts;
    let covered = [
        (covered.syscalls, "syscalls"),
        (covered.page_faults, "page faults"),
        (covered.irqs, "irqs"),
        (covered.softirqs, "softirqs"),
    ]
    .into_iter()
    .filter(|(on, _)| *on)
    .map(|(_, name)| name.to_string())
    .collect();
    KernelNote {
        covered,
        pairs: sums.pairs,
        exits_without_enter: sums.exit_without_enter,
        map_full: sums.stats_full + sums.starts_full,
    }
}

/// The roles the kernel takes over when BPF covers them.
pub(crate) fn covered_by(covered: Covered, role: Builtin) -> bool {
    match role {
        Builtin::SysEnter | Builtin::SysExit => covered.syscalls,
        Builtin::PageFaultUser | Builtin::PageFaultKernel => covered.page_faults,
        Builtin::IrqEntry | Builtin::IrqExit => covered.irqs,
        Builtin::SoftirqRaise | Builtin::SoftirqEntry | Builtin::SoftirqExit => covered.softirqs,
        _ => false,
    }
}
