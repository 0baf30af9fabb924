//! `scry fsslower`'s kernel side: loads `src/bpf/fsslower.bpf.c` through
//! the engine (every call's programs optional: one must attach) and
//! decodes the operations its ring buffer streams. The program's header
//! says which calls are seen and what bcc's file-system hooks see that
//! they do not.

use std::io;

use super::bpf_engine::{self, Attach, GroupRules, u32_at, u64_at};
use super::bpf_events::{EventStream, c_string_at};

super::bpf::bpf_skeleton!("fsslower.skel.rs");

use skel::FsslowerSkelBuilder;

/// The system calls traced, each an entry and an exit group.
const CALLS: &[&str] = &[
    "read",
    "readv",
    "pread64",
    "preadv",
    "preadv2",
    "write",
    "writev",
    "pwrite64",
    "pwritev",
    "pwritev2",
    "fsync",
    "fdatasync",
    "open",
    "openat",
    "openat2",
    "creat",
];

/// The longest file system name `-t` takes (the program's FS_NAME_LEN,
/// with its NUL).
pub(crate) const FS_NAME_MAX: usize = 15;

/// The program's settings (its `const volatile`s).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct FsslowerSettings {
    pub(crate) pid: Option<u32>,
    /// Operations slower than this many µs (0: all).
    pub(crate) min_us: u64,
    /// Only files of this file system type (`ext4`); at most
    /// [`FS_NAME_MAX`] bytes.
    pub(crate) fs: Option<String>,
}

/// The operation, as bcc's T column spells it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum FsOp {
    #[default]
    Read,
    Write,
    Open,
    Fsync,
}

impl FsOp {
    fn from_raw(op: u32) -> Option<FsOp> {
        Some(match op {
            0 => FsOp::Read,
            1 => FsOp::Write,
            2 => FsOp::Open,
            3 => FsOp::Fsync,
            _ => return None,
        })
    }

    /// `R`, `W`, `O` or `F`.
    pub(crate) fn letter(self) -> char {
        match self {
            FsOp::Read => 'R',
            FsOp::Write => 'W',
            FsOp::Open => 'O',
            FsOp::Fsync => 'F',
        }
    }
}

/// One slow operation.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct FsEvent {
    pub(crate) latency_us: u64,
    /// Where it started in the file (bytes).
    pub(crate) offset: i64,
    /// Bytes read or written (the call's result); 0 for opens and fsyncs.
    pub(crate) size: i64,
    pub(crate) pid: u32,
    pub(crate) tid: u32,
    pub(crate) op: FsOp,
    pub(crate) comm: String,
    /// The file system's type name (`ext4`).
    pub(crate) fs: String,
    /// The file's name (its last path component, as bcc shows it).
    pub(crate) file: String,
}

impl FsEvent {
    /// Decodes one ring record (`struct fs_event`); None when short.
    pub(crate) fn decode(r: &[u8]) -> Option<FsEvent> {
        Some(FsEvent {
            latency_us: u64_at(r, 0)?,
            offset: u64_at(r, 8)? as i64,
            size: u64_at(r, 16)? as i64,
            pid: u32_at(r, 24)?,
            tid: u32_at(r, 28)?,
            op: FsOp::from_raw(u32_at(r, 32)?)?,
            comm: c_string_at(r, 40, 16),
            fs: c_string_at(r, 56, 16),
            file: c_string_at(r, 72, 256),
        })
    }
}

/// The loaded, attached programs, streaming [`FsEvent`]s.
pub(crate) type FsslowerBpf = EventStream<FsEvent>;

/// Loads and attaches the programs.
pub(crate) fn load(settings: &FsslowerSettings) -> io::Result<FsslowerBpf> {
    let groups: Vec<String> = CALLS
        .iter()
        .flat_map(|c| [format!("scry_fss_{c}"), format!("scry_fss_{c}_exit")])
        .collect();
    let optional: Vec<&str> = groups.iter().map(String::as_str).collect();
    let fs = settings.fs.as_deref().unwrap_or("").as_bytes();
    if fs.len() > FS_NAME_MAX {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("file system name longer than {FS_NAME_MAX} bytes"),
        ));
    }
    let loaded = bpf_engine::load(
        FsslowerSkelBuilder::default,
        |open: &mut skel::OpenFsslowerSkel<'static>| {
            let rodata = super::bpf::rodata(open.maps.rodata_data.as_deref_mut())?;
            rodata.filter_tgid = settings.pid.unwrap_or(0);
            rodata.self_tgid = std::process::id();
            rodata.min_us = settings.min_us;
            for (slot, byte) in rodata.filter_fs.iter_mut().zip(fs) {
                *slot = *byte as _;
            }
            Ok(())
        },
        GroupRules::optional(&optional),
        Attach::Now,
    )?;
    loaded.require_any(
        &optional,
        "none of the system calls' tracepoints fsslower times attached here \
         (syscalls:sys_enter_read and the like, CONFIG_FTRACE_SYSCALLS)",
    )?;
    Ok(EventStream::new(
        loaded,
        |s: &skel::FsslowerSkel<'static>| (&s.maps.events, &s.maps.drops),
        FsEvent::decode,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_an_event() {
        let mut r = vec![0u8; 328];
        r[0..8].copy_from_slice(&15000u64.to_ne_bytes());
        r[8..16].copy_from_slice(&8192i64.to_ne_bytes());
        r[16..24].copy_from_slice(&4096i64.to_ne_bytes());
        r[24..28].copy_from_slice(&7u32.to_ne_bytes());
        r[32..36].copy_from_slice(&3u32.to_ne_bytes());
        r[40..43].copy_from_slice(b"db\0");
        r[56..61].copy_from_slice(b"ext4\0");
        r[72..76].copy_from_slice(b"wal\0");
        let e = FsEvent::decode(&r).unwrap();
        assert_eq!(
            (e.latency_us, e.offset, e.size, e.pid),
            (15000, 8192, 4096, 7)
        );
        assert_eq!(
            (e.op, e.fs.as_str(), e.file.as_str()),
            (FsOp::Fsync, "ext4", "wal")
        );
        r[32] = 9;
        assert!(FsEvent::decode(&r).is_none());
        assert!(FsEvent::decode(&r[..60]).is_none());
    }
}
