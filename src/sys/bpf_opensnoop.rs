//! `scry opensnoop`'s kernel side: loads `src/bpf/opensnoop.bpf.c` through
//! the engine and decodes the events its ring buffer streams. What the
//! program filters in the kernel is in its header comment.

use std::io;

use super::bpf_engine::{GroupRules, u32_at, u64_at};
use super::bpf_events::{EventStream, c_string_at, i32_at};

super::bpf::bpf_skeleton!("opensnoop.skel.rs");

use skel::OpensnoopSkelBuilder;

/// The program's settings (its `const volatile`s).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct OpenSettings {
    pub(crate) pid: Option<u32>,
    pub(crate) tid: Option<u32>,
    pub(crate) uid: Option<u32>,
    pub(crate) failed_only: bool,
}

/// One open(2) or openat(2), as the kernel saw it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct OpenEvent {
    pub(crate) duration_ns: u64,
    pub(crate) pid: u32,
    pub(crate) tid: u32,
    pub(crate) uid: u32,
    /// The descriptor, or minus the errno.
    pub(crate) ret: i32,
    pub(crate) flags: i32,
    pub(crate) mode: i32,
    pub(crate) comm: String,
    pub(crate) path: String,
}

impl OpenEvent {
    /// Decodes one ring record (`struct open_event`); None when short.
    pub(crate) fn decode(r: &[u8]) -> Option<OpenEvent> {
        Some(OpenEvent {
            duration_ns: u64_at(r, 8)?,
            pid: u32_at(r, 16)?,
            tid: u32_at(r, 20)?,
            uid: u32_at(r, 24)?,
            ret: i32_at(r, 28)?,
            flags: i32_at(r, 32)?,
            mode: i32_at(r, 36)?,
            comm: c_string_at(r, 40, 16),
            path: c_string_at(r, 56, 255),
        })
    }
}

/// The loaded, attached program, streaming [`OpenEvent`]s.
pub(crate) type OpensnoopBpf = EventStream<OpenEvent>;

/// Loads and attaches the program.
pub(crate) fn load(settings: OpenSettings) -> io::Result<OpensnoopBpf> {
    EventStream::load(
        OpensnoopSkelBuilder::default,
        |open: &mut skel::OpenOpensnoopSkel<'static>| {
            let rodata = super::bpf::rodata(open.maps.rodata_data.as_deref_mut())?;
            rodata.filter_tgid = settings.pid.unwrap_or(0);
            rodata.filter_tid = settings.tid.unwrap_or(0);
            rodata.filter_uid = settings.uid.unwrap_or(u32::MAX);
            rodata.failed_only = settings.failed_only;
            Ok(())
        },
        GroupRules::default(),
        |s: &skel::OpensnoopSkel<'static>| (&s.maps.events, &s.maps.drops),
        OpenEvent::decode,
    )
}
