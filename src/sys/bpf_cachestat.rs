//! `scry cachestat`'s kernel side: loads `src/bpf/cachestat.bpf.c` (the
//! filemap and writeback tracepoints; what each counts is in the
//! program's header) and reads its counters. The misses must attach
//! (without them there is no cachestat); the accesses and dirties are
//! optional, and `missing` names what did not attach so the tool can say
//! once what it cannot see.

use std::io;

use super::bpf_engine::{self, Attach, GroupRules, Hook, Loaded, u64_at};

super::bpf::bpf_skeleton!("cachestat.skel.rs");

use skel::{CachestatSkel, CachestatSkelBuilder};

/// The optional programs, with what is not seen without each.
const OPTIONAL: &[(&str, &str)] = &[
    (
        "scry_cache_dirty",
        "dirtied pages (writeback:writeback_dirty_folio)",
    ),
    (
        "scry_cache_get_pages",
        "read() accesses (filemap:mm_filemap_get_pages)",
    ),
    (
        "scry_cache_map_pages",
        "mmap fault-around accesses (filemap:mm_filemap_map_pages)",
    ),
    (
        "scry_cache_fault",
        "mmap fault accesses (filemap:mm_filemap_fault)",
    ),
];

/// The counters: accesses, misses, dirties (pages).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CacheCounts {
    pub accesses: u64,
    pub misses: u64,
    pub dirties: u64,
}

/// The loaded, attached programs.
#[derive(Debug)]
pub struct CachestatBpf {
    loaded: Loaded<CachestatSkel<'static>>,
}

impl CachestatBpf {
    pub fn load() -> io::Result<CachestatBpf> {
        let optional: Vec<&str> = OPTIONAL.iter().map(|(g, _)| *g).collect();
        let loaded = bpf_engine::load(
            CachestatSkelBuilder::default,
            |_open: &mut skel::OpenCachestatSkel<'static>| Ok(()),
            GroupRules::optional(&optional),
            Attach::Now,
        )?;
        Ok(CachestatBpf { loaded })
    }

    /// What is not counted here: the optional programs that did not attach.
    pub fn missing(&self) -> Vec<&'static str> {
        OPTIONAL
            .iter()
            .filter(|(g, _)| !self.loaded.has(g))
            .map(|(_, what)| *what)
            .collect()
    }

    pub fn hooks(&self) -> Vec<Hook> {
        self.loaded.hooks()
    }

    /// The counters since the programs attached.
    pub fn read(&self) -> io::Result<CacheCounts> {
        let values = bpf_engine::array_values(
            &self.loaded.skel.maps.counts,
            3,
            "reading cachestat's counters",
        )?;
        let at = |i: usize| values.get(i).and_then(|v| u64_at(v, 0)).unwrap_or(0);
        Ok(CacheCounts {
            accesses: at(0),
            misses: at(1),
            dirties: at(2),
        })
    }
}
