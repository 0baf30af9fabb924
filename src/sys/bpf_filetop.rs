//! `scry filetop`'s kernel side: loads `src/bpf/filetop.bpf.c` through
//! the engine and takes its per-file, per-thread counts (read and
//! deleted, so each interval starts from zero). The hooks are chosen
//! here and nowhere else: bcc's, vfs_read and vfs_write by fentry or
//! kprobe ([`VFS_GROUPS`]), when both attach; else the read and write
//! system calls' tracepoints ([`GROUPS`], all optional, one must attach;
//! the engine's kernel-function groups, `GroupRules::functions`). What
//! the tracepoints see differently is in the program's header.

use std::io;

use super::bpf_engine::{self, Attach, GroupRules, Hook, Loaded, comm_at, u32_at, u64_at};

super::bpf::bpf_skeleton!("filetop.skel.rs");

use skel::{FiletopSkel, FiletopSkelBuilder};

/// bcc's hooks: vfs_read and vfs_write (fentry or kprobe variants).
const VFS_GROUPS: &[&str] = &["scry_k_vfs_read", "scry_k_vfs_write"];

/// The system calls' tracepoint groups (a call's entry and exit), all
/// optional.
const GROUPS: &[&str] = &[
    "scry_ft_read",
    "scry_ft_read_exit",
    "scry_ft_readv",
    "scry_ft_readv_exit",
    "scry_ft_pread64",
    "scry_ft_pread64_exit",
    "scry_ft_preadv",
    "scry_ft_preadv_exit",
    "scry_ft_preadv2",
    "scry_ft_preadv2_exit",
    "scry_ft_write",
    "scry_ft_write_exit",
    "scry_ft_writev",
    "scry_ft_writev_exit",
    "scry_ft_pwrite64",
    "scry_ft_pwrite64_exit",
    "scry_ft_pwritev",
    "scry_ft_pwritev_exit",
    "scry_ft_pwritev2",
    "scry_ft_pwritev2_exit",
];

/// The program's settings.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct FiletopSettings {
    pub(crate) pid: Option<u32>,
    /// Sockets, pipes and devices too (`-a`), not only regular files.
    pub(crate) all_files: bool,
    /// Only the files directly in this directory (-d): its inode number
    /// and device (the kernel's encoding, [`kernel_dev`]).
    pub(crate) directory: Option<(u64, u32)>,
}

/// One file's reads and writes by one thread in an interval.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct FileStat {
    pub(crate) inode: u64,
    pub(crate) dev: u32,
    pub(crate) pid: u32,
    pub(crate) tid: u32,
    pub(crate) reads: u64,
    pub(crate) read_bytes: u64,
    pub(crate) writes: u64,
    pub(crate) write_bytes: u64,
    pub(crate) comm: String,
    /// The file's name (its last path component, as bcc shows it).
    pub(crate) name: String,
    /// `R` regular, `S` socket, `O` other.
    pub(crate) kind: char,
}

impl FileStat {
    /// One map entry (`struct file_id`, `struct file_stat`); None when short.
    fn parse(key: &[u8], value: &[u8]) -> Option<FileStat> {
        Some(FileStat {
            inode: u64_at(key, 0)?,
            dev: u32_at(key, 8)?,
            pid: u32_at(key, 16)?,
            tid: u32_at(key, 20)?,
            reads: u64_at(value, 0)?,
            read_bytes: u64_at(value, 8)?,
            writes: u64_at(value, 16)?,
            write_bytes: u64_at(value, 24)?,
            comm: comm_at(value, 40, 16),
            name: comm_at(value, 56, 256),
            kind: char::from(*value.get(312)?),
        })
    }
}

/// The loaded, attached programs.
#[derive(Debug)]
pub(crate) struct FiletopBpf {
    loaded: Loaded<FiletopSkel<'static>>,
}

impl FiletopBpf {
    pub(crate) fn load(settings: FiletopSettings) -> io::Result<FiletopBpf> {
        let loaded = bpf_engine::load(
            FiletopSkelBuilder::default,
            |open: &mut skel::OpenFiletopSkel<'static>| {
                let rodata = super::bpf::rodata(open.maps.rodata_data.as_deref_mut())?;
                rodata.filter_tgid = settings.pid.unwrap_or(0);
                rodata.regular_only = !settings.all_files;
                if let Some((ino, dev)) = settings.directory {
                    rodata.dir_ino = ino;
                    rodata.dir_dev = dev;
                }
                Ok(())
            },
            GroupRules::kernel_functions(VFS_GROUPS, GROUPS, GROUPS),
            Attach::Now,
        )?;
        if !loaded.on_kernel_functions() {
            loaded.require_any(
                GROUPS,
                "none of the read and write system calls' tracepoints filetop counts attached here \
                 (syscalls:sys_enter_read and the like, CONFIG_FTRACE_SYSCALLS)",
            )?;
        }
        Ok(FiletopBpf { loaded })
    }

    pub(crate) fn hooks(&self) -> Vec<Hook> {
        self.loaded.hooks()
    }

    /// The counts since the last take (each entry read and deleted).
    pub(crate) fn take(&self) -> io::Result<Vec<FileStat>> {
        bpf_engine::take_entries(
            &self.loaded.skel.maps.entries,
            "reading filetop's counts",
            FileStat::parse,
        )
    }

    pub(crate) fn detach(&mut self) {
        self.loaded.detach();
    }
}

/// A device number as `stat` gives it (glibc's encoding) in the kernel's
/// internal one (`s_dev`: major << 20 | minor).
pub(crate) fn kernel_dev(st_dev: u64) -> u32 {
    let major = ((st_dev >> 8) & 0xfff) | ((st_dev >> 32) & !0xfff);
    let minor = (st_dev & 0xff) | ((st_dev >> 12) & !0xff);
    ((major << 20) | (minor & 0xfffff)) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_dev_is_major_shifted_20() {
        // 8:1 (sda1) and 259:3 (nvme0n1p3) as glibc's makedev gives them.
        assert_eq!(kernel_dev(0x801), (8 << 20) | 1);
        assert_eq!(kernel_dev((259 << 8) | 3), (259 << 20) | 3);
        assert_eq!(kernel_dev(0x100000 | (5 << 8)), (5 << 20) | 256);
    }

    #[test]
    fn parses_a_file_entry() {
        let mut key = vec![0u8; 24];
        key[0..8].copy_from_slice(&77u64.to_ne_bytes());
        key[16..20].copy_from_slice(&42u32.to_ne_bytes());
        key[20..24].copy_from_slice(&43u32.to_ne_bytes());
        let mut value = vec![0u8; 320];
        value[0..8].copy_from_slice(&3u64.to_ne_bytes());
        value[8..16].copy_from_slice(&3000u64.to_ne_bytes());
        value[40..44].copy_from_slice(b"dd\0\0");
        value[56..61].copy_from_slice(b"data\0");
        value[312] = b'R';
        let s = FileStat::parse(&key, &value).unwrap();
        assert_eq!(
            (s.inode, s.pid, s.tid, s.reads, s.read_bytes),
            (77, 42, 43, 3, 3000)
        );
        assert_eq!(
            (s.comm.as_str(), s.name.as_str(), s.kind),
            ("dd", "data", 'R')
        );
        assert!(FileStat::parse(&key, &value[..300]).is_none());
    }
}
