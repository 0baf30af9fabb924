//! `scry funccount` and `scry funclatency`'s kernel side: loads
//! `src/bpf/funcs.bpf.c` through the engine and attaches its program (or,
//! for latency, its entry and return pair) as uprobes at each function
//! site the caller found, the function's index as each link's cookie;
//! reads the counts, the latency histograms and the totals. How the
//! program counts is in its header.

use std::io;
use std::path::PathBuf;

use super::bpf_engine::{self, Attach, GroupRules, Hook, Loaded, u64_at};
use super::bpf_hists::{self, KeyedSlots};

super::bpf::bpf_skeleton!("funcs.skel.rs");

use skel::{FuncsSkel, FuncsSkelBuilder};

/// The most functions one run probes: the program's MAX_FUNCS.
pub(crate) const MAX_FUNCS: usize = 1024;

/// The deepest funclatency `-l`: the program's MAX_LEVEL.
pub(crate) const MAX_LEVEL: u32 = 64;

/// What to measure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FuncsMode {
    /// Calls per function (funccount), on one CPU only if given.
    Count { cpu: Option<u32> },
    /// Time from entry to return, in units of `unit_div` nanoseconds;
    /// `level` 0 times the innermost of nested probed calls (bcc without
    /// -l), N the outermost N levels (bcc's -l N, at most [`MAX_LEVEL`]).
    Latency { unit_div: u64, level: u32 },
}

/// Where the probes go: each site's file and file offset; a site's index
/// in the list is its function's index in the maps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct FuncSites {
    /// -1: every process.
    pub(crate) pid: i32,
    pub(crate) sites: Vec<(PathBuf, u64)>,
}

#[derive(Debug)]
pub(crate) struct FuncsBpf {
    loaded: Loaded<FuncsSkel<'static>>,
    functions: usize,
}

impl FuncsBpf {
    /// Loads the program and attaches it at every site; with `cgroup`
    /// (latency only), only the tasks under that cgroup directory count.
    pub(crate) fn load(
        mode: FuncsMode,
        sites: &FuncSites,
        cgroup: Option<&std::fs::File>,
    ) -> io::Result<FuncsBpf> {
        if sites.sites.len() > MAX_FUNCS {
            return Err(io::Error::other(format!(
                "{} functions match: at most {MAX_FUNCS} can be probed",
                sites.sites.len()
            )));
        }
        let skip: &[&str] = match mode {
            FuncsMode::Count { .. } => &["scry_fl_entry", "scry_fl_return"],
            FuncsMode::Latency { .. } => &["scry_fc_count"],
        };
        let mut loaded = bpf_engine::load(
            FuncsSkelBuilder::default,
            |open: &mut skel::OpenFuncsSkel<'static>| {
                let rodata = super::bpf::rodata(open.maps.rodata_data.as_deref_mut())?;
                match mode {
                    FuncsMode::Count { cpu } => {
                        rodata.filter_cpu = cpu.map_or(-1, |c| i32::try_from(c).unwrap_or(-1));
                    }
                    FuncsMode::Latency { unit_div, level } => {
                        rodata.unit_div = unit_div.max(1);
                        rodata.max_level = level.min(MAX_LEVEL);
                    }
                }
                rodata.filter_cgroup = cgroup.is_some();
                // The per-thread stacks of -l only: 5 MB otherwise unused.
                if !matches!(mode, FuncsMode::Latency { level: 1.., .. }) {
                    open.maps
                        .nests
                        .set_max_entries(1)
                        .map_err(|e| super::bpf::io_error("sizing the BPF nests map", e))?;
                }
                Ok(())
            },
            GroupRules::skipping(skip),
            Attach::Later,
        )?;
        super::bpf_execsnoop::fill_cgroup(&loaded.skel.maps.cgroup_map, cgroup)?;
        for (index, (path, offset)) in sites.sites.iter().enumerate() {
            let site = (path.as_path(), *offset);
            let cookie = index as u64;
            match mode {
                FuncsMode::Count { .. } => {
                    loaded.attach_uprobe("scry_fc_count", false, sites.pid, site, cookie)?;
                }
                FuncsMode::Latency { .. } => {
                    loaded.attach_uprobe("scry_fl_entry", false, sites.pid, site, cookie)?;
                    loaded.attach_uprobe("scry_fl_return", true, sites.pid, site, cookie)?;
                }
            }
        }
        Ok(FuncsBpf {
            loaded,
            functions: sites.sites.len(),
        })
    }

    pub(crate) fn hooks(&self) -> Vec<Hook> {
        self.loaded.hooks()
    }

    /// Each function's calls since the start, by index.
    pub(crate) fn counts(&self) -> io::Result<Vec<u64>> {
        let values = bpf_engine::array_values(
            &self.loaded.skel.maps.counts,
            MAX_FUNCS as u32,
            "reading the BPF call counts",
        )?;
        Ok(values
            .iter()
            .take(self.functions)
            .map(|v| u64_at(v, 0).unwrap_or(0))
            .collect())
    }

    /// The latency histograms since the last read (they are deleted), by
    /// key (function index << 32 | tgid).
    pub(crate) fn hists(&self) -> io::Result<Vec<KeyedSlots>> {
        bpf_hists::drain(&self.loaded.skel.maps.hists)
    }

    /// (nanoseconds timed, calls timed) since the start.
    pub(crate) fn totals(&self) -> io::Result<(u64, u64)> {
        let values =
            bpf_engine::array_values(&self.loaded.skel.maps.totals, 2, "reading the BPF totals")?;
        let at = |i: usize| values.get(i).and_then(|v| u64_at(v, 0)).unwrap_or(0);
        Ok((at(0), at(1)))
    }

    pub(crate) fn detach(&mut self) {
        self.loaded.detach();
    }
}
