//! `scry syscount`'s kernel side: loads `src/bpf/syscount.bpf.c` through
//! the engine (`bpf_engine`) and reads its counts. The rules (where calls
//! are counted, what -x and -L keep) are in the program's header comment.
//!
//! Per call number the program's counts are cumulative (a per-CPU array,
//! summed here); per process they are read and deleted, so an interval
//! shows the processes seen since the last one and the map never fills
//! with exited processes.

use std::io;

use super::bpf_engine::{self, Attach, GroupRules, Hook, Loaded, comm_at, u32_at, u64_at};

super::bpf::bpf_skeleton!("syscount.skel.rs");

use skel::{SyscountSkel, SyscountSkelBuilder};

/// The program's settings (its `const volatile`s).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct SyscountSettings {
    pub(crate) failed_only: bool,
    pub(crate) latency: bool,
    pub(crate) by_process: bool,
    /// Only this process (tgid).
    pub(crate) pid: Option<u32>,
    /// Only this thread.
    pub(crate) tid: Option<u32>,
    /// Only the children of this process (their parent's tgid).
    pub(crate) ppid: Option<u32>,
    /// Only calls failing with this error number.
    pub(crate) errno: Option<u32>,
    /// Only this call number.
    pub(crate) syscall: Option<u32>,
    /// Only the cgroup given to [`SyscountBpf::set_cgroup`].
    pub(crate) cgroup: bool,
}

/// One row the kernel counted: a call number, or a process (tgid).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct SyscountRow {
    pub(crate) key: u32,
    pub(crate) count: u64,
    pub(crate) total_ns: u64,
    /// The process's name (per process only).
    pub(crate) comm: String,
}

/// The loaded, attached program.
#[derive(Debug)]
pub(crate) struct SyscountBpf {
    loaded: Loaded<SyscountSkel<'static>>,
    settings: SyscountSettings,
}

impl SyscountBpf {
    pub(crate) fn load(settings: SyscountSettings) -> io::Result<SyscountBpf> {
        let skip: &[&str] = if settings.latency {
            &[]
        } else {
            &["scry_sc_enter"]
        };
        let loaded = bpf_engine::load(
            SyscountSkelBuilder::default,
            |open: &mut skel::OpenSyscountSkel<'static>| {
                let rodata = super::bpf::rodata(open.maps.rodata_data.as_deref_mut())?;
                rodata.filter_failed = settings.failed_only;
                rodata.measure_latency = settings.latency;
                rodata.count_by_process = settings.by_process;
                rodata.filter_tgid = settings.pid.unwrap_or(0);
                rodata.filter_tid = settings.tid.unwrap_or(0);
                rodata.filter_ppid = settings.ppid.unwrap_or(0);
                rodata.filter_errno = settings.errno.unwrap_or(0);
                rodata.filter_cgroup = settings.cgroup;
                rodata.filter_nr = settings
                    .syscall
                    .map_or(-1, |nr| i32::try_from(nr).unwrap_or(-1));
                Ok(())
            },
            GroupRules::skipping(skip),
            Attach::Now,
        )?;
        Ok(SyscountBpf { loaded, settings })
    }

    /// Counts only the tasks under the cgroup v2 directory `dir` (loaded
    /// with `cgroup` set: nothing counts until this is called).
    pub(crate) fn set_cgroup(&self, dir: &std::path::Path) -> io::Result<()> {
        let dir = super::bpf_execsnoop::open_cgroup(Some(dir))?;
        super::bpf_execsnoop::fill_cgroup(&self.loaded.skel.maps.cgroup_map, dir.as_ref())
    }

    /// Which hooks are in use (for `-v`).
    pub(crate) fn hooks(&self) -> Vec<Hook> {
        self.loaded.hooks()
    }

    /// Per call number: the totals since the start. Per process: the rows
    /// since the last read (they are deleted).
    pub(crate) fn read(&self) -> io::Result<Vec<SyscountRow>> {
        let maps = &self.loaded.skel.maps;
        if self.settings.by_process {
            let entries = bpf_engine::hash_entries(&maps.by_process, "reading the BPF counts")?;
            bpf_engine::clear_hash(&maps.by_process, "clearing the BPF counts")?;
            return Ok(entries
                .iter()
                .filter_map(|(key, value)| {
                    Some(SyscountRow {
                        key: u32_at(key, 0)?,
                        count: u64_at(value, 0)?,
                        total_ns: u64_at(value, 8)?,
                        comm: comm_at(value, 16, 16),
                    })
                })
                .collect());
        }
        let mut rows = Vec::new();
        for (key, per_cpu) in bpf_engine::percpu_entries(&maps.by_call, "reading the BPF counts")? {
            let Some(nr) = u32_at(&key, 0) else { continue };
            let count: u64 = per_cpu.iter().filter_map(|v| u64_at(v, 0)).sum();
            if count == 0 {
                continue;
            }
            let total_ns = per_cpu.iter().filter_map(|v| u64_at(v, 8)).sum();
            rows.push(SyscountRow {
                key: nr,
                count,
                total_ns,
                comm: String::new(),
            });
        }
        Ok(rows)
    }

    /// Detaches the hooks: the counts stop moving.
    pub(crate) fn detach(&mut self) {
        self.loaded.detach();
    }
}
