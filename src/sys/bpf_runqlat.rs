//! `scry runqlat`'s kernel side: loads `src/bpf/runqlat.bpf.c` through the
//! engine, says which processes to time (their children follow at fork)
//! and reads its histograms (log2 slots in the unit asked for; read and
//! deleted, so each interval starts from zero). The rules (what a wait
//! is) are in the program's header comment.

use std::io;

use libbpf_rs::{MapCore, MapFlags};

use super::bpf::io_error;
use super::bpf_engine::{self, Hook, Loaded};
use super::bpf_hists::{self, KeyedSlots};

super::bpf::bpf_skeleton!("runqlat.skel.rs");

use skel::{RunqlatSkel, RunqlatSkelBuilder};

/// What a histogram is per.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum RunqlatKey {
    /// One histogram.
    #[default]
    All,
    Process,
    Thread,
    PidNamespace,
}

/// The program's settings.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct RunqlatSettings {
    pub(crate) key: RunqlatKey,
    pub(crate) milliseconds: bool,
    /// Time only the processes given to [`RunqlatBpf::watch`] (and their
    /// children); otherwise every task.
    pub(crate) filter: bool,
    /// Only the cgroup given to [`RunqlatBpf::set_cgroup`].
    pub(crate) cgroup: bool,
}

#[derive(Debug)]
pub(crate) struct RunqlatBpf {
    loaded: Loaded<RunqlatSkel<'static>>,
}

impl RunqlatBpf {
    pub(crate) fn load(settings: RunqlatSettings) -> io::Result<RunqlatBpf> {
        let loaded = bpf_engine::load_now(
            RunqlatSkelBuilder::default,
            |open: &mut skel::OpenRunqlatSkel<'static>| {
                let rodata = super::bpf::rodata(open.maps.rodata_data.as_deref_mut())?;
                rodata.per_process = settings.key == RunqlatKey::Process;
                rodata.per_thread = settings.key == RunqlatKey::Thread;
                rodata.per_pidns = settings.key == RunqlatKey::PidNamespace;
                rodata.milliseconds = settings.milliseconds;
                rodata.filter_on = settings.filter;
                rodata.filter_cgroup = settings.cgroup;
                Ok(())
            },
        )?;
        Ok(RunqlatBpf { loaded })
    }

    /// Counts only the tasks under the cgroup directory `dir` (loaded
    /// with `cgroup` set: nothing counts until this is called).
    pub(crate) fn set_cgroup(&self, dir: &std::fs::File) -> io::Result<()> {
        super::bpf_execsnoop::fill_cgroup(&self.loaded.skel.maps.cgroup_map, Some(dir))
    }

    pub(crate) fn hooks(&self) -> Vec<Hook> {
        self.loaded.hooks()
    }

    /// Time this process (with a filter), and the children it forks from now on.
    pub(crate) fn watch(&self, tgid: u32) -> io::Result<()> {
        self.loaded
            .skel
            .maps
            .watched
            .update(&tgid.to_ne_bytes(), &[1], MapFlags::ANY)
            .map_err(|e| io_error("adding a process to the BPF filter", e))
    }

    /// The histograms since the last read (they are deleted), by key.
    pub(crate) fn read(&self) -> io::Result<Vec<KeyedSlots>> {
        bpf_hists::drain(&self.loaded.skel.maps.hists)
    }

    pub(crate) fn detach(&mut self) {
        self.loaded.detach();
    }
}
