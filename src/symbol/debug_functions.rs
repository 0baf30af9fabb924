//! A binary's functions together with those only its separate debug file
//! names: a stripped library (Debian's libc) keeps in `.dynsym` only what
//! it exports, and its static functions (`malloc_consolidate`,
//! `malloc_printerr`) are in the `.symtab` of the debug file a `-dbg`
//! package installs, found by build-id (`/usr/lib/debug/.build-id/`) or
//! `.gnu_debuglink`, as `binary` finds it; failing those, in the
//! MiniDebugInfo of its `.gnu_debugdata` (Fedora's). bcc, and so bpftrace,
//! list and attach to those too.
//!
//! The debug file is read only when the binary itself lacks the name: its
//! addresses are the binary's (same layout), and a function's file offset
//! comes from the binary's own load segments.

use std::collections::BTreeMap;
use std::path::Path;

use super::probe_target::{self, FunctionSite, ProbeTargetError};

/// The bytes of `path`'s separate debug file (one with `.symtab`) or of
/// its MiniDebugInfo, if it has either.
pub(crate) fn debug_data(path: &Path, data: &[u8]) -> Option<Vec<u8>> {
    let file = object::File::parse(data).ok()?;
    let debug = super::binary::debug_symbols_file(path, &file)?;
    std::fs::read(debug).ok()
}

/// Every function name of the ELF `data` (read from `path`) and of its
/// debug file, sorted, deduplicated.
pub(crate) fn function_names(path: &Path, data: &[u8]) -> Vec<String> {
    let mut names = probe_target::function_names(data);
    if let Some(debug) = debug_data(path, data) {
        names.extend(probe_target::function_names(&debug));
        names.sort();
        names.dedup();
    }
    names
}

/// Every function of the ELF `data` (read from `path`) and of its debug
/// file with its site, by name: one parse of each file for all of a
/// wildcard's probes. Where both name a function, the binary's symbol is
/// taken, as [`find_function`] takes it; one in no load segment is left
/// out (it has no file offset to probe).
pub(crate) fn function_sites(path: &Path, data: &[u8]) -> BTreeMap<String, FunctionSite> {
    let Ok(file) = object::File::parse(data) else {
        return BTreeMap::new();
    };
    let shown = path.to_string_lossy();
    let debug = debug_data(path, data);
    let debug = debug.as_deref().and_then(|d| object::File::parse(d).ok());
    let mut sites = BTreeMap::new();
    for symbols in [Some(&file), debug.as_ref()].into_iter().flatten() {
        for (name, svma, size) in probe_target::text_symbols(symbols) {
            if sites.contains_key(name) {
                continue;
            }
            if let Ok(site) = probe_target::site_at(&file, &shown, name, svma, size) {
                sites.insert(name.to_string(), site);
            }
        }
    }
    sites
}

/// Function `name` of the ELF `data` (read from `path`), or, when the
/// binary does not name it, of its debug file; the binary's error when
/// neither does.
pub(crate) fn find_function(
    path: &Path,
    data: &[u8],
    name: &str,
) -> Result<FunctionSite, ProbeTargetError> {
    let shown = path.to_string_lossy();
    let err = match probe_target::find_function(data, &shown, name) {
        Err(e @ (ProbeTargetError::NoSuchSymbol { .. } | ProbeTargetError::NoSymbols { .. })) => e,
        found => return found,
    };
    let Some(debug) = debug_data(path, data) else {
        return Err(err);
    };
    let (Ok(file), Ok(debug)) = (object::File::parse(data), object::File::parse(&*debug)) else {
        return Err(err);
    };
    let Ok((svma, size)) = probe_target::lookup(&debug, &shown, name) else {
        return Err(err);
    };
    probe_target::site_at(&file, &shown, name, svma, size)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Debian's libc with libc6-dbg installed: malloc_consolidate is
    /// static, named by the debug file alone, at the offset `nm` gives it
    /// in the debug file (libc's text is mapped at offset = address).
    #[test]
    fn a_static_function_of_a_stripped_library_is_found_through_its_debug_file() {
        let libc = Path::new("/lib/x86_64-linux-gnu/libc.so.6");
        let Ok(data) = std::fs::read(libc) else {
            return;
        };
        if debug_data(libc, &data).is_none() {
            return;
        }
        let shown = libc.to_string_lossy();
        assert!(probe_target::find_function(&data, &shown, "malloc_consolidate").is_err());
        let site = find_function(libc, &data, "malloc_consolidate").expect("in the debug file");
        assert!(site.file_offset > 0 && site.size > 0, "{site:?}");
        let names = function_names(libc, &data);
        let sites = function_sites(libc, &data);
        for name in ["malloc", "malloc_consolidate", "malloc_printerr", "mallopt"] {
            assert!(names.iter().any(|n| n == name), "{name}");
            let alone = find_function(libc, &data, name).expect(name);
            assert_eq!(sites.get(name), Some(&alone), "{name}");
        }
    }
}
