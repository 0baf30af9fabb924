//! Finding (and, as root, mounting) tracefs, and reading its event files.
//!
//! tracefs is not mounted at boot on our machines: `root()` mounts it at
//! /sys/kernel/tracing when it can. The old debugfs path is a fallback.

use std::ffi::CString;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

const TRACEFS: &str = "/sys/kernel/tracing";
const DEBUGFS_TRACING: &str = "/sys/kernel/debug/tracing";

/// The tracefs mount point, mounting it first if needed (and allowed).
pub fn root() -> io::Result<&'static Path> {
    static ROOT: OnceLock<Result<PathBuf, (io::ErrorKind, String)>> = OnceLock::new();
    let found = ROOT.get_or_init(|| find_or_mount().map_err(|e| (e.kind(), e.to_string())));
    match found {
        Ok(path) => Ok(path.as_path()),
        Err((kind, msg)) => Err(io::Error::new(*kind, msg.clone())),
    }
}

fn is_tracefs(path: &Path) -> bool {
    path.join("events").is_dir()
}

fn find_or_mount() -> io::Result<PathBuf> {
    let mut denied = None;
    for candidate in [TRACEFS, DEBUGFS_TRACING] {
        let path = Path::new(candidate);
        match std::fs::metadata(path.join("events")) {
            Ok(meta) if meta.is_dir() => return Ok(path.to_path_buf()),
            // Mounted, but closed to us (tracefs is 0700 root by default):
            // mounting again would fail and say the wrong thing.
            Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {
                denied.get_or_insert(candidate);
            }
            _ => {}
        }
    }
    if let Some(path) = denied {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "no permission to read tracefs at {path}: run as root, or open it to \
                 others as root: mount -o remount,mode=755 {path}"
            ),
        ));
    }
    mount_tracefs(Path::new(TRACEFS)).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!(
                "tracefs is not mounted and mounting it at {TRACEFS} failed ({e}); \
                 as root: mount -t tracefs nodev {TRACEFS}"
            ),
        )
    })?;
    if is_tracefs(Path::new(TRACEFS)) {
        Ok(PathBuf::from(TRACEFS))
    } else {
        Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("tracefs mounted at {TRACEFS} has no events/ directory"),
        ))
    }
}

fn mount_tracefs(target: &Path) -> io::Result<()> {
    let source = CString::new("nodev")?;
    let fstype = CString::new("tracefs")?;
    let target = CString::new(target.as_os_str().as_encoded_bytes())?;
    // SAFETY: all three pointers are valid NUL-terminated strings that outlive
    // the call; data is null, which mount(2) accepts for tracefs.
    let rc = unsafe {
        libc::mount(
            source.as_ptr(),
            target.as_ptr(),
            fstype.as_ptr(),
            0,
            std::ptr::null(),
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The directory of one tracepoint: `events/<subsystem>/<name>`.
pub(crate) fn event_dir(subsystem: &str, name: &str) -> io::Result<PathBuf> {
    Ok(root()?.join("events").join(subsystem).join(name))
}

/// The numeric id of a tracepoint (`events/<subsystem>/<name>/id`), which is
/// the `config` of a PERF_TYPE_TRACEPOINT counter.
pub(crate) fn event_id(subsystem: &str, name: &str) -> io::Result<u64> {
    let path = event_dir(subsystem, name)?.join("id");
    let text = std::fs::read_to_string(&path)?;
    text.trim().parse().map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{}: not a number: {:?}", path.display(), text.trim()),
        )
    })
}

/// Every `(subsystem, name)` tracepoint pair tracefs offers, sorted.
pub(crate) fn list_events() -> io::Result<Vec<(String, String)>> {
    let mut out = list_events_dir_order()?;
    out.sort();
    Ok(out)
}

/// As `list_events`, in the order tracefs lists its directories (the order
/// perf expands `'block:*'` in).
pub(crate) fn list_events_dir_order() -> io::Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    for subsystem in std::fs::read_dir(root()?.join("events"))? {
        let subsystem = subsystem?;
        if !subsystem.file_type()?.is_dir() {
            continue;
        }
        let sub_name = subsystem.file_name().to_string_lossy().into_owned();
        for event in std::fs::read_dir(subsystem.path())? {
            let event = event?;
            if event.file_type()?.is_dir() && event.path().join("id").exists() {
                out.push((
                    sub_name.clone(),
                    event.file_name().to_string_lossy().into_owned(),
                ));
            }
        }
    }
    Ok(out)
}
