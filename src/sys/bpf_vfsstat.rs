//! `scry vfsstat`'s kernel side: loads `src/bpf/vfsstat.bpf.c` through the
//! engine (each call's program optional: one must attach) and reads its
//! counters (what each counts is in the program's header). bcc's hooks
//! (the VFS functions by fentry, else kprobe) count when all five attach;
//! else the system-call tracepoints do (the engine's kernel-function
//! groups, `GroupRules::functions`).

use std::io;

use super::bpf_engine::{self, Attach, GroupRules, Hook, Loaded, u64_at};

super::bpf::bpf_skeleton!("vfsstat.skel.rs");

use skel::{VfsstatSkel, VfsstatSkelBuilder};

/// The counters, in the program's order (`enum vfs_stat`).
pub(crate) const COLUMNS: [&str; 5] = ["READ", "WRITE", "FSYNC", "OPEN", "CREATE"];

/// bcc's hooks: the VFS functions (fentry or kprobe variants).
const VFS_GROUPS: &[&str] = &[
    "scry_k_vfs_read",
    "scry_k_vfs_write",
    "scry_k_vfs_fsync_range",
    "scry_k_vfs_open",
    "scry_k_vfs_create",
];

/// The system-call tracepoints' groups: all optional (open and creat do
/// not exist on every architecture).
const GROUPS: &[&str] = &[
    "scry_vfs_read",
    "scry_vfs_readv",
    "scry_vfs_pread64",
    "scry_vfs_preadv",
    "scry_vfs_preadv2",
    "scry_vfs_write",
    "scry_vfs_writev",
    "scry_vfs_pwrite64",
    "scry_vfs_pwritev",
    "scry_vfs_pwritev2",
    "scry_vfs_fsync",
    "scry_vfs_fdatasync",
    "scry_vfs_open",
    "scry_vfs_open_exit",
    "scry_vfs_openat",
    "scry_vfs_openat_exit",
    "scry_vfs_creat",
    "scry_vfs_creat_exit",
    "scry_vfs_openat2",
    "scry_vfs_openat2_exit",
];

/// The loaded, attached programs.
#[derive(Debug)]
pub(crate) struct VfsstatBpf {
    loaded: Loaded<VfsstatSkel<'static>>,
}

impl VfsstatBpf {
    /// Loads and attaches the programs; `pid`: only this process's calls.
    pub(crate) fn load(pid: Option<u32>) -> io::Result<VfsstatBpf> {
        let loaded = bpf_engine::load(
            VfsstatSkelBuilder::default,
            |open: &mut skel::OpenVfsstatSkel<'static>| {
                let rodata = super::bpf::rodata(open.maps.rodata_data.as_deref_mut())?;
                rodata.filter_tgid = pid.unwrap_or(0);
                Ok(())
            },
            GroupRules::kernel_functions(VFS_GROUPS, GROUPS, GROUPS),
            Attach::Now,
        )?;
        if !loaded.on_kernel_functions() && !GROUPS.iter().any(|g| loaded.has(g)) {
            return Err(io::Error::other(
                "none of the syscalls tracepoints vfsstat counts attached here",
            ));
        }
        Ok(VfsstatBpf { loaded })
    }

    pub(crate) fn hooks(&self) -> Vec<Hook> {
        self.loaded.hooks()
    }

    /// The counters since the programs attached, in [`COLUMNS`] order.
    pub(crate) fn read(&self) -> io::Result<[u64; 5]> {
        let values = bpf_engine::array_values(
            &self.loaded.skel.maps.counts,
            COLUMNS.len() as u32,
            "reading vfsstat's counters",
        )?;
        let mut counts = [0u64; 5];
        for (count, value) in counts.iter_mut().zip(&values) {
            *count = u64_at(value, 0).unwrap_or(0);
        }
        Ok(counts)
    }
}
