//! What a capture is asked to do: the target (command, pids, tids, CPUs),
//! the sampling and call-graph modes, the ring size, and the capture the
//! scheduler analyses share (`CaptureOptions::every_switch`). `session`
//! opens them.

use std::ffi::OsString;

use crate::event::name::ResolvedEvent;
use crate::event::resolve::cpu_clock_fallback;
use crate::sys::perf_event as pe;

/// What to watch.
#[derive(Clone, Debug, Default)]
pub(crate) struct Target {
    /// `-- COMMAND ARGS`: started by us, counted from its exec.
    pub(crate) command: Vec<OsString>,
    /// `-p`: every thread of these processes.
    pub(crate) pids: Vec<i32>,
    /// `-t`: these threads only.
    pub(crate) tids: Vec<i32>,
    /// `-a`: every CPU.
    pub(crate) system_wide: bool,
    /// `-C`: these CPUs only (implies system-wide).
    pub(crate) cpus: Option<Vec<u32>>,
}

impl Target {
    /// The CPUs to open counters on: `-C`'s, each checked to be online,
    /// else every online CPU.
    pub(crate) fn online_cpus(&self) -> Result<Vec<u32>, super::CaptureError> {
        let online = crate::sys::proc::online_cpus().map_err(super::CaptureError::System)?;
        match &self.cpus {
            Some(list) => match list.iter().find(|c| !online.contains(c)) {
                Some(bad) => Err(super::CaptureError::NoSuchCpu(*bad)),
                None => Ok(list.clone()),
            },
            None => Ok(online),
        }
    }
}

/// How samples are taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Sampling {
    /// `-F HZ`.
    Frequency(u64),
    /// `-c N`.
    Period(u64),
}

/// `-g` / `--call-graph`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) enum CallGraph {
    #[default]
    None,
    /// The kernel's frame-pointer chain only (`--call-graph fp`).
    FramePointer,
    /// The frame-pointer chain plus the top `stack_size` bytes of the user
    /// stack and the user %ip/%sp/%bp (what `-g` means): the resolver
    /// unwinds the first user frames with the binaries' unwind tables and
    /// joins the chain where the two meet (`symbol::stack_join`), so the
    /// caller of a frameless function is not lost.
    FramePointerStack { stack_size: u32 },
    /// Copy this many bytes of user stack, plus user registers.
    Dwarf { stack_size: u32 },
}

/// The user stack `-g` copies with each sample. Measured with
/// `--call-graph fp+stack,SIZE` (bench/unwind.sh's last table): the
/// smallest copy that repaired every sample was 8 bytes for nofp and
/// libcloop (frameless code that touches no stack), 32 for rust_work and
/// cpp_work, 64 for pingpong blocked in glibc's cancellable read/write;
/// twice that keeps a margin at ~280 bytes a sample (fp: ~100, 512: ~660,
/// dwarf: ~8450). A chain a copy cannot repair is kept and counted.
pub(crate) const DEFAULT_FP_STACK_SIZE: u32 = 128;

/// Everything a capture needs to know. Defaults follow perf record.
#[derive(Clone, Debug)]
pub(crate) struct CaptureOptions {
    pub(crate) events: Vec<ResolvedEvent>,
    pub(crate) target: Target,
    /// `None`: perf's defaults (4000 Hz for counters, every event for tracepoints and uprobes).
    pub(crate) sampling: Option<Sampling>,
    pub(crate) call_graph: CallGraph,
    /// Data pages per ring (a power of two). Default 1024 (4 MiB) per CPU:
    /// enough that a tracepoint storm of ~2M events/s is not lost.
    pub(crate) mmap_pages: usize,
    /// Tracepoint filter per event index (`--filter`).
    pub(crate) filters: Vec<(usize, String)>,
    /// Event indices that take no call chain even with `call_graph` set
    /// (stacks cost; `profile` wants them on sched_switch only).
    pub(crate) no_callchain: Vec<usize>,
    /// Ask for PERF_RECORD_SWITCH(_CPU_WIDE) records on every context
    /// switch (perf record --switch-events). Default off. `profile` and
    /// `offcpu` take switch-ins from them: the sched_switch tracepoint
    /// alone misses some idle -> task switches on 6.18.
    pub(crate) context_switch: bool,
    /// `-k`: stamp every event with this clock (`use_clockid`) instead of
    /// the kernel's perf clock, and write the CLOCKID and CLOCK_DATA
    /// features (perf inject --jit wants CLOCK_MONOTONIC, the jitdump's).
    pub(crate) clockid: Option<i32>,
}

impl CaptureOptions {
    /// The capture of the scheduler analyses (`offcpu`, `sched`,
    /// `profile`): every one of `events` (tracepoints, period 1) on every
    /// CPU with context-switch records, around `command`. A task's
    /// switch-in shows only in the previous task's event and a wakeup fires
    /// in the waker's context, so the whole system is watched and the
    /// watched tasks are picked out afterwards.
    pub(crate) fn every_switch(
        events: Vec<ResolvedEvent>,
        command: Vec<OsString>,
        call_graph: CallGraph,
    ) -> CaptureOptions {
        let cpus = crate::sys::proc::online_cpus().map_or(1, |c| c.len());
        CaptureOptions {
            mmap_pages: default_mmap_pages(&events, cpus),
            events,
            target: Target {
                command,
                system_wide: true,
                ..Default::default()
            },
            sampling: Some(Sampling::Period(1)),
            call_graph,
            filters: Vec::new(),
            no_callchain: Vec::new(),
            context_switch: true,
            clockid: None,
        }
    }
}

pub(crate) const DEFAULT_FREQ: u64 = 4000;

/// The comm of a forked workload until its exec (perf calls it `perf-exec`).
pub(crate) const WORKLOAD_PRE_EXEC_COMM: &str = "scry-exec";
pub(crate) const DEFAULT_MMAP_PAGES: usize = 1024;

/// The default ring size per CPU, in pages. 4 MiB for sampling; 16 MiB when
/// tracepoints are recorded, because a syscall storm (2M events/s, 100+
/// bytes each) overflows 4 MiB whenever the reader is kept off the CPU for
/// ~20 ms (measured: 0.8% lost at 4 MiB, none at 16 MiB). Capped at 512 MiB
/// over all CPUs so big machines do not pin gigabytes.
pub(crate) fn default_mmap_pages(events: &[ResolvedEvent], cpus: usize) -> usize {
    let wanted = if events.iter().any(ResolvedEvent::is_tracepoint) {
        4 * DEFAULT_MMAP_PAGES
    } else {
        DEFAULT_MMAP_PAGES
    };
    let page = crate::sys::ring::page_size().max(1);
    let cap = ((512usize << 20) / page / cpus.max(1)).max(1);
    let capped = wanted.min(cap);
    // Round down to a power of two.
    1usize << (usize::BITS - 1 - capped.leading_zeros())
}

/// perf record's (and top's) answer to `cycles` on a machine without a
/// hardware PMU: every `cycles` event, whatever its modifiers, becomes
/// `cpu-clock` named as perf names it (`event::resolve::cpu_clock_fallback`).
/// Probes the PMU only when some event is `cycles`.
pub(crate) fn fall_back_from_cycles(events: &mut [ResolvedEvent]) {
    if !events.iter().any(|e| cpu_clock_fallback(e).is_some()) {
        return;
    }
    let mut cycles = ResolvedEvent::plain("cycles", pe::PERF_TYPE_HARDWARE, 0);
    cycles.modifiers.exclude_kernel = true;
    if super::counting::probe(&cycles).is_ok() {
        return;
    }
    for event in events {
        if let Some(fallback) = cpu_clock_fallback(event) {
            *event = fallback;
        }
    }
}
