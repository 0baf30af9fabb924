//! `scry cachestat`'s kernel side: loads `src/bpf/cachestat.bpf.c` (the
//! filemap and writeback tracepoints; what each counts is in the
//! program's header) and reads its counters. The misses must attach
//! (without them there is no cachestat); the accesses and dirties are
//! optional, and `missing` names what did not attach so the tool can say
//! once what it cannot see. bcc's hooks (folio_mark_accessed,
//! filemap_add_folio, folio_account_dirtied, mark_buffer_dirty, or the
//! page functions they replaced) count instead where they attach (the
//! engine's kernel-function groups); [`CacheCounts`] then carries bcc's
//! subtractions, made per interval by `analysis::cachestat`.

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

/// bcc's hooks, each its own counter; folio_account_dirtied may be
/// inlined (optional).
const FUNCTIONS: &[&str] = &[
    "scry_k_cache_accessed",
    "scry_k_cache_added",
    "scry_k_cache_accounted",
    "scry_k_cache_buffer_dirty",
];

/// The tracepoint groups.
const TRACEPOINTS: &[&str] = &[
    "scry_cache_add",
    "scry_cache_dirty",
    "scry_cache_get_pages",
    "scry_cache_map_pages",
    "scry_cache_fault",
];

/// The counters (pages, each only ever growing): accesses, misses,
/// dirties, and what bcc takes off the accesses and the misses (its hooks
/// only: mark_buffer_dirty's calls, folio_account_dirtied's).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct CacheCounts {
    pub(crate) accesses: u64,
    pub(crate) misses: u64,
    pub(crate) dirties: u64,
    pub(crate) less_accesses: u64,
    pub(crate) less_misses: u64,
}

/// The loaded, attached programs.
#[derive(Debug)]
pub(crate) struct CachestatBpf {
    loaded: Loaded<CachestatSkel<'static>>,
}

impl CachestatBpf {
    pub(crate) fn load() -> io::Result<CachestatBpf> {
        let mut optional: Vec<&str> = OPTIONAL.iter().map(|(g, _)| *g).collect();
        optional.push("scry_k_cache_accounted");
        let loaded = bpf_engine::load(
            CachestatSkelBuilder::default,
            |_open: &mut skel::OpenCachestatSkel<'static>| Ok(()),
            GroupRules::kernel_functions(FUNCTIONS, TRACEPOINTS, &optional),
            Attach::Now,
        )?;
        Ok(CachestatBpf { loaded })
    }

    /// Whether bcc's hooks count (kernel functions), not the tracepoints.
    pub(crate) fn on_kernel_functions(&self) -> bool {
        self.loaded.on_kernel_functions()
    }

    /// What is not counted here: the optional programs that did not attach.
    pub(crate) fn missing(&self) -> Vec<&'static str> {
        if self.on_kernel_functions() {
            return if self.loaded.has("scry_k_cache_accounted") {
                Vec::new()
            } else {
                vec!["pages dirtied taken off the misses (folio_account_dirtied is not hookable)"]
            };
        }
        OPTIONAL
            .iter()
            .filter(|(g, _)| !self.loaded.has(g))
            .map(|(_, what)| *what)
            .collect()
    }

    pub(crate) fn hooks(&self) -> Vec<Hook> {
        self.loaded.hooks()
    }

    /// The counters since the programs attached.
    pub(crate) fn read(&self) -> io::Result<CacheCounts> {
        let values = bpf_engine::array_values(
            &self.loaded.skel.maps.counts,
            7,
            "reading cachestat's counters",
        )?;
        let at = |i: usize| values.get(i).and_then(|v| u64_at(v, 0)).unwrap_or(0);
        if self.on_kernel_functions() {
            // bcc: accesses = mark_page_accessed - mark_buffer_dirty,
            // misses = add_to_page_cache_lru - account_page_dirtied,
            // dirties = mark_buffer_dirty.
            return Ok(CacheCounts {
                accesses: at(3),
                misses: at(4),
                dirties: at(6),
                less_accesses: at(6),
                less_misses: at(5),
            });
        }
        Ok(CacheCounts {
            accesses: at(0),
            misses: at(1),
            dirties: at(2),
            ..CacheCounts::default()
        })
    }
}
