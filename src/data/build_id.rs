//! GNU build-ids: of ELF files on disk, of the running kernel
//! (`/sys/kernel/notes`), of loaded modules
//! (`/sys/module/*/notes/.note.gnu.build-id`) and of the vDSO.
//!
//! A build-id is the content hash the linker stores in an `NT_GNU_BUILD_ID`
//! note; perf.data's BUILD_ID feature and every symbol cache key on it.
//!
//! Decisions:
//! - ELF files are read through `object::ReadCache`, so only the headers and
//!   the note are read, never a whole (possibly huge) binary.
//! - Kernel note files hold raw `Elf_Nhdr` notes in native byte order with
//!   4-byte alignment; [`build_id_from_notes`] walks them with checked
//!   slicing (the kernel's bytes are outside data: no panics on them).
//! - Expected misses are `Ok(None)`: a stripped binary, a kernel built
//!   without build-ids. Errors mean the file could not be read or parsed.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use object::{Object, ReadCache};

/// `NT_GNU_BUILD_ID`, the note type of a build-id.
const NT_GNU_BUILD_ID: u32 = 3;

/// Why a build-id could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildIdError {
    /// The file could not be opened or read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file whose build-id was asked for.
        path: PathBuf,
        /// The underlying I/O error.
        source: io::Error,
    },
    /// The file was read but does not parse as an ELF object.
    #[error("{path}: not a readable object file: {source}")]
    Object {
        /// The file whose build-id was asked for.
        path: PathBuf,
        /// The `object` crate's parse error.
        source: object::Error,
    },
}

/// The build-id of the ELF file at `path`, `None` if it has none.
pub fn read_build_id(path: &Path) -> Result<Option<Vec<u8>>, BuildIdError> {
    let file = File::open(path).map_err(|source| BuildIdError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let cache = ReadCache::new(file);
    let object_err = |source| BuildIdError::Object {
        path: path.to_path_buf(),
        source,
    };
    let obj = object::File::parse(&cache).map_err(object_err)?;
    Ok(obj.build_id().map_err(object_err)?.map(<[u8]>::to_vec))
}

/// The build-id of an ELF image held in memory (e.g. the vDSO).
pub(crate) fn build_id_from_elf(data: &[u8]) -> Result<Option<Vec<u8>>, object::Error> {
    let obj = object::File::parse(data)?;
    Ok(obj.build_id()?.map(<[u8]>::to_vec))
}

/// The first GNU build-id in a raw note section (`Elf_Nhdr` + name + desc,
/// each padded to 4 bytes, native byte order), as the kernel exports them.
pub(crate) fn build_id_from_notes(mut notes: &[u8]) -> Option<Vec<u8>> {
    fn u32_at(b: &[u8], at: usize) -> Option<u32> {
        let bytes: [u8; 4] = b.get(at..at.checked_add(4)?)?.try_into().ok()?;
        Some(u32::from_ne_bytes(bytes))
    }
    fn pad4(n: usize) -> Option<usize> {
        n.checked_add(3).map(|n| n & !3)
    }
    while notes.len() >= 12 {
        let namesz = usize::try_from(u32_at(notes, 0)?).ok()?;
        let descsz = usize::try_from(u32_at(notes, 4)?).ok()?;
        let kind = u32_at(notes, 8)?;
        let name_end = 12usize.checked_add(namesz)?;
        let desc_start = 12usize.checked_add(pad4(namesz)?)?;
        let desc_end = desc_start.checked_add(descsz)?;
        let name = notes.get(12..name_end)?;
        let desc = notes.get(desc_start..desc_end)?;
        if kind == NT_GNU_BUILD_ID && name == b"GNU\0" {
            return Some(desc.to_vec());
        }
        let next = desc_start.checked_add(pad4(descsz)?)?;
        notes = notes.get(next..)?;
    }
    None
}

fn read_notes_file(path: &Path) -> Result<Option<Vec<u8>>, BuildIdError> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(build_id_from_notes(&bytes)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(BuildIdError::Io {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// The running kernel's build-id, from `/sys/kernel/notes`.
pub fn kernel_build_id() -> Result<Option<Vec<u8>>, BuildIdError> {
    read_notes_file(Path::new("/sys/kernel/notes"))
}

/// The build-id of the vDSO the kernel maps into every process, read from
/// this process's own mapping (`/proc/self/maps` + `/proc/self/mem`).
/// `None` when there is no vDSO or it cannot be read.
pub fn vdso_build_id() -> Option<Vec<u8>> {
    build_id_from_elf(crate::sys::proc::vdso_image()?)
        .ok()
        .flatten()
}

/// Lower-case hex of a build-id, as `perf buildid-list` prints it.
pub fn to_hex(build_id: &[u8]) -> String {
    use std::fmt::Write;
    build_id
        .iter()
        .fold(String::with_capacity(build_id.len() * 2), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn note(name: &[u8], kind: u32, desc: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&(name.len() as u32).to_ne_bytes());
        v.extend_from_slice(&(desc.len() as u32).to_ne_bytes());
        v.extend_from_slice(&kind.to_ne_bytes());
        v.extend_from_slice(name);
        v.resize(v.len().next_multiple_of(4), 0);
        v.extend_from_slice(desc);
        v.resize(v.len().next_multiple_of(4), 0);
        v
    }

    #[test]
    fn finds_gnu_note_after_others() {
        let mut notes = note(b"Linux\0", 0x101, &[1, 2, 3]);
        notes.extend(note(b"Xen\0", NT_GNU_BUILD_ID, &[9; 8]));
        notes.extend(note(b"GNU\0", NT_GNU_BUILD_ID, &[0xab; 20]));
        assert_eq!(build_id_from_notes(&notes), Some(vec![0xab; 20]));
    }

    #[test]
    fn truncated_or_garbage_notes_give_none() {
        let notes = note(b"GNU\0", NT_GNU_BUILD_ID, &[0xab; 20]);
        for cut in 0..notes.len() {
            assert_eq!(build_id_from_notes(&notes[..cut]), None, "cut at {cut}");
        }
        let mut huge = notes.clone();
        huge[4..8].copy_from_slice(&u32::MAX.to_ne_bytes());
        assert_eq!(build_id_from_notes(&huge), None);
    }

    #[test]
    fn own_executable_note_section_agrees() {
        // Two independent paths to the same answer: object's build_id() via
        // a ReadCache, and our note walker over the raw note section.
        use object::ObjectSection;
        let exe = std::env::current_exe().expect("current_exe");
        let data = std::fs::read(&exe).expect("read test binary");
        let obj = object::File::parse(&*data).expect("parse test binary");
        let section = obj.section_by_name(".note.gnu.build-id");
        let by_notes = section.and_then(|s| build_id_from_notes(s.data().ok()?));
        assert_eq!(read_build_id(&exe).expect("read_build_id"), by_notes);
    }

    #[test]
    fn missing_file_names_the_path() {
        let err = read_build_id(Path::new("/nonexistent/scry-test")).unwrap_err();
        assert!(err.to_string().contains("/nonexistent/scry-test"), "{err}");
    }

    #[test]
    fn hex() {
        assert_eq!(to_hex(&[0x0a, 0xff, 0x00]), "0aff00");
    }
}
