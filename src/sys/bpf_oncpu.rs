//! On-CPU stacks counted in the kernel (bcc's profile; the stack counts of
//! `scry flamegraph` and `scry top`): loads `src/bpf/oncpu.bpf.c` through
//! the engine, attaches its sampling program to a `cpu-clock` at the
//! frequency asked on each CPU watched (`perf_event::cpu_clocks`), and
//! reads its counts with the stacks' addresses. Which samples count is in
//! the program's header comment.
//!
//! The counts come back as offcputime's sums (`OffcpuSum`), which bcc
//! prints alike: `us` holds the samples, `tid` the process (bcc's profile
//! keys by process), `state` 0 (running). The processes sampled for the
//! first time come from the program's small `fresh` map, emptied at each
//! read (`fresh_tgids`), not from a walk of the counts.
//!
//! The start (command to first sample) is mostly the kernel's work at
//! load, so what a run does not use is not loaded or not filled in:
//! - The fork and exec hooks of a `targets` run (a workload, a list of
//!   processes) are another object (`sys::bpf_targets`), loaded only then:
//!   their CO-RE read would make libbpf read the kernel's BTF (~6 MB).
//! - The hash maps are not preallocated (`BPF_F_NO_PREALLOC`, perf_event
//!   programs take it from 6.1; before, the object is loaded again
//!   preallocated): bcc's 40960 counts cost their memory at each start.

use std::collections::HashMap;
use std::io;

use libbpf_rs::{MapCore, MapFlags};

use super::bpf::io_error;
use super::bpf_engine::{self, Attach, GroupRules, Hook, Loaded, comm_at, u32_at, u64_at};
use super::bpf_offcputime::OffcpuSum;
use super::bpf_targets::TargetHooks;
use super::perf_event;

super::bpf::bpf_skeleton!("oncpu.skel.rs");

/// Counts taken per batched system call.
const TAKE_BATCH: u32 = 4096;

use skel::{OncpuSkel, OncpuSkelBuilder};

/// The program's settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct OncpuSettings {
    /// Samples per second on each CPU.
    pub(crate) frequency: u64,
    /// The CPUs sampled (`None`: every online CPU).
    pub(crate) cpus: Option<Vec<u32>>,
    /// Only this process (bcc's -p).
    pub(crate) pid: Option<u32>,
    /// Only this thread (bcc's -L).
    pub(crate) tid: Option<u32>,
    /// Only the processes given to `watch`, and what they fork.
    pub(crate) targets: bool,
    /// Count the idle task too (bcc's -I).
    pub(crate) include_idle: bool,
    pub(crate) user_stacks: bool,
    pub(crate) kernel_stacks: bool,
    /// Distinct stacks the stack map holds.
    pub(crate) stack_storage: u32,
    /// Distinct (process, comm, stacks) keys the counts map holds.
    pub(crate) hash_storage: u32,
}

#[derive(Debug)]
pub(crate) struct OncpuBpf {
    loaded: Loaded<OncpuSkel<'static>>,
    /// The fork and exec hooks of a `targets` run.
    targets: Option<TargetHooks>,
}

impl OncpuBpf {
    /// Loads the program and starts sampling.
    pub(crate) fn load(settings: &OncpuSettings) -> io::Result<OncpuBpf> {
        let cpus = match &settings.cpus {
            Some(cpus) => cpus.clone(),
            None => super::proc::online_cpus()?,
        };
        // Kernels before 6.1 refuse a hash map not preallocated to a
        // perf_event program: the object is loaded again preallocated.
        let mut loaded = match load_object(settings, libbpf_rs::libbpf_sys::BPF_F_NO_PREALLOC) {
            Ok(loaded) => loaded,
            Err(_) => load_object(settings, 0)?,
        };
        let targets = if settings.targets {
            Some(TargetHooks::attach(&loaded.skel.maps.targets)?)
        } else {
            None
        };
        let events = perf_event::cpu_clocks(&cpus, settings.frequency)?;
        loaded.attach_perf_events("scry_oc_sample", events)?;
        Ok(OncpuBpf { loaded, targets })
    }

    /// Where the programs are attached (the `-v` lines).
    pub(crate) fn hooks(&self) -> Vec<Hook> {
        let mut hooks = self.loaded.hooks();
        if let Some(targets) = &self.targets {
            hooks.extend(targets.hooks());
        }
        hooks
    }

    /// Count process `tgid` and what it forks from now on (a `targets`
    /// run); `from_exec`: only from its next exec on (a workload forked
    /// and waiting to exec).
    pub(crate) fn watch(&self, tgid: i32, from_exec: bool) -> io::Result<()> {
        bpf_engine::add_target(&self.loaded.skel.maps.targets, tgid, from_exec)
    }

    /// The processes (tgids) sampled for the first time since the last
    /// call (the program's `fresh`, emptied: a few system calls).
    pub(crate) fn fresh_tgids(&self) -> io::Result<Vec<u32>> {
        let mut tgids = bpf_engine::take_entries(
            &self.loaded.skel.maps.fresh,
            "reading the BPF processes sampled",
            |k, _| u32_at(k, 0),
        )?;
        tgids.sort_unstable();
        Ok(tgids)
    }

    /// Every count so far, with its stacks (see the module doc for the
    /// fields' meaning).
    pub(crate) fn read(&self) -> io::Result<Vec<OffcpuSum>> {
        let maps = &self.loaded.skel.maps;
        let entries = bpf_engine::hash_entries(&maps.counts, "reading the BPF counts")?;
        self.sums(&entries)
    }

    /// The counts since the last take, with their stacks, the counts map
    /// emptied as it is read (each key taken with its count, in batches:
    /// a sample that lands on a key being taken may be lost, none is
    /// counted twice). The stacks stay for the next take (a stack seen
    /// again keeps its id): [`OncpuBpf::clear_stacks`] empties them.
    pub(crate) fn take(&self) -> io::Result<Vec<OffcpuSum>> {
        let counts = &self.loaded.skel.maps.counts;
        let entries: Vec<(Vec<u8>, Vec<u8>)> =
            match counts.lookup_and_delete_batch(TAKE_BATCH, MapFlags::ANY, MapFlags::ANY) {
                Ok(batches) => batches.collect(),
                Err(_) => {
                    let keys: Vec<Vec<u8>> = counts.keys().collect();
                    let mut entries = Vec::with_capacity(keys.len());
                    for key in keys {
                        match counts.lookup_and_delete(&key) {
                            Ok(Some(value)) => entries.push((key, value)),
                            Ok(None) => {}
                            Err(e) if e.kind() == libbpf_rs::ErrorKind::NotFound => {}
                            Err(e) => return Err(super::bpf::io_error("taking the BPF counts", e)),
                        }
                    }
                    entries
                }
            };
        self.sums(&entries)
    }

    /// Empties the stack map (a long run of interval takes: its distinct
    /// stacks would fill it). A sample counted between the last take and
    /// this loses its stacks.
    pub(crate) fn clear_stacks(&self) -> io::Result<()> {
        bpf_engine::clear_hash(&self.loaded.skel.maps.stacks, "emptying the BPF stack map")
    }

    /// The counts map's entries with their stacks.
    fn sums(&self, entries: &[(Vec<u8>, Vec<u8>)]) -> io::Result<Vec<OffcpuSum>> {
        let maps = &self.loaded.skel.maps;
        let what = "reading the BPF stack map";
        let mut counts = Vec::with_capacity(entries.len());
        // Many counts share a stack (a kernel stack above many user ones):
        // each id is read once.
        let mut stacks: HashMap<u32, Option<Vec<u64>>> = HashMap::new();
        let mut stack = |id: u32| -> io::Result<Option<Vec<u64>>> {
            if let Some(ips) = stacks.get(&id) {
                return Ok(ips.clone());
            }
            let ips = bpf_engine::stack_ips(&maps.stacks, id as i32, what)?;
            stacks.insert(id, ips.clone());
            Ok(ips)
        };
        for (key, value) in entries {
            let (Some(tgid), Some(user_id), Some(kern_id), Some(count)) = (
                u32_at(key, 0),
                u32_at(key, 4),
                u32_at(key, 8),
                u64_at(value, 0),
            ) else {
                continue;
            };
            if count == 0 {
                continue;
            }
            counts.push(OffcpuSum {
                tid: tgid,
                tgid,
                comm: comm_at(key, 12, 16),
                us: count,
                user: stack(user_id)?,
                kernel: stack(kern_id)?,
                user_stack_id: user_id as i32,
                kernel_stack_id: kern_id as i32,
                state: 0,
            });
        }
        Ok(counts)
    }

    /// Samples not counted: the counts map was full.
    pub(crate) fn dropped(&self) -> io::Result<u64> {
        bpf_engine::dropped(&self.loaded.skel.maps.drops)
    }

    /// Stops sampling: the counts stop moving.
    pub(crate) fn detach(&mut self) {
        self.loaded.detach();
        if let Some(targets) = &mut self.targets {
            targets.detach();
        }
    }
}

/// Opens, sizes and loads the object (`hash_flags`: the hash maps'
/// `map_flags`); the sampling program is attached by the caller.
fn load_object(
    settings: &OncpuSettings,
    hash_flags: u32,
) -> io::Result<Loaded<OncpuSkel<'static>>> {
    bpf_engine::load(
        OncpuSkelBuilder::default,
        |open: &mut skel::OpenOncpuSkel<'static>| {
            let maps = &mut open.maps;
            bpf_engine::size_stack_map(&mut maps.stacks, settings.stack_storage)?;
            maps.counts
                .set_max_entries(settings.hash_storage)
                .map_err(|e| io_error("sizing the BPF counts map", e))?;
            if !settings.targets {
                // Read only when `use_targets`: one entry is the least
                // a map holds.
                maps.targets
                    .set_max_entries(1)
                    .map_err(|e| io_error("sizing the BPF targets map", e))?;
            }
            for map in [
                &mut maps.counts,
                &mut maps.seen,
                &mut maps.fresh,
                &mut maps.targets,
            ] {
                map.set_map_flags(hash_flags)
                    .map_err(|e| io_error("setting the BPF hash maps' flags", e))?;
            }
            let rodata = super::bpf::rodata(open.maps.rodata_data.as_deref_mut())?;
            rodata.filter_tgid = settings.pid.unwrap_or(0);
            rodata.filter_tid = settings.tid.unwrap_or(0);
            rodata.use_targets = settings.targets;
            rodata.include_idle = settings.include_idle;
            rodata.user_stacks = settings.user_stacks;
            rodata.kernel_stacks = settings.kernel_stacks;
            Ok(())
        },
        GroupRules::default(),
        Attach::Now,
    )
}
