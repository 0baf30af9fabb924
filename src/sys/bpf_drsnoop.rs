//! `scry drsnoop`'s kernel side: loads `src/bpf/drsnoop.bpf.c` through
//! the engine (the memory-cgroup reclaim hooks only with `memcg`) and
//! decodes the reclaims its ring streams (see the program's header).

use std::io;

use super::bpf_engine::{GroupRules, u32_at, u64_at};
use super::bpf_events::{EventStream, c_string_at};

super::bpf::bpf_skeleton!("drsnoop.skel.rs");

use skel::DrsnoopSkelBuilder;

const MEMCG_GROUPS: [&str; 2] = ["scry_dr_memcg_begin", "scry_dr_memcg_end"];

/// The program's settings.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct ReclaimSettings {
    pub(crate) pid: Option<u32>,
    pub(crate) tid: Option<u32>,
    /// Also memory-cgroup reclaims (--memcg).
    pub(crate) memcg: bool,
    /// vm_zone_stat's address, to read the free pages at each reclaim's
    /// start (-e); None: not read.
    pub(crate) vm_zone_stat: Option<u64>,
}

/// One reclaim.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ReclaimEvent {
    pub(crate) delta_ns: u64,
    pub(crate) nr_reclaimed: u64,
    pub(crate) pid: u32,
    pub(crate) tid: u32,
    /// A memory cgroup's reclaim, not a direct reclaim.
    pub(crate) memcg: bool,
    /// The system's free pages when it began (-e; else 0).
    pub(crate) free_pages: u64,
    pub(crate) comm: String,
}

impl ReclaimEvent {
    /// Decodes one ring record (`struct reclaim_event`); None when short.
    pub(crate) fn decode(r: &[u8]) -> Option<ReclaimEvent> {
        Some(ReclaimEvent {
            delta_ns: u64_at(r, 0)?,
            nr_reclaimed: u64_at(r, 8)?,
            pid: u32_at(r, 16)?,
            tid: u32_at(r, 20)?,
            memcg: u32_at(r, 24)? != 0,
            free_pages: u64_at(r, 32)?,
            comm: c_string_at(r, 40, 16),
        })
    }
}

/// The address of the kernel's vm_zone_stat (whose first counter is
/// NR_FREE_PAGES), from /proc/kallsyms; an error naming what hides it.
pub(crate) fn vm_zone_stat() -> io::Result<u64> {
    let found = super::proc::kallsyms_addresses(&["vm_zone_stat"])?;
    found.first().copied().flatten().ok_or_else(|| {
        io::Error::other(
            "vm_zone_stat is not in /proc/kallsyms (a kernel without CONFIG_KALLSYMS_ALL lists \
             no data symbols; kernel.kptr_restrict hides every address)",
        )
    })
}

pub(crate) type DrsnoopBpf = EventStream<ReclaimEvent>;

pub(crate) fn load(settings: ReclaimSettings) -> io::Result<DrsnoopBpf> {
    let skip: &[&str] = if settings.memcg { &[] } else { &MEMCG_GROUPS };
    EventStream::load(
        DrsnoopSkelBuilder::default,
        |open: &mut skel::OpenDrsnoopSkel<'static>| {
            let rodata = super::bpf::rodata(open.maps.rodata_data.as_deref_mut())?;
            rodata.filter_tgid = settings.pid.unwrap_or(0);
            rodata.filter_tid = settings.tid.unwrap_or(0);
            rodata.vm_zone_stat_addr = settings.vm_zone_stat.unwrap_or(0);
            Ok(())
        },
        GroupRules::skipping(skip),
        |s: &skel::DrsnoopSkel<'static>| (&s.maps.events, &s.maps.drops),
        ReclaimEvent::decode,
    )
}
