//! `scry filelife`'s kernel side: loads `src/bpf/filelife.bpf.c` through
//! the engine (each call's programs optional: open and creat do not exist
//! on every architecture; one creating and one deleting call must attach)
//! and decodes the deletions its ring streams. What the system calls
//! cannot show is in the program's header.

use std::io;

use super::bpf_engine::{self, Attach, GroupRules, u32_at, u64_at};
use super::bpf_events::{EventStream, c_string_at};

super::bpf::bpf_skeleton!("filelife.skel.rs");

use skel::FilelifeSkelBuilder;

const CREATES: [&str; 8] = [
    "scry_fl_open",
    "scry_fl_open_exit",
    "scry_fl_openat",
    "scry_fl_openat_exit",
    "scry_fl_creat",
    "scry_fl_creat_exit",
    "scry_fl_openat2",
    "scry_fl_openat2_exit",
];
const DELETES: [&str; 4] = [
    "scry_fl_unlink",
    "scry_fl_unlink_exit",
    "scry_fl_unlinkat",
    "scry_fl_unlinkat_exit",
];

/// One file deleted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct LifeEvent {
    /// From its creation to its deletion.
    pub(crate) age_ns: u64,
    /// The deleting process and thread.
    pub(crate) pid: u32,
    pub(crate) tid: u32,
    pub(crate) comm: String,
    /// As the deleting call wrote it.
    pub(crate) path: String,
}

impl LifeEvent {
    /// Decodes one ring record (`struct life_event`); None when short.
    pub(crate) fn decode(r: &[u8]) -> Option<LifeEvent> {
        Some(LifeEvent {
            age_ns: u64_at(r, 0)?,
            pid: u32_at(r, 8)?,
            tid: u32_at(r, 12)?,
            comm: c_string_at(r, 16, 16),
            path: c_string_at(r, 32, 256),
        })
    }
}

pub(crate) type FilelifeBpf = EventStream<LifeEvent>;

/// `pid`: only the files this process deletes.
pub(crate) fn load(pid: Option<u32>) -> io::Result<FilelifeBpf> {
    let optional: Vec<&str> = CREATES.iter().chain(&DELETES).copied().collect();
    let loaded = bpf_engine::load(
        FilelifeSkelBuilder::default,
        |open: &mut skel::OpenFilelifeSkel<'static>| {
            let rodata = super::bpf::rodata(open.maps.rodata_data.as_deref_mut())?;
            rodata.filter_tgid = pid.unwrap_or(0);
            Ok(())
        },
        GroupRules::optional(&optional),
        Attach::Now,
    )?;
    for (what, groups) in [("creating", &CREATES[..]), ("deleting", &DELETES[..])] {
        if !groups.iter().any(|g| loaded.has(g)) {
            return Err(io::Error::other(format!(
                "none of the syscalls tracepoints of the {what} calls attached here"
            )));
        }
    }
    Ok(EventStream::new(
        loaded,
        |s: &skel::FilelifeSkel<'static>| (&s.maps.events, &s.maps.drops),
        LifeEvent::decode,
    ))
}
