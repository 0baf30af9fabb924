//! Where `scry memleak`'s uprobes go: the file that holds a process's
//! malloc, and the file offset of each allocator function it defines.
//!
//! The decision: a running process's allocator is the libc it has mapped
//! (`/proc/PID/maps`), else its own executable (a static binary, which
//! carries malloc when it is not stripped); a command not started yet is
//! its executable when that defines malloc itself, else, when it is
//! dynamically linked, this system's libc (what its loader will map).
//! malloc is required (without it nothing can be followed: one error
//! naming the file); the other functions are probed where they exist.
//! memleak's `-O OBJ` names the file instead (bcc's spelling: a path, or
//! a library name looked for in the process's maps first).

use std::path::{Path, PathBuf};

use object::Object;

use super::probe_target::{self, ProbeTargetError};

/// The allocator of a process: its file and the functions found in it
/// with their file offsets (malloc first).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Allocator {
    pub(crate) path: PathBuf,
    pub(crate) sites: Vec<(&'static str, u64)>,
}

/// Why no allocator could be found.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum AllocatorError {
    #[error(
        "{path}: no malloc to probe ({why}): a static or stripped binary, or an allocator other than libc's"
    )]
    NoMalloc { path: String, why: String },
    #[error("process {pid}: {what}")]
    Process { pid: u32, what: String },
    #[error("{path}: {what}")]
    Read { path: String, what: String },
}

/// The allocator of running process `pid` (see the module doc).
pub(crate) fn of_process(
    pid: u32,
    functions: &[&'static str],
) -> Result<Allocator, AllocatorError> {
    let maps = crate::sys::proc::maps(pid as i32).map_err(|e| AllocatorError::Process {
        pid,
        what: format!("reading its maps: {e}"),
    })?;
    let libc = maps
        .iter()
        .find(|m| is_libc(&m.path))
        .map(|m| m.path.clone());
    let path = match libc {
        Some(path) => PathBuf::from(path),
        None => {
            std::fs::read_link(format!("/proc/{pid}/exe")).map_err(|e| AllocatorError::Process {
                pid,
                what: format!("reading its executable: {e}"),
            })?
        }
    };
    in_file(&path, functions)
}

/// The allocator in object `spec` (memleak's -O): a path as given; a
/// library name (`c`, `jemalloc`, `libjemalloc.so.2`) first among the
/// files process `pid` maps, then in the library directories.
pub(crate) fn of_object(
    spec: &str,
    pid: Option<u32>,
    functions: &[&'static str],
) -> Result<Allocator, AllocatorError> {
    let mapped = match (spec.contains('/'), pid) {
        (false, Some(pid)) => crate::sys::proc::maps(pid as i32).ok().and_then(|maps| {
            maps.iter()
                .find(|m| names_library(&m.path, spec))
                .map(|m| PathBuf::from(&m.path))
        }),
        _ => None,
    };
    let path = match mapped {
        Some(path) => path,
        None => probe_target::find_binary(spec).map_err(|e| AllocatorError::Read {
            path: spec.to_string(),
            what: e.to_string(),
        })?,
    };
    in_file(&path, functions)
}

/// Whether the file at `path` is the library `spec` names (its file name,
/// or `lib{spec}.so*` with or without the `lib`).
fn names_library(path: &str, spec: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or("");
    let stem = spec.strip_prefix("lib").unwrap_or(spec);
    !name.is_empty() && (name == spec || name.starts_with(&format!("lib{stem}.so")))
}

/// The allocator command `program` (a path or a name on `$PATH`) will use.
pub(crate) fn of_command(
    program: &Path,
    functions: &[&'static str],
) -> Result<Allocator, AllocatorError> {
    let path = probe_target::find_binary(&program.to_string_lossy()).map_err(|e| {
        AllocatorError::Read {
            path: program.display().to_string(),
            what: e.to_string(),
        }
    })?;
    let data = read(&path)?;
    let own = probe_target::find_function(&data, &path.to_string_lossy(), "malloc");
    let dynamic = object::File::parse(&*data).is_ok_and(|f| {
        f.sections()
            .any(|s| object::ObjectSection::name(&s) == Ok(".interp"))
    });
    if own.is_ok() || !dynamic {
        return sites(&path, &data, functions);
    }
    let libc = probe_target::find_binary("libc").map_err(|e| AllocatorError::Read {
        path: "libc".to_string(),
        what: e.to_string(),
    })?;
    in_file(&libc, functions)
}

fn is_libc(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or("");
    name.starts_with("libc.so") || (name.starts_with("libc-") && name.ends_with(".so"))
}

fn read(path: &Path) -> Result<Vec<u8>, AllocatorError> {
    std::fs::read(path).map_err(|e| AllocatorError::Read {
        path: path.display().to_string(),
        what: e.to_string(),
    })
}

fn in_file(path: &Path, functions: &[&'static str]) -> Result<Allocator, AllocatorError> {
    let data = read(path)?;
    sites(path, &data, functions)
}

/// The offsets of `functions` in the ELF `data` of `path`; malloc must be
/// among them. A function at an offset an earlier one has is left out
/// (glibc's aligned_alloc and memalign are one function): one uprobe per
/// address, so one call is traced once.
fn sites(
    path: &Path,
    data: &[u8],
    functions: &[&'static str],
) -> Result<Allocator, AllocatorError> {
    let name = path.to_string_lossy();
    let mut found = Vec::new();
    for &function in functions {
        match probe_target::find_function(data, &name, function) {
            Ok(site) if found.iter().any(|&(_, at)| at == site.file_offset) => {}
            Ok(site) => found.push((function, site.file_offset)),
            Err(e) if function == "malloc" => {
                let why = match e {
                    ProbeTargetError::NoSymbols { .. } => "it has no symbol table".to_string(),
                    ProbeTargetError::NoSuchSymbol { .. } => "no such symbol".to_string(),
                    other => other.to_string(),
                };
                return Err(AllocatorError::NoMalloc {
                    path: name.into_owned(),
                    why,
                });
            }
            Err(_) => {}
        }
    }
    Ok(Allocator {
        path: path.to_path_buf(),
        sites: found,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn libc_names() {
        assert!(is_libc("/usr/lib/x86_64-linux-gnu/libc.so.6"));
        assert!(is_libc("/lib/libc-2.31.so"));
        assert!(!is_libc("/usr/lib/libcrypt.so.1"));
        assert!(!is_libc(""));
    }

    #[test]
    fn library_names_as_bcc_spells_them() {
        let libc = "/usr/lib/x86_64-linux-gnu/libc.so.6";
        assert!(names_library(libc, "c"));
        assert!(names_library(libc, "libc.so.6"));
        assert!(names_library("/opt/libjemalloc.so.2", "jemalloc"));
        assert!(!names_library("/usr/lib/libcrypt.so.1", "c"));
        assert!(!names_library("[heap]", "c"));
    }

    #[test]
    fn this_process_uses_libc_malloc() {
        let Ok(found) = of_process(std::process::id(), &["malloc", "free", "no_such_fn"]) else {
            return;
        };
        assert_eq!(found.sites.len(), 2, "{found:?}");
        assert!(found.path.to_string_lossy().contains("libc"));
    }

    #[test]
    fn one_site_per_address() {
        // glibc's mmap64 is mmap: the second name is left out.
        let Ok(found) = of_process(std::process::id(), &["malloc", "mmap", "mmap64"]) else {
            return;
        };
        assert_eq!(found.sites.len(), 2, "{found:?}");
        assert_eq!(found.sites[1].0, "mmap", "{found:?}");
    }
}
