//! `scry threadsnoop`'s kernel side: loads `src/bpf/threadsnoop.bpf.c`
//! through the engine (its pthread_create uprobe optional) and decodes
//! the creations its ring streams (see the program's header).

use std::io;

use super::bpf_engine::{GroupRules, u32_at, u64_at};
use super::bpf_events::{EventStream, c_string_at};

super::bpf::bpf_skeleton!("threadsnoop.skel.rs");

use skel::ThreadsnoopSkelBuilder;

/// The group of the uprobe on libc's pthread_create (the start functions).
pub(crate) const START_FUNCTIONS: &str = "scry_ts_pthread";

/// One thread created, as the kernel saw it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ThreadEvent {
    /// The start function's address in the process (pthread_create's
    /// third argument), 0 when unknown.
    pub(crate) func: u64,
    /// The creating process and thread.
    pub(crate) pid: u32,
    pub(crate) tid: u32,
    /// The new thread.
    pub(crate) new_tid: u32,
    pub(crate) comm: String,
}

impl ThreadEvent {
    /// Decodes one ring record (`struct thread_event`); None when short.
    pub(crate) fn decode(r: &[u8]) -> Option<ThreadEvent> {
        Some(ThreadEvent {
            func: u64_at(r, 0)?,
            pid: u32_at(r, 8)?,
            tid: u32_at(r, 12)?,
            new_tid: u32_at(r, 16)?,
            comm: c_string_at(r, 24, 16),
        })
    }
}

/// The loaded, attached programs, streaming [`ThreadEvent`]s.
pub(crate) type ThreadsnoopBpf = EventStream<ThreadEvent>;

/// Loads and attaches the programs; `pid`: only this process's threads.
pub(crate) fn load(pid: Option<u32>) -> io::Result<ThreadsnoopBpf> {
    EventStream::load(
        ThreadsnoopSkelBuilder::default,
        |open: &mut skel::OpenThreadsnoopSkel<'static>| {
            let rodata = super::bpf::rodata(open.maps.rodata_data.as_deref_mut())?;
            rodata.filter_tgid = pid.unwrap_or(0);
            Ok(())
        },
        GroupRules::optional(&[START_FUNCTIONS]),
        |s: &skel::ThreadsnoopSkel<'static>| (&s.maps.events, &s.maps.drops),
        ThreadEvent::decode,
    )
}
