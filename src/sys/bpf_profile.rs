//! `scry profile`'s in-kernel pairs: loads `src/bpf/profile.bpf.c` (system
//! calls, page faults, hard and soft interrupts summed per task in a BPF
//! hash map), tells it which processes to watch, and reads the sums at the
//! end. The program's rules (which tasks count, how a pair matches, where
//! the sums live) are in its header comment. It needs BTF (tp_btf hooks)
//! and BPF atomics (kernel 5.12 or later); where it does not load the
//! caller falls back to streaming.
//!
//! The skeleton libbpf-cargo generates (build.rs) is included here and
//! nowhere else (`sys::bpf::bpf_skeleton!`): its `unsafe` wraps libbpf's
//! skeleton C API. It is loaded and attached by the engine
//! (`sys::bpf_engine`): the page-fault, irq and softirq hooks are its
//! optional groups.
//! RLIMIT_MEMLOCK is never raised: BPF memory is charged to the cgroup on
//! the kernels this runs on, and where it is not, the load fails and the
//! caller falls back.

use std::io;

use libbpf_rs::{MapCore, MapFlags};

use super::bpf::io_error;
use super::bpf_engine::{self, Attach, GroupRules, Loaded, u32_at, u64_at};

super::bpf::bpf_skeleton!("profile.skel.rs");

use skel::{ProfileSkel, ProfileSkelBuilder};

/// `key.kind` in the program.
pub(crate) const KIND_SYSCALL: u32 = 0;
pub(crate) const KIND_PAGE_FAULT_USER: u32 = 1;
pub(crate) const KIND_PAGE_FAULT_KERNEL: u32 = 2;
pub(crate) const KIND_IRQ: u32 = 3;
pub(crate) const KIND_SOFTIRQ: u32 = 4;
pub(crate) const KIND_SOFTIRQ_RAISE: u32 = 5;

/// Indices of the program's per-CPU `counters`.
const COUNTER_EXIT_WITHOUT_ENTER: u32 = 0;
const COUNTER_STATS_FULL: u32 = 1;
const COUNTER_STARTS_FULL: u32 = 2;

/// Slots of the program's `stat_slots` array (its STAT_SLOTS).
const STAT_SLOTS: u32 = 65536;
/// Slots of the program's `starts` array (its START_SLOTS).
const START_SLOTS: u32 = 65536;

/// Which of the program's hooks are attached.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Covered {
    /// raw_syscalls sys_enter/sys_exit (with fork, exec and exit: always
    /// together, or the load fails).
    pub(crate) syscalls: bool,
    pub(crate) page_faults: bool,
    pub(crate) irqs: bool,
    pub(crate) softirqs: bool,
}

/// One statistic as the kernel summed it; times in ns, CLOCK_MONOTONIC.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct KernelStat {
    pub(crate) tid: u32,
    pub(crate) kind: u32,
    pub(crate) nr: u64,
    /// The program's `struct stat`, in its order: count, total, max,
    /// max_ts, min, min_ts (`analysis::pairs::PairStat` names them).
    pub(crate) sums: [u64; 6],
}

impl KernelStat {
    /// The `struct stat` at byte `offset` of a map value, for the key
    /// (tid, kind, nr).
    fn at(value: &[u8], offset: usize, (tid, kind, nr): (u32, u32, u64)) -> KernelStat {
        let sums = std::array::from_fn(|i| u64_at(value, offset + i * 8).unwrap_or(0));
        KernelStat {
            tid,
            kind,
            nr,
            sums,
        }
    }

    /// How many pairs (or page faults) the statistic counts.
    fn count(&self) -> u64 {
        self.sums[0]
    }
}

/// Everything the program counted.
#[derive(Clone, Debug, Default)]
pub(crate) struct KernelSums {
    pub(crate) stats: Vec<KernelStat>,
    /// System calls entered and not yet exited when read.
    pub(crate) open_starts: u64,
    /// Exits of watched tasks whose enter was never seen (not counted).
    pub(crate) exit_without_enter: u64,
    /// Pairs not counted because the statistics map was full.
    pub(crate) stats_full: u64,
    /// Enters not kept because the start map was full.
    pub(crate) starts_full: u64,
    /// Pairs counted.
    pub(crate) pairs: u64,
}

/// The loaded, attached program.
#[derive(Debug)]
pub(crate) struct ProfileBpf {
    loaded: Loaded<ProfileSkel<'static>>,
    pub(crate) covered: Covered,
}

/// The hooks that may be missing here, in the sets that count together.
const PAGE_FAULT_HOOKS: &[&str] = &["scry_page_fault_user", "scry_page_fault_kernel"];
const IRQ_HOOKS: &[&str] = &["scry_irq_entry", "scry_irq_exit"];
const SOFTIRQ_HOOKS: &[&str] = &[
    "scry_softirq_raise",
    "scry_softirq_entry",
    "scry_softirq_exit",
];

impl ProfileBpf {
    /// Loads and attaches the program. `all_tasks`: every task counts;
    /// otherwise only the processes given to `watch` (and their forks).
    /// The syscall hooks must attach; the page-fault, irq and softirq
    /// hooks are attached where their tracepoints exist (`covered`).
    pub(crate) fn load(all_tasks: bool) -> io::Result<ProfileBpf> {
        let optional: Vec<&str> = [PAGE_FAULT_HOOKS, IRQ_HOOKS, SOFTIRQ_HOOKS].concat();
        let loaded = bpf_engine::load(
            ProfileSkelBuilder::default,
            |open: &mut skel::OpenProfileSkel<'static>| {
                let rodata = super::bpf::rodata(open.maps.rodata_data.as_deref_mut())?;
                rodata.all_tasks = all_tasks;
                Ok(())
            },
            GroupRules::optional(&optional),
            Attach::Now,
        )?;
        let all = |hooks: &[&str]| hooks.iter().all(|h| loaded.has(h));
        let covered = Covered {
            syscalls: true,
            page_faults: all(PAGE_FAULT_HOOKS),
            irqs: all(IRQ_HOOKS),
            softirqs: all(SOFTIRQ_HOOKS),
        };
        Ok(ProfileBpf { loaded, covered })
    }

    /// Watch process `tgid` and what it forks from now on; `from_exec`:
    /// only from its next exec on (a workload forked and waiting to exec).
    pub(crate) fn watch(&mut self, tgid: i32, from_exec: bool) -> io::Result<()> {
        bpf_engine::add_target(&self.loaded.skel.maps.targets, tgid, from_exec)
    }

    /// Detaches every hook: the sums stop moving.
    pub(crate) fn detach(&mut self) {
        self.loaded.detach();
    }

    /// Reads the sums (after `detach`, they are final).
    pub(crate) fn read(&self) -> io::Result<KernelSums> {
        let maps = &self.loaded.skel.maps;
        let mut sums = KernelSums::default();
        for key in maps.stats.keys() {
            let Some(value) = maps
                .stats
                .lookup(&key, MapFlags::ANY)
                .map_err(|e| io_error("reading the BPF statistics", e))?
            else {
                continue;
            };
            let (Some(tid), Some(kind), Some(nr)) =
                (u32_at(&key, 0), u32_at(&key, 4), u64_at(&key, 8))
            else {
                continue;
            };
            sums.stats.push(KernelStat::at(&value, 0, (tid, kind, nr)));
        }
        for value in
            bpf_engine::array_values(&maps.stat_slots, STAT_SLOTS, "reading the BPF statistics")?
        {
            let Some(packed) = u64_at(&value, 0).filter(|&k| k != 0) else {
                continue;
            };
            // The slot's key, packed as profile.bpf.c's stat_of packs it.
            let key = (
                (packed >> 32) as u32,
                ((packed >> 24) & 0xff) as u32,
                packed & 0xff_ffff,
            );
            sums.stats.push(KernelStat::at(&value, 8, key));
        }
        sums.stats.sort_by_key(|s| (s.tid, s.kind, s.nr));
        let counter = |index: u32| -> io::Result<u64> {
            let per_cpu = maps
                .counters
                .lookup_percpu(&index.to_ne_bytes(), MapFlags::ANY)
                .map_err(|e| io_error("reading the BPF counters", e))?
                .unwrap_or_default();
            Ok(per_cpu.iter().filter_map(|v| u64_at(v, 0)).sum())
        };
        sums.exit_without_enter = counter(COUNTER_EXIT_WITHOUT_ENTER)?;
        sums.stats_full = counter(COUNTER_STATS_FULL)?;
        sums.starts_full = counter(COUNTER_STARTS_FULL)?;
        // A slot with a start time holds a call entered and not exited.
        sums.open_starts =
            bpf_engine::array_values(&maps.starts, START_SLOTS, "reading the BPF starts")?
                .iter()
                .filter(|start| u64_at(start, 0).is_some_and(|ts| ts != 0))
                .count() as u64;
        sums.pairs = sums
            .stats
            .iter()
            .filter(|s| !matches!(s.kind, KIND_PAGE_FAULT_USER | KIND_PAGE_FAULT_KERNEL))
            .map(KernelStat::count)
            .sum();
        Ok(sums)
    }
}
