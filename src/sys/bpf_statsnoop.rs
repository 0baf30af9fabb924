//! `scry statsnoop`'s kernel side: loads `src/bpf/statsnoop.bpf.c`
//! through the engine and decodes the calls its ring streams (see the
//! program's header). A call whose tracepoint this kernel lacks is left
//! out; none of them is an error.

use std::io;

use super::bpf_engine::{self, Attach, GroupRules, u32_at};
use super::bpf_events::{EventStream, c_string_at, i32_at};

super::bpf::bpf_skeleton!("statsnoop.skel.rs");

use skel::StatsnoopSkelBuilder;

/// The calls traced, in the program's order (`enum stat_call`).
pub(crate) const CALLS: [&str; 5] = ["statfs", "newstat", "newlstat", "statx", "newfstatat"];

/// The programs' groups (each call's entry and exit), all optional.
const GROUPS: [&str; 10] = [
    "scry_st_statfs",
    "scry_st_statfs_exit",
    "scry_st_newstat",
    "scry_st_newstat_exit",
    "scry_st_newlstat",
    "scry_st_newlstat_exit",
    "scry_st_statx",
    "scry_st_statx_exit",
    "scry_st_newfstatat",
    "scry_st_newfstatat_exit",
];

/// The program's settings.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct StatSettings {
    pub(crate) pid: Option<u32>,
    /// Only calls that failed (-x).
    pub(crate) failed_only: bool,
}

/// One stat-family call, as the kernel saw it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct StatEvent {
    pub(crate) pid: u32,
    pub(crate) tid: u32,
    /// 0, or minus the errno.
    pub(crate) ret: i32,
    /// The call's name (one of [`CALLS`]).
    pub(crate) call: &'static str,
    pub(crate) comm: String,
    pub(crate) path: String,
}

impl StatEvent {
    /// Decodes one ring record (`struct stat_event`); None when short.
    pub(crate) fn decode(r: &[u8]) -> Option<StatEvent> {
        let call = usize::try_from(u32_at(r, 12)?).ok()?;
        Some(StatEvent {
            pid: u32_at(r, 0)?,
            tid: u32_at(r, 4)?,
            ret: i32_at(r, 8)?,
            call: CALLS.get(call).copied().unwrap_or("?"),
            comm: c_string_at(r, 16, 16),
            path: c_string_at(r, 32, 255),
        })
    }
}

/// The loaded, attached programs, streaming [`StatEvent`]s.
pub(crate) type StatsnoopBpf = EventStream<StatEvent>;

pub(crate) fn load(settings: StatSettings) -> io::Result<StatsnoopBpf> {
    let loaded = bpf_engine::load(
        StatsnoopSkelBuilder::default,
        |open: &mut skel::OpenStatsnoopSkel<'static>| {
            let rodata = super::bpf::rodata(open.maps.rodata_data.as_deref_mut())?;
            rodata.filter_tgid = settings.pid.unwrap_or(0);
            rodata.failed_only = settings.failed_only;
            Ok(())
        },
        GroupRules::optional(&GROUPS),
        Attach::Now,
    )?;
    if !GROUPS.iter().any(|g| loaded.has(g)) {
        return Err(io::Error::other(format!(
            "none of the tracepoints syscalls:sys_enter_{{{}}} attached here",
            CALLS.join(",")
        )));
    }
    Ok(EventStream::new(
        loaded,
        |s: &skel::StatsnoopSkel<'static>| (&s.maps.events, &s.maps.drops),
        StatEvent::decode,
    ))
}
