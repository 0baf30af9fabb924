//! Files kept by build-id: where perf's and scry's caches put them, where
//! debuginfod left a debug file, and storing a copy.
//!
//! - perf's cache: `~/.debug/.build-id/xx/rest/elf` (read only: perf
//!   writes it).
//! - scry's: `$XDG_CACHE_HOME/scry/build-id/xx/rest/` (default
//!   `~/.cache/scry`), folders 0700 and files 0600 (the binaries of other
//!   people's containers are their data). `elf` is a copy of a binary that
//!   the host cannot see by its path (a process in a chroot or another
//!   mount namespace, `capture::to_file` copies it at the end of a
//!   recording); `debugdata` is a binary's decompressed `.gnu_debugdata`
//!   (MiniDebugInfo), written once so the symbolizer, which reads paths,
//!   can read it.
//! - debuginfod's client cache: `$DEBUGINFOD_CACHE_PATH`, else
//!   `$XDG_CACHE_HOME/debuginfod_client`, else
//!   `~/.cache/debuginfod_client`, then `BUILDID/debuginfo`.
//!
//! A copy is written to a temporary name and renamed into place, so a
//! reader never sees half a file, and two recorders racing both succeed.

use std::io::{self, Read, Write};
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

/// Lowercase hex of a build-id.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A recorded build-id without perf's zero padding (SHA-1 ids are 20
/// bytes; perf pads them to 24).
pub(crate) fn trimmed(build_id: &[u8]) -> &[u8] {
    if build_id.len() > 20 && build_id.iter().skip(20).all(|&b| b == 0) {
        build_id.get(..20).unwrap_or(build_id)
    } else {
        build_id
    }
}

fn home() -> PathBuf {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/root"))
}

fn xdg_cache() -> PathBuf {
    std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| home().join(".cache"))
}

/// scry's cache folder: `$XDG_CACHE_HOME/scry` (default `~/.cache/scry`).
pub(crate) fn scry_dir() -> PathBuf {
    xdg_cache().join("scry")
}

/// `xx/rest` of a build-id, or None for an empty one.
fn split(build_id: &[u8]) -> Option<(String, String)> {
    let h = hex(trimmed(build_id));
    (h.len() > 2).then(|| (h[..2].to_string(), h[2..].to_string()))
}

/// perf's build-id cache copy of a binary, if present.
pub(crate) fn perf_path(build_id: &[u8]) -> Option<PathBuf> {
    let (head, rest) = split(build_id)?;
    let p = home()
        .join(".debug/.build-id")
        .join(head)
        .join(rest)
        .join("elf");
    p.is_file().then_some(p)
}

/// Where scry keeps `leaf` (`elf`, `debugdata`) for a build-id.
pub(crate) fn scry_path(build_id: &[u8], leaf: &str) -> Option<PathBuf> {
    let (head, rest) = split(build_id)?;
    Some(scry_dir().join("build-id").join(head).join(rest).join(leaf))
}

/// A cached copy of the binary with this build-id: scry's, then perf's.
pub(crate) fn lookup(build_id: &[u8]) -> Option<PathBuf> {
    scry_path(build_id, "elf")
        .filter(|p| p.is_file())
        .or_else(|| perf_path(build_id))
}

/// The debug file debuginfod's client cached for this build-id.
pub(crate) fn debuginfod_path(build_id: &[u8]) -> Option<PathBuf> {
    let root = std::env::var_os("DEBUGINFOD_CACHE_PATH")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| xdg_cache().join("debuginfod_client"));
    let p = root.join(hex(trimmed(build_id))).join("debuginfo");
    p.is_file().then_some(p)
}

/// Stores `from` as scry's `leaf` for `build_id` (0600 in 0700 folders)
/// unless it is there already; returns its path.
pub(crate) fn store(build_id: &[u8], leaf: &str, from: impl Read) -> io::Result<PathBuf> {
    let not_found = || io::Error::new(io::ErrorKind::InvalidInput, "empty build-id");
    let path = scry_path(build_id, leaf).ok_or_else(not_found)?;
    if path.is_file() {
        return Ok(path);
    }
    write_private(&path, from)?;
    Ok(path)
}

/// Writes `from` to `path` as scry's caches are written: the file 0600,
/// its folders made 0700, through a temporary name renamed into place
/// (see the module doc).
pub(crate) fn write_private(path: &Path, mut from: impl Read) -> io::Result<()> {
    let (Some(dir), Some(leaf)) = (path.parent(), path.file_name()) else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{}: not a file's path", path.display()),
        ));
    };
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let tmp = dir.join(format!(
        ".{}.{}",
        leaf.to_string_lossy(),
        std::process::id()
    ));
    let written = (|| {
        let mut file = crate::sys::private_file::create(&tmp)?;
        io::copy(&mut from, &mut file)?;
        file.flush()?;
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_lose_their_padding() {
        assert_eq!(trimmed(&[7u8; 24]).len(), 24);
        let mut padded = [7u8; 24];
        padded[20..].fill(0);
        assert_eq!(trimmed(&padded).len(), 20);
        assert_eq!(hex(&[0xab, 0x01]), "ab01");
        assert!(split(&[1]).is_none());
    }
}
