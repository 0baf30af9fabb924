//! Where to put a uprobe: a function of an ELF file found by name, its file
//! offset (what `uprobe_events` and the uprobe PMU take), and, from DWARF,
//! its parameters (names, types, which argument register holds each at the
//! entry) and source lines.
//!
//! Decisions:
//! - Named parameters are fetched at the function's entry through the
//!   System V x86-64 calling convention (integer and pointer parameters in
//!   di, si, dx, cx, r8, r9), not through DWARF location expressions: at the
//!   entry address, before the prologue, the ABI is exact, while location
//!   lists of optimized code often do not cover the first instruction.
//!   Parameters the ABI does not put in one integer register (structs,
//!   floats, the seventh and later) are listed by `-V` but refused as fetch
//!   arguments, with that reason.
//! - The file offset is the symbol's address mapped through the PT_LOAD
//!   segment that holds it (`svma - p_vaddr + p_offset`).
//!
//! Parsers take `&[u8]` (the file's bytes); `find_binary` is the only part
//! that looks at the file system.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use object::{Object, ObjectSegment, ObjectSymbol, SymbolKind};

/// Why a probe point could not be found.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProbeTargetError {
    /// The binary does not parse as an ELF object.
    #[error("{path}: not an ELF file we can read: {what}")]
    NotElf {
        /// The binary, as the user named it or as resolved to a path.
        path: String,
        /// The ELF parser's message.
        what: String,
    },
    /// The binary is stripped and its dynamic symbols lack the function.
    #[error(
        "{path}: the binary has no symbol table (stripped) and '{symbol}' is not among its dynamic symbols"
    )]
    NoSymbols {
        /// The binary, as the user named it or as resolved to a path.
        path: String,
        /// The function's name as asked for.
        symbol: String,
    },
    /// The symbol tables hold no symbol of that name.
    #[error("{path}: no function '{symbol}' (see 'nm -D {path}')")]
    NoSuchSymbol {
        /// The binary, as the user named it or as resolved to a path.
        path: String,
        /// The function's name as asked for.
        symbol: String,
    },
    /// The symbol exists but names data, a section or the like.
    #[error("{path}: '{symbol}' is not a function (it is {kind})")]
    NotAFunction {
        /// The binary, as the user named it or as resolved to a path.
        path: String,
        /// The function's name as asked for.
        symbol: String,
        /// What the symbol is instead ("a data object", "a section", ...).
        kind: String,
    },
    /// The symbol's address is outside every PT_LOAD segment, so it has
    /// no file offset to probe.
    #[error("{path}: '{symbol}' at {svma:#x} lies in no loadable segment")]
    NotLoaded {
        /// The binary, as the user named it or as resolved to a path.
        path: String,
        /// The function's name as asked for.
        symbol: String,
        /// The symbol's address as the ELF file states it.
        svma: u64,
    },
    /// Fetching arguments by name needs DWARF, and the binary has none for
    /// the function.
    #[error(
        "{path}: no DWARF debug info for '{symbol}' (build with -g, or fetch by register: %di, +8(%sp))"
    )]
    NoDebugInfo {
        /// The binary, as the user named it or as resolved to a path.
        path: String,
        /// The function's name as asked for.
        symbol: String,
    },
    /// The DWARF debug info is there but does not parse.
    #[error("{path}: bad DWARF: {what}")]
    BadDwarf {
        /// The binary, as the user named it or as resolved to a path.
        path: String,
        /// What the DWARF reader found wrong.
        what: String,
    },
    /// No file and no library of that name; holds the name as given.
    #[error("binary '{0}' not found (give a path, or a library name such as 'libc')")]
    NoSuchBinary(String),
}

/// A function located in a file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FunctionSite {
    pub(crate) symbol: String,
    /// The address the ELF file states.
    pub(crate) svma: u64,
    pub(crate) size: u64,
    /// Offset of the function's first byte in the file: what a uprobe
    /// attaches to.
    pub file_offset: u64,
}

/// Where a parameter lives at the function's entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ParamPlace {
    /// The n-th integer argument register (0 = di).
    Register(usize),
    /// Not in one integer register; the reason.
    Unsupported(String),
}

/// A formal parameter from DWARF.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Param {
    pub(crate) name: String,
    /// The C type as written (`const char *`, `int`, `size_t`).
    pub(crate) type_name: String,
    /// Bytes of the value (pointers 8).
    pub(crate) size: u64,
    pub(crate) signed: bool,
    /// A pointer to `char`: fetchable as `:string`.
    pub(crate) is_char_pointer: bool,
    pub(crate) place: ParamPlace,
}

/// A function's DWARF description.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct FunctionInfo {
    pub(crate) params: Vec<Param>,
    /// Source file and line of the declaration.
    pub(crate) decl_file: Option<String>,
    pub(crate) decl_line: Option<u64>,
    /// Lines of the function's body that have code, sorted, with their file.
    pub(crate) code_lines: Vec<(String, u64)>,
}

/// Finds `name` among the functions of the ELF `data` (symbol table first,
/// then the dynamic one).
pub fn find_function(
    data: &[u8],
    path: &str,
    name: &str,
) -> Result<FunctionSite, ProbeTargetError> {
    let file = object::File::parse(data).map_err(|e| ProbeTargetError::NotElf {
        path: path.to_string(),
        what: e.to_string(),
    })?;
    let (svma, size) = lookup(&file, path, name)?;
    site_at(&file, path, name, svma, size)
}

/// The address and size of function `name` among the symbols of `file`
/// (symbol table first, then the dynamic one); `path` names it in errors.
pub(crate) fn lookup(
    file: &object::File<'_>,
    path: &str,
    name: &str,
) -> Result<(u64, u64), ProbeTargetError> {
    // A stripped binary keeps only its dynamic symbols (what it exports
    // and imports): a function missing there is "no symbols", not "no such".
    let saw_symbols = file.symbols().next().is_some();
    let mut found = None;
    for sym in file.symbols().chain(file.dynamic_symbols()) {
        if sym.name() != Ok(name) || sym.is_undefined() {
            continue;
        }
        if sym.kind() != SymbolKind::Text {
            found.get_or_insert(Err(sym.kind()));
            continue;
        }
        found = Some(Ok((sym.address(), sym.size())));
        break;
    }
    match found {
        Some(Ok(v)) => Ok(v),
        Some(Err(kind)) => Err(ProbeTargetError::NotAFunction {
            path: path.to_string(),
            symbol: name.to_string(),
            kind: kind_name(kind),
        }),
        None if !saw_symbols => Err(ProbeTargetError::NoSymbols {
            path: path.to_string(),
            symbol: name.to_string(),
        }),
        None => Err(ProbeTargetError::NoSuchSymbol {
            path: path.to_string(),
            symbol: name.to_string(),
        }),
    }
}

/// The site of function `name` at `svma` (`size` bytes) in `file`: its
/// file offset through the load segment holding it.
pub(crate) fn site_at<'d>(
    file: &object::File<'d>,
    path: &str,
    name: &str,
    svma: u64,
    size: u64,
) -> Result<FunctionSite, ProbeTargetError> {
    let file_offset = file
        .segments()
        .find_map(|seg| {
            let (offset, filesz) = seg.file_range();
            let start = seg.address();
            (svma >= start && svma < start + filesz).then(|| svma - start + offset)
        })
        .ok_or_else(|| ProbeTargetError::NotLoaded {
            path: path.to_string(),
            symbol: name.to_string(),
            svma,
        })?;
    Ok(FunctionSite {
        symbol: name.to_string(),
        svma,
        size,
        file_offset,
    })
}

fn kind_name(kind: SymbolKind) -> String {
    match kind {
        SymbolKind::Data => "a data object".to_string(),
        SymbolKind::Section => "a section".to_string(),
        SymbolKind::File => "a file name".to_string(),
        SymbolKind::Tls => "thread-local data".to_string(),
        SymbolKind::Label => "a label".to_string(),
        other => format!("{other:?}").to_lowercase(),
    }
}

/// `(name, svma, size)` of every defined function symbol of `file`, its
/// symbol table's first, then its dynamic symbols (unnamed ones left out).
pub(crate) fn text_symbols<'f, 'd>(
    file: &'f object::File<'d>,
) -> impl Iterator<Item = (&'d str, u64, u64)> + 'f {
    file.symbols()
        .chain(file.dynamic_symbols())
        .filter(|s| s.kind() == SymbolKind::Text && !s.is_undefined())
        .filter_map(|s| Some((s.name().ok()?, s.address(), s.size())))
        .filter(|(name, _, _)| !name.is_empty())
}

/// Every defined function name of the ELF `data`, sorted, deduplicated
/// (for `-F`-style listings and "did you mean").
pub(crate) fn function_names(data: &[u8]) -> Vec<String> {
    let Ok(file) = object::File::parse(data) else {
        return Vec::new();
    };
    let mut names: Vec<String> = text_symbols(&file)
        .map(|(name, _, _)| name.to_string())
        .collect();
    names.sort();
    names.dedup();
    names
}

pub(crate) type Reader<'a> = gimli::EndianSlice<'a, gimli::RunTimeEndian>;

/// An ELF file's DWARF sections, borrowed or decompressed.
pub(crate) type DwarfSections<'d> = gimli::DwarfSections<Cow<'d, [u8]>>;

/// The DWARF sections of an ELF file (decompressed where they are
/// compressed, empty where missing) and its byte order; `path` names the
/// file in the one line said of a section that does not inflate.
pub(crate) fn dwarf_sections<'d>(
    file: &object::File<'d>,
    path: &str,
) -> Result<(DwarfSections<'d>, gimli::RunTimeEndian), object::Error> {
    let endian = if file.is_little_endian() {
        gimli::RunTimeEndian::Little
    } else {
        gimli::RunTimeEndian::Big
    };
    let sections = gimli::DwarfSections::load(|id| -> Result<Cow<'_, [u8]>, object::Error> {
        use object::ObjectSection;
        let Some(section) = file.section_by_name(id.name()) else {
            return Ok(Cow::Borrowed(&[][..]));
        };
        let compressed = section.compressed_data()?;
        if compressed.format == object::CompressionFormat::Zlib {
            return Ok(
                match inflate(compressed.data, compressed.uncompressed_size) {
                    Ok(data) => Cow::Owned(data),
                    Err(why) => {
                        say_uninflated(path, id.name(), &why);
                        Cow::Borrowed(&[][..])
                    }
                },
            );
        }
        compressed.decompress()
    })?;
    Ok((sections, endian))
}

/// A DWARF section above this many bytes uncompressed is not inflated.
const MAX_INFLATED_SECTION: u64 = 256 << 20;

/// A `SHF_COMPRESSED` zlib section (what Debian's -dbg packages ship),
/// inflated here with flate2 rather than through object's `compression`
/// feature (which would add a zstd crate); why not if it is bigger than
/// [`MAX_INFLATED_SECTION`] or does not inflate to its stated size.
fn inflate(data: &[u8], size: u64) -> Result<Vec<u8>, String> {
    use std::io::Read;
    if size > MAX_INFLATED_SECTION {
        return Err(format!(
            "{size} bytes inflated, over the {MAX_INFLATED_SECTION} read"
        ));
    }
    let mut out = Vec::with_capacity(usize::try_from(size).map_err(|e| e.to_string())?);
    flate2::read::ZlibDecoder::new(data)
        .take(size)
        .read_to_end(&mut out)
        .map_err(|e| e.to_string())?;
    if out.len() as u64 != size {
        return Err(format!("{} bytes inflated of the {size} stated", out.len()));
    }
    Ok(out)
}

/// Says on stderr, once per file and section in a run, that a compressed
/// DWARF section of `path` is left out, and why: the debug information
/// it holds (lines, variables) is then missing, which otherwise reads as
/// a binary built without it.
fn say_uninflated(path: &str, section: &str, why: &str) {
    use std::collections::HashSet;
    use std::sync::{Mutex, OnceLock};
    static SAID: OnceLock<Mutex<HashSet<(String, String)>>> = OnceLock::new();
    let mut said = SAID
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    if said.insert((path.to_string(), section.to_string())) {
        eprintln!(
            "scry: {path}: {section} is zlib-compressed and does not inflate ({why}): read as absent"
        );
    }
}

/// The DWARF description of the function at `svma`, or `NoDebugInfo`.
pub(crate) fn function_info(
    data: &[u8],
    path: &str,
    site: &FunctionSite,
) -> Result<FunctionInfo, ProbeTargetError> {
    let bad = |what: String| ProbeTargetError::BadDwarf {
        path: path.to_string(),
        what,
    };
    let no_info = || ProbeTargetError::NoDebugInfo {
        path: path.to_string(),
        symbol: site.symbol.clone(),
    };
    let file = object::File::parse(data).map_err(|e| bad(e.to_string()))?;
    if file.section_by_name(".debug_info").is_none() {
        return Err(no_info());
    }
    let (sections, endian) = dwarf_sections(&file, path).map_err(|e| bad(e.to_string()))?;
    let dwarf = sections.borrow(|s| gimli::EndianSlice::new(s, endian));
    let mut units = dwarf.units();
    while let Some(header) = units.next().map_err(|e| bad(e.to_string()))? {
        let unit = dwarf.unit(header).map_err(|e| bad(e.to_string()))?;
        if let Some(info) = scan_unit(&dwarf, &unit, site).map_err(|e| bad(e.to_string()))? {
            return Ok(info);
        }
    }
    Err(no_info())
}

fn scan_unit(
    dwarf: &gimli::Dwarf<Reader<'_>>,
    unit: &gimli::Unit<Reader<'_>>,
    site: &FunctionSite,
) -> gimli::Result<Option<FunctionInfo>> {
    let mut cursor = unit.entries();
    let mut inside: Option<(isize, FunctionInfo)> = None;
    let mut arg_index = 0usize;
    while let Some(entry) = cursor.next_dfs()? {
        let depth = entry.depth();
        if let Some((fn_depth, _)) = &inside
            && depth <= *fn_depth
        {
            break;
        }
        if let Some((fn_depth, info)) = &mut inside {
            if depth == *fn_depth + 1 && entry.tag() == gimli::DW_TAG_formal_parameter {
                let name = match entry.attr_value(gimli::DW_AT_name) {
                    Some(v) => dwarf.attr_string(unit, v)?.to_string_lossy().into_owned(),
                    None => format!("arg{}", arg_index + 1),
                };
                let ty = describe_type(dwarf, unit, entry.attr_value(gimli::DW_AT_type), 0)?;
                let place = if ty.by_register && arg_index < 6 {
                    ParamPlace::Register(arg_index)
                } else if arg_index >= 6 {
                    ParamPlace::Unsupported(
                        "the seventh and later arguments are on the stack".into(),
                    )
                } else {
                    ParamPlace::Unsupported(format!(
                        "a {} is not passed in one integer register",
                        ty.name
                    ))
                };
                if ty.by_register {
                    arg_index += 1;
                }
                info.params.push(Param {
                    name,
                    type_name: ty.name,
                    size: ty.size,
                    signed: ty.signed,
                    is_char_pointer: ty.char_pointer,
                    place,
                });
            }
            continue;
        }
        if entry.tag() != gimli::DW_TAG_subprogram {
            continue;
        }
        let low = match entry.attr_value(gimli::DW_AT_low_pc) {
            Some(gimli::AttributeValue::Addr(a)) => Some(a),
            Some(gimli::AttributeValue::DebugAddrIndex(i)) => dwarf.address(unit, i).ok(),
            _ => None,
        };
        if low != Some(site.svma) {
            continue;
        }
        let mut info = FunctionInfo {
            decl_line: match entry.attr_value(gimli::DW_AT_decl_line) {
                Some(gimli::AttributeValue::Udata(n)) => Some(n),
                Some(v) => v.udata_value(),
                None => None,
            },
            ..FunctionInfo::default()
        };
        if let Some(gimli::AttributeValue::FileIndex(i)) = entry.attr_value(gimli::DW_AT_decl_file)
        {
            info.decl_file = file_name(dwarf, unit, i);
        }
        inside = Some((depth, info));
    }
    let Some((_, mut info)) = inside else {
        return Ok(None);
    };
    info.code_lines = code_lines(dwarf, unit, site)?;
    Ok(Some(info))
}

struct TypeDesc {
    name: String,
    size: u64,
    signed: bool,
    char_pointer: bool,
    by_register: bool,
}

fn describe_type(
    dwarf: &gimli::Dwarf<Reader<'_>>,
    unit: &gimli::Unit<Reader<'_>>,
    attr: Option<gimli::AttributeValue<Reader<'_>>>,
    depth: usize,
) -> gimli::Result<TypeDesc> {
    let void = TypeDesc {
        name: "void".into(),
        size: 0,
        signed: false,
        char_pointer: false,
        by_register: false,
    };
    let Some(gimli::AttributeValue::UnitRef(offset)) = attr else {
        return Ok(void);
    };
    if depth > 16 {
        return Ok(void);
    }
    let entry = unit.entry(offset)?;
    let name = match entry.attr_value(gimli::DW_AT_name) {
        Some(v) => Some(dwarf.attr_string(unit, v)?.to_string_lossy().into_owned()),
        None => None,
    };
    let byte_size = entry
        .attr_value(gimli::DW_AT_byte_size)
        .and_then(|v| v.udata_value());
    let inner = entry.attr_value(gimli::DW_AT_type);
    Ok(match entry.tag() {
        gimli::DW_TAG_base_type => {
            let encoding = entry.attr_value(gimli::DW_AT_encoding);
            let is_float = matches!(encoding, Some(gimli::AttributeValue::Encoding(e)) if e == gimli::DW_ATE_float);
            let signed = matches!(encoding, Some(gimli::AttributeValue::Encoding(e))
                if e == gimli::DW_ATE_signed || e == gimli::DW_ATE_signed_char);
            let size = byte_size.unwrap_or(0);
            TypeDesc {
                name: name.unwrap_or_else(|| "?".into()),
                size,
                signed,
                char_pointer: false,
                by_register: !is_float && (1..=8).contains(&size),
            }
        }
        gimli::DW_TAG_pointer_type | gimli::DW_TAG_reference_type => {
            let target = describe_type(dwarf, unit, inner, depth + 1)?;
            let char_target = target.size == 1
                && matches!(
                    target
                        .name
                        .trim_start_matches("const ")
                        .trim_start_matches("volatile "),
                    "char" | "unsigned char" | "signed char"
                );
            TypeDesc {
                name: format!("{} *", target.name),
                size: 8,
                signed: false,
                char_pointer: char_target,
                by_register: true,
            }
        }
        gimli::DW_TAG_const_type | gimli::DW_TAG_volatile_type => {
            let mut t = describe_type(dwarf, unit, inner, depth + 1)?;
            let qual = if entry.tag() == gimli::DW_TAG_const_type {
                "const"
            } else {
                "volatile"
            };
            t.name = format!("{qual} {}", t.name);
            t
        }
        gimli::DW_TAG_typedef => {
            let mut t = describe_type(dwarf, unit, inner, depth + 1)?;
            if let Some(n) = name {
                t.name = n;
            }
            t
        }
        gimli::DW_TAG_enumeration_type => TypeDesc {
            name: format!("enum {}", name.unwrap_or_default()),
            size: byte_size.unwrap_or(4),
            signed: false,
            char_pointer: false,
            by_register: true,
        },
        tag => {
            let kind = match tag {
                gimli::DW_TAG_structure_type => "struct",
                gimli::DW_TAG_union_type => "union",
                gimli::DW_TAG_array_type => "array",
                _ => "type",
            };
            TypeDesc {
                name: format!("{kind} {}", name.unwrap_or_default())
                    .trim()
                    .to_string(),
                size: byte_size.unwrap_or(0),
                signed: false,
                char_pointer: false,
                by_register: false,
            }
        }
    })
}

pub(crate) fn file_name(
    dwarf: &gimli::Dwarf<Reader<'_>>,
    unit: &gimli::Unit<Reader<'_>>,
    index: u64,
) -> Option<String> {
    let program = unit.line_program.as_ref()?;
    let header = program.header();
    let file = header.file(index)?;
    let mut path = PathBuf::new();
    if let Some(dir) = file.directory(header) {
        let dir = dwarf.attr_string(unit, dir).ok()?;
        path.push(dir.to_string_lossy().as_ref());
    }
    let name = dwarf.attr_string(unit, file.path_name()).ok()?;
    path.push(name.to_string_lossy().as_ref());
    if path.is_relative()
        && let Some(comp_dir) = &unit.comp_dir
    {
        path = Path::new(comp_dir.to_string_lossy().as_ref()).join(path);
    }
    Some(path.to_string_lossy().into_owned())
}

fn code_lines(
    dwarf: &gimli::Dwarf<Reader<'_>>,
    unit: &gimli::Unit<Reader<'_>>,
    site: &FunctionSite,
) -> gimli::Result<Vec<(String, u64)>> {
    let Some(program) = unit.line_program.clone() else {
        return Ok(Vec::new());
    };
    let end = site.svma + site.size.max(1);
    let mut rows = program.rows();
    let mut out = Vec::new();
    while let Some((header, row)) = rows.next_row()? {
        if row.end_sequence() || row.address() < site.svma || row.address() >= end {
            continue;
        }
        let Some(line) = row.line() else { continue };
        let file = header
            .file(row.file_index())
            .and_then(|_| file_name(dwarf, unit, row.file_index()))
            .unwrap_or_default();
        out.push((file, line.get()));
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// Where a library named without a path is looked for, in this order: the
/// dynamic loader's directories (the multiarch ones first, as its cache
/// lists them), then the others.
pub(crate) const LIBRARY_DIRS: [&str; 7] = [
    "/lib/x86_64-linux-gnu",
    "/usr/lib/x86_64-linux-gnu",
    "/lib64",
    "/usr/lib64",
    "/lib",
    "/usr/lib",
    "/usr/local/lib",
];

/// The file `spec` names: a path as given, or a bare name such as `libc`
/// or `libc.so.6` looked up in the library directories and then `$PATH`.
pub fn find_binary(spec: &str) -> Result<PathBuf, ProbeTargetError> {
    let given = Path::new(spec);
    if spec.contains('/') {
        return match given.canonicalize() {
            Ok(p) if p.is_file() => Ok(p),
            _ => Err(ProbeTargetError::NoSuchBinary(spec.to_string())),
        };
    }
    let stem = spec.strip_prefix("lib").unwrap_or(spec);
    for dir in LIBRARY_DIRS {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        let mut candidates: Vec<PathBuf> = entries
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| {
                let Some(name) = p.file_name().and_then(|n| n.to_str()) else {
                    return false;
                };
                name == spec || name.starts_with(&format!("lib{stem}.so"))
            })
            .collect();
        // `libc.so` is often a linker script: prefer versioned names, and
        // take only ELF files.
        candidates.sort_by_key(|p| (!p.to_string_lossy().contains(".so."), p.as_os_str().len()));
        if let Some(p) = candidates.into_iter().find(|p| is_elf(p))
            && let Ok(real) = p.canonicalize()
        {
            return Ok(real);
        }
    }
    if let Some(paths) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&paths) {
            let p = dir.join(spec);
            if p.is_file()
                && let Ok(real) = p.canonicalize()
            {
                return Ok(real);
            }
        }
    }
    Err(ProbeTargetError::NoSuchBinary(spec.to_string()))
}

fn is_elf(path: &Path) -> bool {
    use std::io::Read;
    let mut magic = [0u8; 4];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut magic))
        .is_ok_and(|()| magic == *b"\x7fELF")
}

/// perf's group name for probes in `path`: `probe_` + the file name up to
/// its first dot, other characters than letters, digits and `_` as `_`.
pub(crate) fn probe_group(path: &Path) -> String {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = name.split('.').next().unwrap_or("");
    let clean: String = stem
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("probe_{clean}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_as_perf() {
        assert_eq!(
            probe_group(Path::new("/usr/lib/x86_64-linux-gnu/libc.so.6")),
            "probe_libc"
        );
        assert_eq!(probe_group(Path::new("/tmp/my-prog")), "probe_my_prog");
    }

    #[test]
    fn finds_libc_malloc() {
        let Ok(path) = find_binary("libc") else {
            return;
        };
        let data = std::fs::read(&path).unwrap();
        let p = path.to_string_lossy();
        let site = find_function(&data, &p, "malloc").unwrap();
        assert!(site.file_offset > 0 && site.size > 0);
        assert!(matches!(
            find_function(&data, &p, "no_such_function_here"),
            Err(ProbeTargetError::NoSymbols { .. } | ProbeTargetError::NoSuchSymbol { .. })
        ));
        assert!(matches!(
            find_function(&data, &p, "environ"),
            Err(ProbeTargetError::NotAFunction { .. })
        ));
        assert!(matches!(
            find_function(b"junk", "x", "malloc"),
            Err(ProbeTargetError::NotElf { .. })
        ));
    }
}
