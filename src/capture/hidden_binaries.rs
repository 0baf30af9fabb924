//! Binaries a recording mapped that the host cannot see by their path: a
//! process in a chroot or another mount namespace (a container) maps
//! `/w/cpu7525`, which exists only under its own root.
//!
//! While the records pass (`note`, first time a path is met), such a file
//! is opened through the process's view, `/proc/PID/root/PATH`, else
//! `/proc/PID/map_files/START-END`, and the descriptor kept: the file stays
//! readable after the process exits and its root is deleted. At the end of
//! the recording (`keep`), each one's build-id goes into the file's BUILD_ID
//! feature under the recorded path, and a copy into scry's build-id cache
//! (`data::build_id_cache`, 0600), where the symbol stage finds it when the
//! path does not resolve. Only these files are copied: binaries the host
//! sees by their path cost nothing more than before.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{Seek, SeekFrom};
use std::path::Path;

use object::{Object, ReadCache};

use crate::data::build_id_cache;

/// Files larger than this are not copied (their build-id is still kept).
const MAX_COPY: u64 = 1 << 30;

/// The hidden binaries met so far, by recorded path.
#[derive(Debug, Default)]
pub(crate) struct HiddenBinaries {
    files: BTreeMap<String, File>,
}

impl HiddenBinaries {
    /// A path met for the first time in a mapping of process `pid` at
    /// `start..end`: opened through the process if the host lacks it.
    pub(crate) fn note(&mut self, pid: u32, start: u64, end: u64, path: &str) {
        if pid == 0 || u32::MAX == pid || !path.starts_with('/') || path.starts_with("//") {
            return;
        }
        if self.files.contains_key(path) || Path::new(path).exists() {
            return;
        }
        let through_root = format!("/proc/{pid}/root{path}");
        let through_map = format!("/proc/{pid}/map_files/{start:x}-{end:x}");
        if let Some(file) = [through_root, through_map]
            .iter()
            .find_map(|p| File::open(p).ok())
        {
            self.files.insert(path.to_string(), file);
        }
    }

    /// The recorded path and build-id of each file that has one, each
    /// copied into scry's build-id cache (a failed copy is skipped: the
    /// build-id still lets a later report check what it finds).
    pub(crate) fn keep(self) -> Vec<(String, Vec<u8>)> {
        let mut out = Vec::new();
        for (path, mut file) in self.files {
            let id = {
                let cache = ReadCache::new(&file);
                let Ok(obj) = object::File::parse(&cache) else {
                    continue;
                };
                match obj.build_id() {
                    Ok(Some(id)) if !id.is_empty() => id.to_vec(),
                    _ => continue,
                }
            };
            let small = file.metadata().is_ok_and(|m| m.len() <= MAX_COPY);
            if small && file.seek(SeekFrom::Start(0)).is_ok() {
                let _ = build_id_cache::store(&id, "elf", &file);
            }
            out.push((path, id));
        }
        out
    }
}
