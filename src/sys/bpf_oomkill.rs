//! `scry oomkill`'s kernel side: loads `src/bpf/oomkill.bpf.c` through
//! the engine and decodes the OOM kills its ring streams (what each field
//! is, and what the tracepoint does not carry, in the program's header).

use std::io;

use super::bpf_engine::{GroupRules, u32_at, u64_at};
use super::bpf_events::{EventStream, c_string_at};

super::bpf::bpf_skeleton!("oomkill.skel.rs");

use skel::OomkillSkelBuilder;

/// One OOM kill.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct OomEvent {
    /// The process whose allocation invoked the OOM killer.
    pub(crate) trigger_pid: u32,
    pub(crate) trigger_comm: String,
    /// The process killed.
    pub(crate) victim_pid: u32,
    pub(crate) victim_comm: String,
    /// The victim's address-space size, in pages.
    pub(crate) pages: u64,
}

impl OomEvent {
    /// Decodes one ring record (`struct oom_event`); None when short.
    pub(crate) fn decode(r: &[u8]) -> Option<OomEvent> {
        Some(OomEvent {
            trigger_pid: u32_at(r, 0)?,
            victim_pid: u32_at(r, 4)?,
            pages: u64_at(r, 8)?,
            trigger_comm: c_string_at(r, 16, 16),
            victim_comm: c_string_at(r, 32, 16),
        })
    }
}

pub(crate) type OomkillBpf = EventStream<OomEvent>;

pub(crate) fn load() -> io::Result<OomkillBpf> {
    EventStream::load(
        OomkillSkelBuilder::default,
        |_: &mut skel::OpenOomkillSkel<'static>| Ok(()),
        GroupRules::default(),
        |s: &skel::OomkillSkel<'static>| (&s.maps.events, &s.maps.drops),
        OomEvent::decode,
    )
}
