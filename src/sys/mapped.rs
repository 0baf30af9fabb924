//! Read-only file mappings: a big ELF's symbol table is scanned in place
//! instead of copied into memory first.

use std::fs::File;
use std::io;
use std::ops::Deref;
use std::path::Path;

/// A whole file mapped read-only.
#[derive(Debug)]
pub(crate) struct MappedFile(memmap2::Mmap);

impl MappedFile {
    pub(crate) fn open(path: &Path) -> io::Result<Self> {
        let file = File::open(path)?;
        // SAFETY: the mapping is private and read-only, and lives as long as
        // `self`. Another process truncating the file while it is mapped
        // would fault the reader (SIGBUS), the risk every mmap-based ELF
        // reader (blazesym included) takes with binaries, which are
        // replaced, not truncated, when they are updated.
        let map = unsafe { memmap2::Mmap::map(&file)? };
        Ok(MappedFile(map))
    }
}

impl Deref for MappedFile {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.0
    }
}
