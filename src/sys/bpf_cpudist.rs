//! `scry cpudist`'s kernel side: loads `src/bpf/cpudist.bpf.c` through
//! the engine and reads its histograms (log2 slots, already in the unit
//! asked for). The rules (which stretches count) are in the program's
//! header comment. Histograms are read and deleted (`bpf_hists`), as
//! libbpf-tools does, so each interval starts from zero; each has the sum
//! of its values (for -e).

use std::io;

use super::bpf_engine::{self, Hook, Loaded};
use super::bpf_hists::{self, SummedSlots};

super::bpf::bpf_skeleton!("cpudist.skel.rs");

use skel::{CpudistSkel, CpudistSkelBuilder};

/// The program's settings.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct CpudistSettings {
    pub(crate) off_cpu: bool,
    pub(crate) per_process: bool,
    pub(crate) per_thread: bool,
    pub(crate) milliseconds: bool,
    pub(crate) pid: Option<u32>,
    /// Only the cgroup given to [`CpudistBpf::set_cgroup`].
    pub(crate) cgroup: bool,
    /// Count the idle task too (bcc's -I).
    pub(crate) include_idle: bool,
}

#[derive(Debug)]
pub(crate) struct CpudistBpf {
    loaded: Loaded<CpudistSkel<'static>>,
}

impl CpudistBpf {
    pub(crate) fn load(settings: CpudistSettings) -> io::Result<CpudistBpf> {
        let loaded = bpf_engine::load_now(
            CpudistSkelBuilder::default,
            |open: &mut skel::OpenCpudistSkel<'static>| {
                let rodata = super::bpf::rodata(open.maps.rodata_data.as_deref_mut())?;
                rodata.off_cpu = settings.off_cpu;
                rodata.per_process = settings.per_process;
                rodata.per_thread = settings.per_thread;
                rodata.milliseconds = settings.milliseconds;
                rodata.filter_tgid = settings.pid.unwrap_or(0);
                rodata.filter_cgroup = settings.cgroup;
                rodata.include_idle = settings.include_idle;
                Ok(())
            },
        )?;
        Ok(CpudistBpf { loaded })
    }

    /// Counts only the tasks under the cgroup directory `dir` (loaded
    /// with `cgroup` set: nothing counts until this is called).
    pub(crate) fn set_cgroup(&self, dir: &std::fs::File) -> io::Result<()> {
        super::bpf_execsnoop::fill_cgroup(&self.loaded.skel.maps.cgroup_map, Some(dir))
    }

    pub(crate) fn hooks(&self) -> Vec<Hook> {
        self.loaded.hooks()
    }

    /// The histograms since the last read (they are deleted), by key,
    /// each with the sum of its values.
    pub(crate) fn read(&self) -> io::Result<Vec<SummedSlots>> {
        let mut read = bpf_hists::drain_with(&self.loaded.skel.maps.hists, SummedSlots::parse)?;
        read.sort_by_key(|h| h.slots.key);
        Ok(read)
    }

    pub(crate) fn detach(&mut self) {
        self.loaded.detach();
    }
}
