//! `scry top`'s samples counted in the kernel: profile-bpf's program
//! (`sys::bpf_oncpu`, a `cpu-clock` at `-F HZ` on each CPU) counts stacks
//! per process and comm, and each refresh takes the interval's counts (the
//! map emptied as it is read) and names them (`symbol::raw_stacks`, one
//! resolver for the whole run, so the decaying window's frames stay
//! valid). Nothing is streamed. [`KernelTop`] is what [`LiveTop`] asks
//! through [`KernelCounts`].
//!
//! The decision: the reads of the program's maps (through `sys`'s
//! readers) and the naming go together here, the one `analysis` module
//! holding a loaded program, because each refresh asks for both at once.
//! A count stands for its samples (`count`) and weighs 1/HZ s in
//! nanoseconds (`period`, cpu-clock's unit); without `-g` only the
//! sampled address is kept (the leaf), as a sample without a call chain
//! holds. Whether the kernel can give what the view needs (the events,
//! `-c`, `-s`) is the command's choice, made from its options before
//! loading.
//!
//! [`LiveTop`]: super::top::LiveTop

use std::collections::HashSet;
use std::io;

use super::sample::{FrameTable, ResolvedSample};
use super::top::{Interval, KernelCounts};
use crate::symbol::ResolveOptions;
use crate::symbol::raw_stacks::{RawStack, RawStackResolver};
use crate::sys::bpf_engine::Hook;
use crate::sys::bpf_oncpu::{OncpuBpf, OncpuSettings};

/// Distinct stacks the stack map holds (`OncpuSettings::stack_storage`);
/// emptied once half are taken.
pub(crate) const STACK_STORAGE: u32 = 16384;

/// The program loaded and its counts named interval by interval.
#[derive(Debug)]
pub(crate) struct KernelTop {
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
    pub(crate) fn load(
        settings: &OncpuSettings,
        pids: &[i32],
        call_graph: bool,
        resolve: &ResolveOptions,
    ) -> io::Result<KernelTop> {
        let bpf = OncpuBpf::load(settings)?;
        for &pid in pids {
            bpf.watch(crate::sys::proc::tgid(pid).unwrap_or(pid), false)?;
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

    /// The kernel hooks the program uses (said with `-v`).
    pub(crate) fn hooks(&self) -> Vec<Hook> {
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
