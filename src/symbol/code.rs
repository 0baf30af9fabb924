//! The machine code of one function, for annotate: its bytes, where it
//! starts, and the DWARF line of each address that has one.
//!
//! User code is found from a sampled file offset and its offset into the
//! function (what the resolver says of an address): the function starts
//! at `file offset - symoff`, mapped to the address the ELF states (svma)
//! through the PT_LOAD segment holding it, and its length is its symbol's
//! size. A stripped binary's local functions (glibc's `__strlen_evex`)
//! have their symbol, and their lines, in its separate debug file
//! (or its MiniDebugInfo: `symbol::binary::debug_symbols_file`, as the
//! resolver named them): asked
//! when the binary itself has no symbol covering the address; the bytes
//! still come from the binary (a debug file's `.text` is empty). Kernel code is read from `/proc/kcore` (an ELF core file whose
//! segments are the kernel's virtual addresses), which needs root; its
//! length is the distance to the next kallsyms symbol. JIT code is read
//! from the JIT_CODE_LOAD record of the process's jitdump file that covers
//! it (the bytes the runtime wrote there; a perf map has none). A function is
//! bounded ([`MAX_FUNCTION_BYTES`]) before anything is allocated for it.
//! Parsers take `&[u8]`; `function_code` and `kernel_code` open the files.

use std::io;
use std::path::Path;

use object::{Object, ObjectSegment, ObjectSymbol, SymbolKind};

pub(crate) use super::jitdump::JitDump;
use super::probe_target::{Reader, dwarf_sections, file_name};

/// The longest function annotate reads (1 MiB).
pub(crate) const MAX_FUNCTION_BYTES: u64 = 1 << 20;

/// Why a function's code could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum CodeError {
    #[error("cannot read {path}")]
    Open {
        path: String,
        #[source]
        source: io::Error,
    },
    #[error("{path}: not an ELF file we can read: {what}")]
    NotElf { path: String, what: String },
    #[error("{path}: file offset {offset:#x} lies in no loadable segment")]
    NotLoaded { path: String, offset: u64 },
    #[error("{path}: no function symbol covers {svma:#x}")]
    NoSymbol { path: String, svma: u64 },
    #[error("{path}: the function at {svma:#x} is {size} bytes, more than annotate reads")]
    TooBig { path: String, svma: u64, size: u64 },
    #[error("kernel code at {addr:#x} is not in /proc/kcore's segments")]
    NotInKcore { addr: u64 },
}

/// Why annotate shows no code for a sampled function (printed under its
/// header).
#[derive(Debug, thiserror::Error)]
pub(crate) enum Unavailable {
    #[error(
        "kernel code is read from /proc/kcore, which this kernel does not have (CONFIG_PROC_KCORE)"
    )]
    NoKcore,
    #[error("kernel code is read from /proc/kcore, which needs root")]
    KcoreNeedsRoot,
    #[error("kernel code: {0}")]
    Kernel(CodeError),
    #[error("{dso}: the code is not in a file (JIT or vDSO code is gone with its process)")]
    NotInAFile { dso: String },
    #[error(
        "{dso}: the jitdump {jitdump} holds no code of at most {MAX_FUNCTION_BYTES} bytes at {addr:#x} (unreadable, cut short, or not loaded there)"
    )]
    NotInJitdump {
        dso: String,
        jitdump: String,
        addr: u64,
    },
    #[error("{dso} was rebuilt since the recording (build id {now}, recorded {recorded})")]
    Rebuilt {
        dso: String,
        now: String,
        recorded: String,
    },
    #[error("{dso} is missing or unreadable")]
    Missing { dso: String },
    #[error("{0}")]
    Code(CodeError),
}

/// `(svma, source file, line)`: an address DWARF gives a line.
pub(crate) type LineRow = (u64, String, u64);

/// One function's code.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct FunctionCode {
    /// Its name in the symbol table (raw, not demangled).
    pub(crate) symbol: String,
    /// Where it starts: the address the ELF states (kernel: the virtual
    /// address).
    pub(crate) svma: u64,
    pub(crate) bytes: Vec<u8>,
    /// `(svma, source file, line)` of the addresses DWARF gives a line,
    /// sorted by address, one row per address.
    pub(crate) lines: Vec<LineRow>,
}

/// The function of the ELF file at `path` that starts at `file_offset`.
pub(crate) fn function_code(path: &Path, file_offset: u64) -> Result<FunctionCode, CodeError> {
    let name = path.display().to_string();
    let open = |path: &Path| {
        crate::sys::mapped::MappedFile::open(path).map_err(|source| CodeError::Open {
            path: path.display().to_string(),
            source,
        })
    };
    let data = open(path)?;
    match function_code_in(&data, &name, file_offset, None) {
        Err(no_symbol @ CodeError::NoSymbol { .. }) => {
            let debug = object::File::parse(&*data)
                .ok()
                .and_then(|file| super::binary::debug_symbols_file(path, &file));
            match debug {
                Some(debug) => {
                    let shown = debug.display().to_string();
                    function_code_in(&data, &name, file_offset, Some((&shown, &open(&debug)?)))
                }
                None => Err(no_symbol),
            }
        }
        other => other,
    }
}

/// As [`function_code`], over the file's bytes; `path` names it in errors.
/// `debug`: the path and bytes of its separate debug file, whose symbols
/// and lines are used where the file has none.
pub(crate) fn function_code_in(
    data: &[u8],
    path: &str,
    file_offset: u64,
    debug: Option<(&str, &[u8])>,
) -> Result<FunctionCode, CodeError> {
    let file = object::File::parse(data).map_err(|e| CodeError::NotElf {
        path: path.to_string(),
        what: e.to_string(),
    })?;
    let svma = file
        .segments()
        .find_map(|seg| {
            let (offset, size) = seg.file_range();
            (file_offset >= offset && file_offset < offset + size)
                .then(|| seg.address() + (file_offset - offset))
        })
        .ok_or_else(|| CodeError::NotLoaded {
            path: path.to_string(),
            offset: file_offset,
        })?;
    let debug = debug.and_then(|(p, d)| Some((p, object::File::parse(d).ok()?)));
    let (start, size, symbol) = covering_symbol(&file, svma)
        .or_else(|| covering_symbol(&debug.as_ref()?.1, svma))
        .ok_or_else(|| CodeError::NoSymbol {
            path: path.to_string(),
            svma,
        })?;
    if size > MAX_FUNCTION_BYTES {
        return Err(CodeError::TooBig {
            path: path.to_string(),
            svma: start,
            size,
        });
    }
    // An unsized symbol: what is left of its segment, up to the bound.
    let start_offset = file_offset - (svma - start);
    let end_offset = if size > 0 {
        start_offset + size
    } else {
        start_offset + 256
    };
    let bytes = data
        .get(start_offset as usize..(end_offset as usize).min(data.len()))
        .unwrap_or_default()
        .to_vec();
    let end = start + bytes.len() as u64;
    let mut lines = line_rows(&file, path, start, end).unwrap_or_default();
    if lines.is_empty()
        && let Some((debug_path, debug)) = &debug
    {
        lines = line_rows(debug, debug_path, start, end).unwrap_or_default();
    }
    Ok(FunctionCode {
        symbol,
        svma: start,
        bytes,
        lines,
    })
}

/// `(start, size, name)` of the text symbol starting at `svma` (a sized
/// one over an alias without size), else of the one covering it.
fn covering_symbol(file: &object::File<'_>, svma: u64) -> Option<(u64, u64, String)> {
    let mut best: Option<(u64, u64, String)> = None;
    for sym in file.symbols().chain(file.dynamic_symbols()) {
        if sym.kind() != SymbolKind::Text || sym.is_undefined() {
            continue;
        }
        let (start, size) = (sym.address(), sym.size());
        if start > svma || svma >= start + size.max(1) {
            continue;
        }
        let better = match &best {
            None => true,
            Some((s, z, _)) => (start, size > 0) > (*s, *z > 0),
        };
        if better {
            best = Some((start, size, sym.name().unwrap_or("?").to_string()));
        }
    }
    best
}

/// DWARF line rows in `[start, end)` of `file` (read from `path`): the
/// last row of each address.
fn line_rows(
    file: &object::File<'_>,
    path: &str,
    start: u64,
    end: u64,
) -> Result<Vec<LineRow>, Box<dyn std::error::Error>> {
    if file.section_by_name(".debug_line").is_none() {
        return Ok(Vec::new());
    }
    let (sections, endian) = dwarf_sections(file, path)?;
    let dwarf = sections.borrow(|s| gimli::EndianSlice::new(s, endian));
    let mut out: Vec<LineRow> = Vec::new();
    let mut units = dwarf.units();
    while let Some(header) = units.next()? {
        let unit = dwarf.unit(header)?;
        if !covers(&dwarf, &unit, start, end)? {
            continue;
        }
        let Some(program) = unit.line_program.clone() else {
            continue;
        };
        let mut rows = program.rows();
        while let Some((_, row)) = rows.next_row()? {
            let addr = row.address();
            if row.end_sequence() || addr < start || addr >= end {
                continue;
            }
            let Some(line) = row.line() else { continue };
            let name = file_name(&dwarf, &unit, row.file_index()).unwrap_or_default();
            out.push((addr, name, line.get()));
        }
    }
    // Stable: rows of one address keep their order; the last one wins.
    out.sort_by_key(|r| r.0);
    let mut rows: Vec<LineRow> = Vec::with_capacity(out.len());
    for row in out {
        match rows.last_mut() {
            Some(last) if last.0 == row.0 => *last = row,
            _ => rows.push(row),
        }
    }
    Ok(rows)
}

/// Whether a unit's address ranges meet `[start, end)`.
fn covers(
    dwarf: &gimli::Dwarf<Reader<'_>>,
    unit: &gimli::Unit<Reader<'_>>,
    start: u64,
    end: u64,
) -> gimli::Result<bool> {
    let mut ranges = dwarf.unit_ranges(unit)?;
    while let Some(r) = ranges.next()? {
        if r.begin < end && start < r.end {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The JIT function covering virtual address `addr`, from the code bytes
/// of a jitdump file (None if it holds none for it).
pub(crate) fn jit_code(jitdump: &super::jitdump::JitDump, addr: u64) -> Option<FunctionCode> {
    let (code, bytes) = jitdump.code_at(addr, MAX_FUNCTION_BYTES)?;
    Some(FunctionCode {
        symbol: code.name,
        svma: code.start,
        bytes,
        lines: Vec::new(),
    })
}

/// `size` bytes of kernel code at virtual address `addr`, from
/// `/proc/kcore` (root only: anyone else gets the permission error).
pub(crate) fn kernel_code(addr: u64, size: u64) -> Result<Vec<u8>, CodeError> {
    use std::os::unix::fs::FileExt;
    let open = |source| CodeError::Open {
        path: "/proc/kcore".to_string(),
        source,
    };
    if size > MAX_FUNCTION_BYTES {
        return Err(CodeError::TooBig {
            path: "[kernel.kallsyms]".to_string(),
            svma: addr,
            size,
        });
    }
    let kcore = std::fs::File::open("/proc/kcore").map_err(open)?;
    let cache = object::ReadCache::new(&kcore);
    let file = object::File::parse(&cache).map_err(|e| CodeError::NotElf {
        path: "/proc/kcore".to_string(),
        what: e.to_string(),
    })?;
    let offset = file
        .segments()
        .find_map(|seg| {
            let (offset, filesz) = seg.file_range();
            let start = seg.address();
            (addr >= start && addr + size <= start + filesz).then(|| offset + (addr - start))
        })
        .ok_or(CodeError::NotInKcore { addr })?;
    let mut bytes = vec![0u8; size as usize];
    kcore.read_exact_at(&mut bytes, offset).map_err(open)?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_function_of_this_test_binary_with_its_lines() {
        // This very test binary: find a function's file offset through
        // its own symbol table, then read it back by offset.
        let exe = std::env::current_exe().unwrap();
        let data = std::fs::read(&exe).unwrap();
        let file = object::File::parse(&*data).unwrap();
        let sym = file
            .symbols()
            .find(|s| {
                s.kind() == SymbolKind::Text
                    && s.size() > 16
                    && s.name().is_ok_and(|n| n.contains("function_code_in"))
            })
            .expect("function_code_in in the symbol table");
        let offset = file
            .segments()
            .find_map(|seg| {
                let (off, size) = seg.file_range();
                let a = sym.address();
                (a >= seg.address() && a < seg.address() + size).then(|| a - seg.address() + off)
            })
            .unwrap();
        // An offset inside the function finds its start.
        let code = function_code_in(&data, "self", offset + 4, None).unwrap();
        assert_eq!(code.svma, sym.address());
        assert_eq!(code.bytes.len() as u64, sym.size());
        assert!(code.lines.iter().any(|(_, f, _)| f.ends_with("code.rs")));
        assert!(code.lines.windows(2).all(|w| w[0].0 < w[1].0));
        assert!(matches!(
            function_code_in(b"not elf", "junk", 0, None),
            Err(CodeError::NotElf { .. })
        ));
    }
}
