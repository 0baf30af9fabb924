//! `scry runqlen`'s kernel side: loads `src/bpf/runqlen.bpf.c` through
//! the engine and attaches it to a software clock (`cpu-clock`, at the
//! frequency asked) on every online CPU, then reads its linear
//! histograms (one, or one per CPU) and zeroes them for the next
//! interval (a sample landing between the read and the zeroing of its
//! CPU's histogram is lost: an array map has no lookup-and-delete). What is counted (the CPU's whole run queue, not bcc's
//! cfs_rq) is in the program's header comment.

use std::io;

use libbpf_rs::{MapCore, MapFlags};

use super::bpf::io_error;
use super::bpf_engine::{self, Attach, GroupRules, Hook, Loaded, u64_at};
use super::perf_event;

super::bpf::bpf_skeleton!("runqlen.skel.rs");

use skel::{RunqlenSkel, RunqlenSkelBuilder};

/// Slots per histogram: the program's MAX_SLOTS (the last holds longer
/// queues too).
pub(crate) const MAX_SLOTS: usize = 32;
/// CPUs the program has histograms for (its MAX_CPUS).
const MAX_CPUS: u32 = 512;

/// The program's settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RunqlenSettings {
    /// A histogram per CPU.
    pub(crate) per_cpu: bool,
    /// Samples per second on each CPU.
    pub(crate) frequency: u64,
}

#[derive(Debug)]
pub(crate) struct RunqlenBpf {
    loaded: Loaded<RunqlenSkel<'static>>,
    cpus: Vec<u32>,
}

impl RunqlenBpf {
    pub(crate) fn load(settings: RunqlenSettings) -> io::Result<RunqlenBpf> {
        let cpus = super::proc::online_cpus()?;
        if let Some(&cpu) = cpus.iter().find(|&&c| c >= MAX_CPUS) {
            return Err(io::Error::other(format!(
                "CPU {cpu}: runqlen counts CPUs below {MAX_CPUS} only"
            )));
        }
        let mut loaded = bpf_engine::load(
            RunqlenSkelBuilder::default,
            |open: &mut skel::OpenRunqlenSkel<'static>| {
                let rodata = super::bpf::rodata(open.maps.rodata_data.as_deref_mut())?;
                rodata.per_cpu = settings.per_cpu;
                Ok(())
            },
            GroupRules::default(),
            Attach::Later,
        )?;
        let events = perf_event::cpu_clocks(&cpus, settings.frequency)?;
        loaded.attach_perf_events("scry_rl_sample", events)?;
        Ok(RunqlenBpf { loaded, cpus })
    }

    pub(crate) fn hooks(&self) -> Vec<Hook> {
        self.loaded.hooks()
    }

    /// (CPU, slots) since the last read, which zeroes them: every online
    /// CPU with `per_cpu`, else one entry (CPU 0) for all.
    pub(crate) fn read(&self, per_cpu: bool) -> io::Result<Vec<(u32, Vec<u64>)>> {
        let map = &self.loaded.skel.maps.hists;
        let cpus: &[u32] = if per_cpu { &self.cpus } else { &[0] };
        let zero = vec![0u8; MAX_SLOTS * 8];
        let mut out = Vec::with_capacity(cpus.len());
        for &cpu in cpus {
            let key = cpu.to_ne_bytes();
            let value = map
                .lookup(&key, MapFlags::ANY)
                .map_err(|e| io_error("reading the BPF run-queue histograms", e))?
                .unwrap_or_default();
            map.update(&key, &zero, MapFlags::ANY)
                .map_err(|e| io_error("zeroing the BPF run-queue histograms", e))?;
            let slots = (0..MAX_SLOTS)
                .map(|i| u64_at(&value, i * 8).unwrap_or(0))
                .collect();
            out.push((cpu, slots));
        }
        Ok(out)
    }

    pub(crate) fn detach(&mut self) {
        self.loaded.detach();
    }
}
