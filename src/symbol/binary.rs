//! The files behind user-space mappings: found, checked against the
//! recording's build-id, and described (load segments, where the symbols
//! are, unwind sections).
//!
//! A binary whose build-id differs from the one the recording stated (MMAP2
//! build-id or HEADER_BUILD_ID) was replaced after recording, or one that is
//! missing, is not used: a copy kept by build-id (scry's cache, then perf's
//! `~/.debug`, `data::build_id_cache`) stands in when there is one. A
//! binary without `.symtab` gets its symbols from a separate debug file when
//! one is found: `/usr/lib/debug/.build-id/xx/rest.debug`, debuginfod's
//! cache, then `.gnu_debuglink` beside the binary, in its `.debug/` folder
//! and under `/usr/lib/debug`; failing those, from its `.gnu_debugdata`
//! (MiniDebugInfo, xz-compressed: lzma-rs, pure Rust, rather than blazesym's
//! `xz` feature, which builds liblzma from C). Whatever has no symbol is
//! still placed in its function by the `.eh_frame` ranges
//! (`symbol::function_ranges`).
//!
//! Files are read through `object::ReadCache` (seek + read of just the
//! headers, notes and sections asked for), not mapped: mapping needs
//! `unsafe`, which lives in `sys` only, and reading whole files cost more
//! than everything else in a system-wide report (rustc's 150 MB
//! `librustc_driver` read three times).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use object::read::ReadCache;
use object::{Object, ObjectSection, ObjectSegment, ReadRef};

use super::function_ranges::{FunctionRanges, MAX_EH_FRAME};
use crate::data::build_id_cache::{self, hex};

/// One PT_LOAD segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Load {
    pub(crate) file_offset: u64,
    pub(crate) svma: u64,
    pub(crate) file_size: u64,
}

/// A usable binary.
#[derive(Debug)]
pub(crate) struct Binary {
    /// The file read (the original path, or the build-id cache copy).
    pub(crate) path: PathBuf,
    /// The file to read symbols from: `path` or its separate debug file.
    pub(crate) symbols_path: PathBuf,
    /// False when neither the file nor a debug file has `.symtab` (nor
    /// MiniDebugInfo): only `.dynsym` names exist.
    pub(crate) has_symtab: bool,
    /// `symbols_path` is MiniDebugInfo: it holds the functions `.dynsym`
    /// lacks, so misses there are asked of `path` too.
    pub(crate) mini_debuginfo: bool,
    /// Without `.symtab`: the functions the unwind tables delimit.
    pub(crate) functions: Option<Arc<FunctionRanges>>,
    pub(crate) loads: Vec<Load>,
}

impl Binary {
    /// The address the ELF states (svma) for a file offset.
    pub(crate) fn svma_for_offset(&self, file_offset: u64) -> Option<u64> {
        self.loads
            .iter()
            .find(|l| file_offset >= l.file_offset && file_offset - l.file_offset < l.file_size)
            .map(|l| file_offset - l.file_offset + l.svma)
    }
}

/// Why a binary cannot be used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BinaryMiss {
    Missing,
    BuildIdMismatch,
}

/// Open a file for `object` to read on demand.
pub(crate) fn open_elf(path: &Path) -> Option<ReadCache<std::fs::File>> {
    std::fs::File::open(path).ok().map(ReadCache::new)
}

/// Read a file's build-id (None if unreadable or without one).
pub fn read_build_id(path: &Path) -> Option<Vec<u8>> {
    let cache = open_elf(path)?;
    let obj = object::File::parse(&cache).ok()?;
    obj.build_id().ok().flatten().map(<[u8]>::to_vec)
}

/// Whether a file's build-id is the recorded one. perf pads recorded
/// build-ids with zeros to 20 or 24 bytes.
pub(crate) fn build_id_matches(recorded: &[u8], actual: &[u8]) -> bool {
    if actual.is_empty() {
        return false;
    }
    let n = actual.len().min(recorded.len());
    recorded.get(..n) == actual.get(..n)
        && recorded.iter().skip(n).all(|&b| b == 0)
        && actual.iter().skip(n).all(|&b| b == 0)
}

fn has_section<'d, R: ReadRef<'d>>(obj: &object::File<'d, R>, name: &str) -> bool {
    obj.section_by_name(name).is_some_and(|s| s.size() > 0)
}

fn file_has_symtab(path: &Path) -> bool {
    open_elf(path)
        .is_some_and(|cache| object::File::parse(&cache).is_ok_and(|o| has_section(&o, ".symtab")))
}

/// A separate debug file for `path` holding `.symtab`.
pub(crate) fn find_debug_file<'d, R: ReadRef<'d>>(
    path: &Path,
    obj: &object::File<'d, R>,
) -> Option<PathBuf> {
    let mut candidates = Vec::new();
    if let Some(id) = obj.build_id().ok().flatten() {
        let h = hex(id);
        if let (Some(head), Some(rest)) = (h.get(..2), h.get(2..)) {
            candidates.push(PathBuf::from(format!(
                "/usr/lib/debug/.build-id/{head}/{rest}.debug"
            )));
        }
        candidates.extend(build_id_cache::debuginfod_path(id));
    }
    if let Some((name, _crc)) = obj.gnu_debuglink().ok().flatten() {
        let name = String::from_utf8_lossy(name).into_owned();
        let dir = path.parent().unwrap_or(Path::new("/"));
        candidates.push(dir.join(&name));
        candidates.push(dir.join(".debug").join(&name));
        let rel = dir.strip_prefix("/").unwrap_or(dir);
        candidates.push(Path::new("/usr/lib/debug").join(rel).join(&name));
    }
    candidates
        .into_iter()
        .find(|c| c.as_path() != path && file_has_symtab(c))
}

/// The file holding the functions `path`'s own symbol tables lack: its
/// separate debug file, else its MiniDebugInfo (decompressed once into
/// scry's build-id cache). What uprobe targets and annotate read, as the
/// resolver does.
pub(crate) fn debug_symbols_file<'d, R: ReadRef<'d>>(
    path: &Path,
    obj: &object::File<'d, R>,
) -> Option<PathBuf> {
    find_debug_file(path, obj).or_else(|| mini_debuginfo_file(obj))
}

/// Describe the ELF file at `path`; with `recorded`, only if its build-id
/// matches (Err(()) if it does not).
fn describe(path: &Path, recorded: Option<&[u8]>) -> Option<Result<Binary, ()>> {
    let cache = open_elf(path)?;
    let obj = object::File::parse(&cache).ok()?;
    if let Some(recorded) = recorded.filter(|r| r.iter().any(|&b| b != 0)) {
        let actual = obj.build_id().ok().flatten().unwrap_or_default();
        if !build_id_matches(recorded, actual) {
            return Some(Err(()));
        }
    }
    let loads = obj
        .segments()
        .map(|s| {
            let (file_offset, file_size) = s.file_range();
            Load {
                file_offset,
                svma: s.address(),
                file_size,
            }
        })
        .collect();
    let own_symtab = has_section(&obj, ".symtab");
    let mut mini_debuginfo = false;
    let (symbols_path, has_symtab) = if own_symtab {
        (path.to_path_buf(), true)
    } else if let Some(debug) = find_debug_file(path, &obj) {
        (debug, true)
    } else if let Some(mini) = mini_debuginfo_file(&obj) {
        mini_debuginfo = true;
        (mini, true)
    } else {
        (path.to_path_buf(), false)
    };
    let functions = (!own_symtab)
        .then(|| function_ranges(&obj))
        .flatten()
        .map(Arc::new);
    Some(Ok(Binary {
        path: path.to_path_buf(),
        symbols_path,
        has_symtab,
        mini_debuginfo,
        functions,
        loads,
    }))
}

/// The function ranges of `.eh_frame`, if the file has one.
fn function_ranges<'d, R: ReadRef<'d>>(obj: &object::File<'d, R>) -> Option<FunctionRanges> {
    let eh = obj.section_by_name(".eh_frame")?;
    if eh.size() > MAX_EH_FRAME {
        return None;
    }
    let text = obj.section_by_name(".text").map_or(0, |t| t.address());
    let ranges = FunctionRanges::parse(eh.data().ok()?, eh.address(), text);
    (!ranges.is_empty()).then_some(ranges)
}

/// MiniDebugInfo sections above this are not read, nor decompressed past
/// `MAX_DEBUGDATA_OUT` (Fedora's are a few hundred KB).
const MAX_DEBUGDATA_IN: u64 = 16 << 20;
const MAX_DEBUGDATA_OUT: u64 = 256 << 20;

/// The `.gnu_debugdata` section (xz-compressed ELF with the `.symtab` of
/// the functions `.dynsym` lacks), decompressed once into scry's build-id
/// cache; its path there. Needs a build-id to be kept by.
fn mini_debuginfo_file<'d, R: ReadRef<'d>>(obj: &object::File<'d, R>) -> Option<PathBuf> {
    let section = obj.section_by_name(".gnu_debugdata")?;
    let id = obj.build_id().ok().flatten()?;
    if let Some(p) = build_id_cache::scry_path(id, "debugdata").filter(|p| p.is_file()) {
        return Some(p);
    }
    if section.size() > MAX_DEBUGDATA_IN {
        return None;
    }
    let compressed = section.data().ok()?;
    let mut out = Bounded(Vec::new());
    lzma_rs::xz_decompress(&mut std::io::BufReader::new(compressed), &mut out).ok()?;
    object::File::parse(out.0.as_slice()).ok()?;
    build_id_cache::store(id, "debugdata", out.0.as_slice()).ok()
}

/// A buffer that refuses to grow past `MAX_DEBUGDATA_OUT` (an xz stream
/// can expand a thousandfold).
struct Bounded(Vec<u8>);

impl std::io::Write for Bounded {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if (self.0.len() + buf.len()) as u64 > MAX_DEBUGDATA_OUT {
            return Err(std::io::Error::other("MiniDebugInfo too large"));
        }
        self.0.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A recorded path and build-id.
type BinaryKey = (Arc<str>, Option<Vec<u8>>);

/// Opened binaries, by path and recorded build-id.
#[derive(Debug, Default)]
pub(crate) struct BinaryCache {
    entries: HashMap<BinaryKey, Result<Arc<Binary>, BinaryMiss>>,
    /// Whether perf's `~/.debug` build-id cache may stand in for replaced or
    /// missing files. Default true.
    pub(crate) use_build_id_cache: bool,
}

impl BinaryCache {
    pub(crate) fn new(use_build_id_cache: bool) -> Self {
        BinaryCache {
            entries: HashMap::new(),
            use_build_id_cache,
        }
    }

    /// The binary for a recorded path and build-id.
    pub(crate) fn get(
        &mut self,
        path: &Arc<str>,
        recorded: Option<&[u8]>,
    ) -> Result<Arc<Binary>, BinaryMiss> {
        let key = (path.clone(), recorded.map(<[u8]>::to_vec));
        if let Some(hit) = self.entries.get(&key) {
            return hit.clone();
        }
        let found = self.open(Path::new(&**path), recorded);
        self.entries.insert(key, found.clone());
        found
    }

    fn open(&self, path: &Path, recorded: Option<&[u8]>) -> Result<Arc<Binary>, BinaryMiss> {
        let cached = || {
            if !self.use_build_id_cache {
                return None;
            }
            let p = build_id_cache::lookup(recorded?)?;
            describe(&p, recorded)?.ok().map(Arc::new)
        };
        match describe(path, recorded) {
            Some(Ok(binary)) => Ok(Arc::new(binary)),
            Some(Err(())) => cached().ok_or(BinaryMiss::BuildIdMismatch),
            None => cached().ok_or(BinaryMiss::Missing),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn build_ids_compare_through_padding() {
        let id = [1u8, 2, 3, 4];
        assert!(build_id_matches(&[1, 2, 3, 4, 0, 0, 0, 0], &id));
        assert!(!build_id_matches(&[1, 2, 3, 5, 0, 0], &id));
        assert!(!build_id_matches(&[1, 2, 3, 4], &[]));
    }

    #[test]
    fn describes_our_own_test_binary() {
        let exe = std::env::current_exe().unwrap();
        let id = read_build_id(&exe).unwrap();
        assert!(matches!(describe(&exe, Some(&[9u8; 20])), Some(Err(()))));
        let bin = describe(&exe, Some(&id)).unwrap().unwrap();
        assert!(bin.has_symtab);
        let text = bin.loads.iter().find(|l| l.file_offset > 0).unwrap();
        assert_eq!(bin.svma_for_offset(text.file_offset), Some(text.svma));
        assert_eq!(
            bin.svma_for_offset(text.file_offset + 1),
            Some(text.svma + 1)
        );
    }
}
