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
//! skeleton C API. Its object storage is leaked once per run
//! (`sys::bpf::open_skel`).
//! RLIMIT_MEMLOCK is never raised: BPF memory is charged to the cgroup on
//! the kernels this runs on, and where it is not, the load fails and the
//! caller falls back.

use std::io;

use libbpf_rs::skel::OpenSkel;
use libbpf_rs::{Link, MapCore, MapFlags};

use super::bpf::io_error;

super::bpf::bpf_skeleton!("profile.skel.rs");

use skel::{ProfileSkel, ProfileSkelBuilder};

/// `key.kind` in the program.
pub const KIND_SYSCALL: u32 = 0;
pub const KIND_PAGE_FAULT_USER: u32 = 1;
pub const KIND_PAGE_FAULT_KERNEL: u32 = 2;
pub const KIND_IRQ: u32 = 3;
pub const KIND_SOFTIRQ: u32 = 4;
pub const KIND_SOFTIRQ_RAISE: u32 = 5;

/// Indices of the program's per-CPU `counters`.
const COUNTER_EXIT_WITHOUT_ENTER: u32 = 0;
const COUNTER_STATS_FULL: u32 = 1;
const COUNTER_STARTS_FULL: u32 = 2;

/// Slots of the program's `stat_slots` array (its STAT_SLOTS).
const STAT_SLOTS: u32 = 65536;
/// Slots of the program's `starts` array (its START_SLOTS).
const START_SLOTS: u32 = 65536;
/// Elements per batched read of an array.
const BATCH: u32 = 4096;

/// `targets` values.
const TARGET_WATCHED: u8 = 1;
const TARGET_AT_EXEC: u8 = 2;

/// Which of the program's hooks are attached.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Covered {
    /// raw_syscalls sys_enter/sys_exit (with fork, exec and exit: always
    /// together, or the load fails).
    pub syscalls: bool,
    pub page_faults: bool,
    pub irqs: bool,
    pub softirqs: bool,
}

/// One statistic as the kernel summed it; times in ns, CLOCK_MONOTONIC.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KernelStat {
    pub tid: u32,
    pub kind: u32,
    pub nr: u64,
    pub count: u64,
    pub total: u64,
    pub max: u64,
    pub max_ts: u64,
    pub min: u64,
    pub min_ts: u64,
}

impl KernelStat {
    /// The `struct stat` (six u64: count, total, max, max_ts, min, min_ts)
    /// at byte `offset` of a map value, for the key (tid, kind, nr).
    fn at(value: &[u8], offset: usize, (tid, kind, nr): (u32, u32, u64)) -> KernelStat {
        let field = |i: usize| u64_at(value, offset + i * 8).unwrap_or(0);
        KernelStat {
            tid,
            kind,
            nr,
            count: field(0),
            total: field(1),
            max: field(2),
            max_ts: field(3),
            min: field(4),
            min_ts: field(5),
        }
    }
}

/// Everything the program counted.
#[derive(Clone, Debug, Default)]
pub struct KernelSums {
    pub stats: Vec<KernelStat>,
    /// System calls entered and not yet exited when read.
    pub open_starts: u64,
    /// Exits of watched tasks whose enter was never seen (not counted).
    pub exit_without_enter: u64,
    /// Pairs not counted because the statistics map was full.
    pub stats_full: u64,
    /// Enters not kept because the start map was full.
    pub starts_full: u64,
    /// Pairs counted.
    pub pairs: u64,
}

/// The loaded, attached program.
pub struct ProfileBpf {
    skel: ProfileSkel<'static>,
    links: Vec<Link>,
    pub covered: Covered,
}

impl std::fmt::Debug for ProfileBpf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProfileBpf")
            .field("links", &self.links.len())
            .field("covered", &self.covered)
            .finish()
    }
}

fn u64_at(bytes: &[u8], offset: usize) -> Option<u64> {
    let b = bytes.get(offset..offset + 8)?;
    Some(u64::from_ne_bytes(b.try_into().ok()?))
}

fn u32_at(bytes: &[u8], offset: usize) -> Option<u32> {
    let b = bytes.get(offset..offset + 4)?;
    Some(u32::from_ne_bytes(b.try_into().ok()?))
}

/// Every value of an array map of `len` elements, in index order: in
/// batches (a few system calls), or one lookup per element where batched
/// reads are refused (kernels before 5.6) or come back short.
fn array_values(map: &libbpf_rs::MapMut<'_>, len: u32, what: &str) -> io::Result<Vec<Vec<u8>>> {
    if let Ok(batches) = map.lookup_batch(BATCH, MapFlags::ANY, MapFlags::ANY) {
        let values: Vec<Vec<u8>> = batches.map(|(_, value)| value).collect();
        if values.len() == len as usize {
            return Ok(values);
        }
    }
    (0..len)
        .map(|index| {
            map.lookup(&index.to_ne_bytes(), MapFlags::ANY)
                .map_err(|e| io_error(what, e))
                .map(Option::unwrap_or_default)
        })
        .collect()
}

impl ProfileBpf {
    /// Loads and attaches the program. `all_tasks`: every task counts;
    /// otherwise only the processes given to `watch` (and their forks).
    /// The syscall hooks must attach; the page-fault, irq and softirq
    /// hooks are attached where their tracepoints exist (`covered`).
    pub fn load(all_tasks: bool) -> io::Result<ProfileBpf> {
        let mut open = super::bpf::open_skel(ProfileSkelBuilder::default())?;
        let rodata = super::bpf::rodata(open.maps.rodata_data.as_deref_mut())?;
        rodata.all_tasks = all_tasks;
        let skel = open
            .load()
            .map_err(|e| io_error("loading the BPF programs", e))?;
        let mut bpf = ProfileBpf {
            skel,
            links: Vec::new(),
            covered: Covered::default(),
        };
        let progs = &bpf.skel.progs;
        for prog in [
            &progs.scry_fork,
            &progs.scry_exec,
            &progs.scry_task_exit,
            &progs.scry_sys_enter,
            &progs.scry_sys_exit,
        ] {
            let link = prog
                .attach()
                .map_err(|e| io_error("attaching to raw_syscalls", e))?;
            bpf.links.push(link);
        }
        bpf.covered.syscalls = true;
        let optional = |progs: &[&libbpf_rs::ProgramMut<'_>], links: &mut Vec<Link>| {
            let attached: Result<Vec<Link>, _> = progs.iter().map(|p| p.attach()).collect();
            match attached {
                Ok(new) => {
                    links.extend(new);
                    true
                }
                Err(_) => false,
            }
        };
        bpf.covered.page_faults = optional(
            &[&progs.scry_page_fault_user, &progs.scry_page_fault_kernel],
            &mut bpf.links,
        );
        bpf.covered.irqs = optional(
            &[&progs.scry_irq_entry, &progs.scry_irq_exit],
            &mut bpf.links,
        );
        bpf.covered.softirqs = optional(
            &[
                &progs.scry_softirq_raise,
                &progs.scry_softirq_entry,
                &progs.scry_softirq_exit,
            ],
            &mut bpf.links,
        );
        Ok(bpf)
    }

    /// Watch process `tgid` and what it forks from now on; `from_exec`:
    /// only from its next exec on (a workload forked and waiting to exec).
    pub fn watch(&mut self, tgid: i32, from_exec: bool) -> io::Result<()> {
        let value = if from_exec {
            TARGET_AT_EXEC
        } else {
            TARGET_WATCHED
        };
        self.skel
            .maps
            .targets
            .update(&tgid.to_ne_bytes(), &[value], MapFlags::ANY)
            .map_err(|e| io_error("adding a process to the BPF targets", e))
    }

    /// Detaches every hook: the sums stop moving.
    pub fn detach(&mut self) {
        self.links.clear();
    }

    /// Reads the sums (after `detach`, they are final).
    pub fn read(&self) -> io::Result<KernelSums> {
        let maps = &self.skel.maps;
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
        for value in array_values(&maps.stat_slots, STAT_SLOTS, "reading the BPF statistics")? {
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
        sums.open_starts = array_values(&maps.starts, START_SLOTS, "reading the BPF starts")?
            .iter()
            .filter(|start| u64_at(start, 0).is_some_and(|ts| ts != 0))
            .count() as u64;
        sums.pairs = sums
            .stats
            .iter()
            .filter(|s| !matches!(s.kind, KIND_PAGE_FAULT_USER | KIND_PAGE_FAULT_KERNEL))
            .map(|s| s.count)
            .sum();
        Ok(sums)
    }
}
