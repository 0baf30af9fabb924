//! `scry top`'s samples counted in the kernel: profile-bpf's program
//! (`sys::bpf_oncpu`, a `cpu-clock` at `-F HZ` on each CPU) counts stacks
//! per process and comm, and each refresh takes the interval's counts (the
//! map emptied as it is read) and names them (`symbol::raw_stacks`, one
//! resolver for the whole run, so the decaying window's frames stay
//! valid). Nothing is streamed.
//!
//! The decision: the kernel path is taken only where it gives what the
//! streamed one would. A count stands for its samples (`count`) and
//! weighs 1/HZ s in nanoseconds (`period`, cpu-clock's unit); without
//! `-g` only the sampled address is kept (the leaf), as a sample without
//! a call chain holds; the idle task counts when every CPU (or `-C`) is
//! watched, as perf top shows it. What the kernel cannot give (another
//! event than cpu-clock, `-c`, a DWARF call graph, `-s tid`, `cpu` or
//! `socket`: the counts are per process, not CPU) streams instead, the reason said with `-v`.

use std::collections::HashSet;
use std::io;

use scry::analysis::profile::SortKey;
use scry::analysis::sample::{FrameTable, ResolvedSample};
use scry::analysis::top::{Interval, KernelCounts};
use scry::capture::{CallGraph, CaptureOptions, Sampling};
use scry::symbol::ResolveOptions;
use scry::symbol::raw_stacks::{RawStack, RawStackResolver};
use scry::sys::bpf_oncpu::{OncpuBpf, OncpuSettings};

/// Distinct stacks the stack map holds; emptied once half are taken.
const STACK_STORAGE: u32 = 16384;

/// top's frequency when `-F` is not given (perf top's).
const DEFAULT_HZ: u64 = 4000;

/// Why top streams its samples instead of counting them in the kernel.
#[derive(Debug, thiserror::Error)]
pub(super) enum NeedsStream {
    /// An event other than cpu-clock.
    #[error("-e {0}: only cpu-clock samples are counted in the kernel")]
    OtherEvent(String),
    /// More than one event.
    #[error("several events: only cpu-clock is counted in the kernel")]
    SeveralEvents,
    /// `-c`: a period instead of a frequency.
    #[error("-c: the kernel counts samples taken at a frequency")]
    Period,
    /// `--call-graph dwarf`.
    #[error("--call-graph dwarf needs each sample's stack copy")]
    Dwarf,
    /// `-s tid`.
    #[error("-s tid: the kernel counts per process, not per thread")]
    PerThread,
    /// `-s cpu` or `-s socket` (the key's name).
    #[error("-s {0}: the kernel's counts do not keep the CPU")]
    PerCpu(String),
}

/// Why `opts` (and `-s`) need the streamed samples, or the program's
/// settings.
pub(super) fn kernel_settings(
    opts: &CaptureOptions,
    sort: &[SortKey],
) -> Result<OncpuSettings, NeedsStream> {
    if let [event] = opts.events.as_slice() {
        if event.name != "cpu-clock" {
            return Err(NeedsStream::OtherEvent(event.name.clone()));
        }
    } else {
        return Err(NeedsStream::SeveralEvents);
    }
    let frequency = match opts.sampling {
        Some(Sampling::Frequency(hz)) => hz,
        None => DEFAULT_HZ,
        Some(_) => return Err(NeedsStream::Period),
    };
    if matches!(opts.call_graph, CallGraph::Dwarf { .. }) {
        return Err(NeedsStream::Dwarf);
    }
    if sort.contains(&SortKey::Tid) {
        return Err(NeedsStream::PerThread);
    }
    if let Some(key) = sort
        .iter()
        .find(|k| matches!(k, SortKey::Cpu | SortKey::Socket))
    {
        return Err(NeedsStream::PerCpu(key.header().to_lowercase()));
    }
    let target = &opts.target;
    Ok(OncpuSettings {
        frequency,
        cpus: target.cpus.clone(),
        pid: None,
        tid: None,
        targets: !target.pids.is_empty(),
        include_idle: target.pids.is_empty(),
        user_stacks: true,
        kernel_stacks: true,
        stack_storage: STACK_STORAGE,
        hash_storage: 40960,
    })
}

/// The program loaded and its counts named interval by interval.
#[derive(Debug)]
pub(super) struct KernelTop {
    bpf: OncpuBpf,
    raw: RawStackResolver,
    /// Whole stacks (`-g`), else the leaf only.
    call_graph: bool,
    ns_each: u64,
    /// Samples per stack added since the last `take_samples`, in order.
    counts: Vec<u64>,
    /// Stack ids seen since the stack map was last emptied.
    stack_ids: HashSet<i32>,
}

impl KernelTop {
    /// Loads the program and starts counting (`pids` watched with what
    /// they fork, when given).
    pub(super) fn load(
        settings: &OncpuSettings,
        pids: &[i32],
        call_graph: bool,
        resolve: &ResolveOptions,
    ) -> io::Result<KernelTop> {
        let bpf = OncpuBpf::load(settings)?;
        for &pid in pids {
            bpf.watch(scry::sys::proc::tgid(pid).unwrap_or(pid), false)?;
        }
        Ok(KernelTop {
            bpf,
            raw: RawStackResolver::new(resolve),
            call_graph,
            ns_each: 1_000_000_000 / settings.frequency.max(1),
            counts: Vec::new(),
            stack_ids: HashSet::new(),
        })
    }

    pub(super) fn hooks(&self) -> Vec<scry::sys::bpf_engine::Hook> {
        self.bpf.hooks()
    }
}

impl KernelCounts for KernelTop {
    /// Takes the interval's counts into the resolver.
    fn take_interval(&mut self) -> io::Result<Interval> {
        let sums = self.bpf.take()?;
        let mut interval = Interval {
            dropped: self.bpf.dropped()?,
            ..Interval::default()
        };
        self.raw.see(sums.iter().map(|s| s.tgid as i32));
        for s in &sums {
            let kernel = s.kernel.as_deref().unwrap_or_default();
            let user = s.user.as_deref().unwrap_or_default();
            interval.samples += s.us;
            if !kernel.is_empty() {
                interval.kernel += s.us;
            }
            // Without -g, the sampled address alone.
            let (kernel, user) = match (self.call_graph, kernel.first()) {
                (true, _) => (kernel, user),
                (false, Some(_)) => (&kernel[..1], &[][..]),
                (false, None) => (&[][..], &user[..user.len().min(1)]),
            };
            if kernel.is_empty() && user.is_empty() {
                continue;
            }
            self.stack_ids.extend(
                [s.kernel_stack_id, s.user_stack_id]
                    .into_iter()
                    .filter(|&id| id >= 0),
            );
            self.raw.add(&RawStack {
                pid: s.tgid as i32,
                tid: s.tgid as i32,
                comm: &s.comm,
                kernel,
                user,
                weight: s.us,
                top: None,
            });
            self.counts.push(s.us);
        }
        if self.stack_ids.len() as u32 >= STACK_STORAGE / 2 {
            self.bpf.clear_stacks()?;
            self.stack_ids.clear();
        }
        Ok(interval)
    }

    /// The samples taken since the last call, each weighing its count.
    fn take_samples(&mut self) -> Vec<ResolvedSample> {
        let mut samples = self.raw.take_samples();
        for (sample, &count) in samples.iter_mut().zip(&self.counts) {
            sample.count = count;
            sample.period = count.saturating_mul(self.ns_each);
        }
        self.counts.clear();
        samples
    }

    fn frames(&self) -> &FrameTable {
        self.raw.frames()
    }
}
