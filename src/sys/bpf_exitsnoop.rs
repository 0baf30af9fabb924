//! `scry exitsnoop`'s kernel side: loads `src/bpf/exitsnoop.bpf.c` through
//! the engine and decodes the exits its ring streams (see the program's
//! header for what it keeps).

use std::io;

use super::bpf_engine::{GroupRules, u32_at, u64_at};
use super::bpf_events::{EventStream, c_string_at};
use super::bpf_execsnoop::load_in_cgroup;

super::bpf::bpf_skeleton!("exitsnoop.skel.rs");

use skel::ExitsnoopSkelBuilder;

/// The program's settings.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ExitSettings<'a> {
    pub(crate) pid: Option<u32>,
    /// Only exits with a non-zero code or a signal (-x).
    pub(crate) failed_only: bool,
    /// Every thread's exit, not only the process's (-T).
    pub(crate) threads: bool,
    /// Only tasks under this cgroup directory (-c), opened.
    pub(crate) cgroup: Option<&'a std::fs::File>,
}

/// One exit, as the kernel saw it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ExitEvent {
    pub(crate) age_ns: u64,
    pub(crate) pid: u32,
    pub(crate) tid: u32,
    pub(crate) ppid: u32,
    /// As wait(2) reports it: the code in bits 8-15, the signal in 0-6,
    /// bit 7 a core dump.
    pub(crate) status: u32,
    pub(crate) comm: String,
}

impl ExitEvent {
    pub(crate) fn decode(r: &[u8]) -> Option<ExitEvent> {
        Some(ExitEvent {
            age_ns: u64_at(r, 0)?,
            pid: u32_at(r, 8)?,
            tid: u32_at(r, 12)?,
            ppid: u32_at(r, 16)?,
            status: u32_at(r, 20)?,
            comm: c_string_at(r, 24, 16),
        })
    }

    /// The exit code (0 when a signal ended it).
    pub(crate) fn code(&self) -> u32 {
        (self.status >> 8) & 0xff
    }

    /// The signal that ended it, if one did.
    pub(crate) fn signal(&self) -> Option<u32> {
        Some(self.status & 0x7f).filter(|&s| s != 0)
    }

    pub(crate) fn core_dumped(&self) -> bool {
        self.status & 0x80 != 0
    }
}

/// The loaded, attached program, streaming [`ExitEvent`]s.
pub(crate) type ExitsnoopBpf = EventStream<ExitEvent>;

/// Loads and attaches the program, its cgroup filter filled first.
pub(crate) fn load(settings: ExitSettings<'_>) -> io::Result<ExitsnoopBpf> {
    let loaded = load_in_cgroup(
        ExitsnoopSkelBuilder::default,
        |open: &mut skel::OpenExitsnoopSkel<'static>| {
            let rodata = super::bpf::rodata(open.maps.rodata_data.as_deref_mut())?;
            rodata.filter_tgid = settings.pid.unwrap_or(0);
            rodata.failed_only = settings.failed_only;
            rodata.threads = settings.threads;
            rodata.filter_cgroup = settings.cgroup.is_some();
            Ok(())
        },
        GroupRules::default(),
        settings.cgroup,
        |s: &skel::ExitsnoopSkel<'static>| &s.maps.cgroup_map,
    )?;
    Ok(EventStream::new(
        loaded,
        |s: &skel::ExitsnoopSkel<'static>| (&s.maps.events, &s.maps.drops),
        ExitEvent::decode,
    ))
}
