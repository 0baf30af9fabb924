//! `scry cpudist`'s kernel side: loads `src/bpf/cpudist.bpf.c` through
//! the engine and reads its histograms (log2 slots, already in the unit
//! asked for). The rules (which stretches count) are in the program's
//! header comment. Histograms are read and deleted, as libbpf-tools does,
//! so each interval starts from zero.

use std::io;

use super::bpf_engine::{self, Attach, GroupRules, Hook, Loaded, comm_at, u32_at, u64_at};

super::bpf::bpf_skeleton!("cpudist.skel.rs");

use skel::{CpudistSkel, CpudistSkelBuilder};

/// Slots per histogram: the program's MAX_SLOTS.
pub const MAX_SLOTS: usize = 36;

/// The program's settings.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpudistSettings {
    pub off_cpu: bool,
    pub per_process: bool,
    pub per_thread: bool,
    pub milliseconds: bool,
    pub pid: Option<u32>,
}

/// One histogram: its key (tgid, tid, or u32::MAX for the single one),
/// the name of the task that opened it, and its log2 slots.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CpudistHist {
    pub key: u32,
    pub comm: String,
    pub slots: Vec<u64>,
}

#[derive(Debug)]
pub struct CpudistBpf {
    loaded: Loaded<CpudistSkel<'static>>,
}

impl CpudistBpf {
    pub fn load(settings: CpudistSettings) -> io::Result<CpudistBpf> {
        let loaded = bpf_engine::load(
            CpudistSkelBuilder::default,
            |open: &mut skel::OpenCpudistSkel<'static>| {
                let rodata = super::bpf::rodata(open.maps.rodata_data.as_deref_mut())?;
                rodata.off_cpu = settings.off_cpu;
                rodata.per_process = settings.per_process;
                rodata.per_thread = settings.per_thread;
                rodata.milliseconds = settings.milliseconds;
                rodata.filter_tgid = settings.pid.unwrap_or(0);
                Ok(())
            },
            GroupRules::default(),
            Attach::Now,
        )?;
        Ok(CpudistBpf { loaded })
    }

    pub fn hooks(&self) -> Vec<Hook> {
        self.loaded.hooks()
    }

    /// The histograms since the last read (they are deleted).
    pub fn read(&self) -> io::Result<Vec<CpudistHist>> {
        let maps = &self.loaded.skel.maps;
        let entries = bpf_engine::hash_entries(&maps.hists, "reading the BPF histograms")?;
        bpf_engine::clear_hash(&maps.hists, "clearing the BPF histograms")?;
        Ok(entries
            .iter()
            .filter_map(|(key, value)| {
                let slots = (0..MAX_SLOTS)
                    .map(|i| u64_at(value, i * 8))
                    .collect::<Option<Vec<u64>>>()?;
                Some(CpudistHist {
                    key: u32_at(key, 0)?,
                    comm: comm_at(value, MAX_SLOTS * 8, 16),
                    slots,
                })
            })
            .collect())
    }

    pub fn detach(&mut self) {
        self.loaded.detach();
    }
}
