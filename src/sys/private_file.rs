//! Files that hold other processes' data (perf.data, folded stacks, SVGs,
//! trace and count output: command lines, paths, addresses) are created
//! readable by their owner only, 0600, as perf creates perf.data. A regular
//! file that existed with wider permissions is narrowed too; anything else
//! (`/dev/null`, a FIFO) stays what it is.

use std::fs::{File, OpenOptions, Permissions};
use std::io;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// Creates (or truncates) `path` for writing, mode 0600.
pub(crate) fn create(path: &Path) -> io::Result<File> {
    let file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    let meta = file.metadata()?;
    if meta.is_file() && meta.permissions().mode() & 0o077 != 0 {
        file.set_permissions(Permissions::from_mode(0o600))?;
    }
    Ok(file)
}
