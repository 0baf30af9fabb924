//! `scry capable`'s kernel side: loads `src/bpf/capable.bpf.c` through
//! the engine and decodes the capability checks its ring streams (what
//! the tracepoint shows and does not, in the program's header).

use std::io;

use super::bpf_engine::{GroupRules, u32_at, u64_at};
use super::bpf_events::{EventStream, c_string_at, i32_at};
use super::bpf_execsnoop::load_in_cgroup;

super::bpf::bpf_skeleton!("capable.skel.rs");

use skel::CapableSkelBuilder;

/// One capability check.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct CapEvent {
    pub(crate) pid: u32,
    pub(crate) tid: u32,
    pub(crate) uid: u32,
    /// The capability's number (`CAP_*`).
    pub(crate) cap: i32,
    /// 0: allowed; else minus the errno (-EPERM).
    pub(crate) ret: i32,
    pub(crate) comm: String,
    /// The checking task's cgroup v2 id.
    pub(crate) cgroup_id: u64,
    /// -K's kernel stack, innermost first (empty when not asked or not taken).
    pub(crate) kernel: Vec<u64>,
    /// -U's user stack, innermost first (empty when not asked or not taken).
    pub(crate) user: Vec<u64>,
}

/// The program's `MAX_STACK`: addresses each stack holds at most.
const MAX_STACK: usize = 127;

/// `count_at` bytes of addresses from `at`, bounded by `MAX_STACK` and
/// the record.
fn stack_at(r: &[u8], count_at: usize, at: usize) -> Vec<u64> {
    let bytes = u32_at(r, count_at)
        .map_or(0, |b| b as usize)
        .min(MAX_STACK * 8);
    (0..bytes / 8)
        .map_while(|i| u64_at(r, at + i * 8))
        .take_while(|&ip| ip != 0)
        .collect()
}

impl CapEvent {
    /// Decodes one ring record (`struct cap_event`); None when short.
    pub(crate) fn decode(r: &[u8]) -> Option<CapEvent> {
        Some(CapEvent {
            pid: u32_at(r, 0)?,
            tid: u32_at(r, 4)?,
            uid: u32_at(r, 8)?,
            cap: i32_at(r, 12)?,
            ret: i32_at(r, 16)?,
            comm: c_string_at(r, 20, 16),
            cgroup_id: u64_at(r, 40)?,
            kernel: stack_at(r, 48, 56),
            user: stack_at(r, 52, 56 + MAX_STACK * 8),
        })
    }
}

pub(crate) type CapableBpf = EventStream<CapEvent>;

/// `pid`: only this process's checks; `cgroup`: only those of the tasks
/// under this cgroup directory (opened), its filter filled first;
/// `stacks`: (kernel, user) stacks taken with each check.
pub(crate) fn load(
    pid: Option<u32>,
    cgroup: Option<&std::fs::File>,
    stacks: (bool, bool),
) -> io::Result<CapableBpf> {
    let loaded = load_in_cgroup(
        CapableSkelBuilder::default,
        |open: &mut skel::OpenCapableSkel<'static>| {
            let rodata = super::bpf::rodata(open.maps.rodata_data.as_deref_mut())?;
            rodata.filter_tgid = pid.unwrap_or(0);
            rodata.filter_cgroup = cgroup.is_some();
            (rodata.kernel_stack, rodata.user_stack) = stacks;
            Ok(())
        },
        GroupRules::default(),
        cgroup,
        |s: &skel::CapableSkel<'static>| &s.maps.cgroup_map,
    )?;
    Ok(EventStream::new(
        loaded,
        |s: &skel::CapableSkel<'static>| (&s.maps.events, &s.maps.drops),
        CapEvent::decode,
    ))
}
