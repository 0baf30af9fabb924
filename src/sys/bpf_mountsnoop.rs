//! `scry mountsnoop`'s kernel side: loads `src/bpf/mountsnoop.bpf.c`
//! through the engine and decodes the mount(2) and umount(2) calls its
//! ring streams (see the program's header). Both calls' tracepoints are
//! required: without them nothing can be traced.

use std::io;

use super::bpf_engine::{GroupRules, u32_at, u64_at};
use super::bpf_events::{EventStream, c_string_at, i32_at};

super::bpf::bpf_skeleton!("mountsnoop.skel.rs");

use skel::MountsnoopSkelBuilder;

/// The calls traced, in the program's order (`enum mount_call`).
pub(crate) const CALLS: [&str; 2] = ["mount", "umount"];

/// One mount or umount call, as the kernel saw it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct MountEvent {
    /// From the call's entry to its return, ns.
    pub(crate) delta_ns: u64,
    /// The mount flags (MS_*) as given.
    pub(crate) flags: u64,
    pub(crate) pid: u32,
    pub(crate) tid: u32,
    /// The inode number of the caller's mount namespace.
    pub(crate) mnt_ns: u32,
    /// 0, or minus the errno.
    pub(crate) ret: i32,
    /// The call's name (one of [`CALLS`]).
    pub(crate) call: &'static str,
    pub(crate) comm: String,
    /// The file system type (mount only).
    pub(crate) fs: String,
    /// The source (mount only).
    pub(crate) src: String,
    /// The mount point.
    pub(crate) dest: String,
    /// The options string (mount only).
    pub(crate) data: String,
}

/// The strings' room in `struct mount_event`.
const TEXT_LEN: usize = 256;

impl MountEvent {
    /// Decodes one ring record (`struct mount_event`); None when short.
    pub(crate) fn decode(r: &[u8]) -> Option<MountEvent> {
        let call = usize::try_from(u32_at(r, 32)?).ok()?;
        let text = |n: usize| c_string_at(r, 52 + n * TEXT_LEN, TEXT_LEN);
        r.get(52 + 4 * TEXT_LEN - 1)?;
        Some(MountEvent {
            delta_ns: u64_at(r, 0)?,
            flags: u64_at(r, 8)?,
            pid: u32_at(r, 16)?,
            tid: u32_at(r, 20)?,
            mnt_ns: u32_at(r, 24)?,
            ret: i32_at(r, 28)?,
            call: CALLS.get(call).copied().unwrap_or("?"),
            comm: c_string_at(r, 36, 16),
            fs: text(0),
            src: text(1),
            dest: text(2),
            data: text(3),
        })
    }
}

/// The loaded, attached programs, streaming [`MountEvent`]s.
pub(crate) type MountsnoopBpf = EventStream<MountEvent>;

/// Loads and attaches the programs; `pid`: only this process's calls.
pub(crate) fn load(pid: Option<u32>) -> io::Result<MountsnoopBpf> {
    EventStream::load(
        MountsnoopSkelBuilder::default,
        |open: &mut skel::OpenMountsnoopSkel<'static>| {
            let rodata = super::bpf::rodata(open.maps.rodata_data.as_deref_mut())?;
            rodata.filter_tgid = pid.unwrap_or(0);
            Ok(())
        },
        GroupRules::default(),
        |s: &skel::MountsnoopSkel<'static>| (&s.maps.events, &s.maps.drops),
        MountEvent::decode,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_a_record_and_refuses_a_short_one() {
        let mut r = vec![0u8; 52 + 4 * TEXT_LEN];
        r[0..8].copy_from_slice(&1500u64.to_ne_bytes());
        r[8..16].copy_from_slice(&1u64.to_ne_bytes());
        r[16..20].copy_from_slice(&7u32.to_ne_bytes());
        r[28..32].copy_from_slice(&(-2i32).to_ne_bytes());
        r[32..36].copy_from_slice(&1u32.to_ne_bytes());
        r[36..41].copy_from_slice(b"mount");
        r[52 + 2 * TEXT_LEN..52 + 2 * TEXT_LEN + 4].copy_from_slice(b"/mnt");
        let e = MountEvent::decode(&r).expect("decodes");
        assert_eq!((e.delta_ns, e.flags, e.pid, e.ret), (1500, 1, 7, -2));
        assert_eq!(
            (e.call, e.comm.as_str(), e.dest.as_str()),
            ("umount", "mount", "/mnt")
        );
        assert!(MountEvent::decode(&r[..100]).is_none());
    }
}
