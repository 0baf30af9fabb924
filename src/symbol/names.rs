//! Addresses of one binary in, names out: the blazesym wrapper, the vDSO
//! table and demangling.
//!
//! One `blazesym::Symbolizer` lives as long as the resolver and is asked once
//! per binary with all of that binary's addresses, sorted (blazesym keeps its
//! parsed ELF files, so later batches are cheap too). Names come from the ELF
//! symbol tables (`.symtab`, then `.dynsym`) as perf's do; DWARF is read only
//! in `--inline` mode, for inlined frames. blazesym's own demangling is off:
//! `demangle` here follows perf (Rust legacy names lose their hash, C++ names
//! lose their parameter lists) and can be turned off for raw names.
//!
//! Aliases (several symbols at one address, common in libc: `__mmap`,
//! `mmap`, `mmap64`, `__GI___mmap`) are settled as perf settles them
//! (`choose_best_symbol`), checked against perf 6.1 on Debian's libc and
//! ld.so: in symbol-table order, a sized symbol beats an unsized one, then
//! a non-weak one a weak one, a global one a local one, fewer leading
//! underscores more, a longer name a shorter one, and on a tie the first
//! stays (libc: `__mmap`, `__munmap`, `_exit`; ld.so: `mmap64`, `munmap`).
//! blazesym's pick is replaced by that one: the symbol table is scanned for
//! the starts blazesym returned (only those), and each start's pick is kept
//! for later batches.
//!
//! Symbol versions are not part of a name: glibc's `.symtab` (in its
//! separate debug file) lists `clock_nanosleep@GLIBC_2.2.5` and
//! `clock_nanosleep@@GLIBC_2.17` at one address, and which of the two a
//! tool shows differs between perf versions. Every name loses its `@VERSION`
//! / `@@VERSION` tail here (`strip_version`), so scry prints
//! `clock_nanosleep` everywhere and output compares across tools; perf's
//! synthesized `foo@plt` names keep their suffix.
//!
//! The vDSO is not on disk: its bytes are read once from this process's own
//! mapping through `/proc/self/mem` (the same kernel image serves every
//! process) and its `.dynsym` is searched here.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use blazesym::symbolize::source::{Elf, Source};
use blazesym::symbolize::{Input, Symbolized, Symbolizer};
use object::{Object, ObjectSymbol, SymbolKind};

use super::process::{FxMap, FxSet};

/// One name for an address: the function, and for `--inline` the functions
/// inlined into it at that address, outermost first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Names {
    pub(crate) function: String,
    /// The address's offset into `function` (perf's `symoff`), if known.
    pub(crate) offset: Option<u64>,
    /// `file:line` of the address (base name), with `ElfNames::with_srcline`
    /// and DWARF line info; otherwise `function+offset` in decimal, as perf
    /// prints an address it has no line for.
    pub(crate) srcline: Option<String>,
    pub(crate) inlined: Vec<String>,
}

/// `name` without a symbol-version tail (`clock_nanosleep@@GLIBC_2.17` →
/// `clock_nanosleep`); `@plt` stubs and names starting with `@` are kept.
pub(crate) fn strip_version(name: &str) -> &str {
    match name.find('@') {
        Some(at) if at > 0 && !name[at..].eq_ignore_ascii_case("@plt") => &name[..at],
        _ => name,
    }
}

/// Demangle a Rust or C++ symbol the way perf prints it (C++ without the
/// parameter list, perf adds it only with `-v`); other names are returned
/// unchanged.
pub(crate) fn demangle(name: &str) -> String {
    let rust_legacy = name.starts_with("_ZN") && looks_like_rust_hash(name);
    if (rust_legacy || name.starts_with("_R"))
        && let Ok(d) = rustc_demangle::try_demangle(name)
    {
        return format!("{d:#}");
    }
    if name.starts_with("_Z")
        && let Ok(sym) = cpp_demangle::Symbol::new(name)
        && let Ok(d) = sym.demangle(
            &cpp_demangle::DemangleOptions::new()
                .no_params()
                .no_return_type(),
        )
    {
        return d;
    }
    name.to_string()
}

/// Legacy Rust names end in `17h<16 hex digits>E`.
fn looks_like_rust_hash(name: &str) -> bool {
    let Some(body) = name.strip_suffix('E') else {
        return false;
    };
    let Some(idx) = body.len().checked_sub(17) else {
        return false;
    };
    let Some(tail) = body.get(idx..) else {
        return false;
    };
    let prefix_ok = body.get(..idx).is_some_and(|p| p.ends_with("17"));
    prefix_ok
        && tail.starts_with('h')
        && tail
            .get(1..)
            .is_some_and(|h| h.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// What an `ElfNames` was made with.
#[derive(Clone, Copy, Debug)]
pub(crate) struct NamesConfig {
    inline: bool,
    demangle: bool,
    srcline: bool,
}

impl NamesConfig {
    /// A fresh `ElfNames` with this configuration.
    pub(crate) fn build(self) -> ElfNames {
        let names = ElfNames::new(self.inline, self.demangle);
        if self.srcline {
            names.with_srcline()
        } else {
            names
        }
    }
}

/// The blazesym symbolizer, configured once.
pub(crate) struct ElfNames {
    symbolizer: Symbolizer,
    inline: bool,
    demangle: bool,
    /// A second symbolizer reading DWARF line info, for `srcline`; names
    /// still come from the symbol tables (DWARF names and alias choices
    /// differ from perf's).
    lines: Option<Symbolizer>,
    /// Per symbol file: symbol start → perf's pick among its aliases, for
    /// the starts met so far (`None`: the start has one name).
    aliases: HashMap<PathBuf, FxMap<u64, Option<String>>>,
    /// Per symbol file: the bytes of its DWARF sections, 0 without line
    /// info (`.debug_line`); only files with it are asked of `lines`.
    dwarf_bytes: HashMap<PathBuf, u64>,
}

/// DWARF of this many bytes in a file (its `.debug_*` sections as stored)
/// is dropped after each batch instead of kept to the end.
const KEPT_DWARF_BYTES: u64 = 16 << 20;

/// The bytes of the `.debug_*` sections of the ELF file at `path`; 0 when it
/// has no `.debug_line`.
fn dwarf_bytes(path: &Path) -> u64 {
    use object::ObjectSection;
    let Ok(map) = crate::sys::mapped::MappedFile::open(path) else {
        return 0;
    };
    let Ok(obj) = object::File::parse(&*map) else {
        return 0;
    };
    if obj
        .section_by_name(".debug_line")
        .is_none_or(|s| s.size() == 0)
    {
        return 0;
    }
    obj.sections()
        .filter(|s| s.name().is_ok_and(|n| n.starts_with(".debug_")))
        .map(|s| {
            s.compressed_file_range()
                .map_or(s.size(), |r| r.compressed_size)
        })
        .sum()
}

/// perf's pick among the aliases at each of `starts` (symbol start
/// addresses blazesym returned) that has more than one name. Only the
/// starts asked about are tallied: a big library's symbol table has 100k+
/// functions, of which a profile meets a few thousand.
fn alias_picks(path: &Path, starts: &FxSet<u64>) -> FxMap<u64, String> {
    use object::ObjectSection;
    let Ok(map) = crate::sys::mapped::MappedFile::open(path) else {
        return FxMap::default();
    };
    let Ok(obj) = object::File::parse(&*map) else {
        return FxMap::default();
    };
    // The sections are scanned in place, in the mapping: a big library's
    // .symtab and .strtab are tens of MB, and most of it is never touched.
    let section = |name: &str| obj.section_by_name(name).and_then(|s| s.data().ok());
    let (syms, strs) = match (section(".symtab"), section(".strtab")) {
        (Some(syms), Some(strs)) if !syms.is_empty() => (syms, strs),
        _ => match (section(".dynsym"), section(".dynstr")) {
            (Some(syms), Some(strs)) => (syms, strs),
            _ => return FxMap::default(),
        },
    };
    if !obj.is_little_endian() || !obj.is_64() {
        return FxMap::default();
    }
    alias_picks_from(syms, strs, starts)
}

/// `alias_picks` over raw little-endian Elf64_Sym entries and their strings.
fn alias_picks_from(syms: &[u8], strs: &[u8], starts: &FxSet<u64>) -> FxMap<u64, String> {
    const STT_FUNC: u8 = 2;
    const STT_GNU_IFUNC: u8 = 10;
    let name_at = |off: u32| {
        let rest = strs.get(off as usize..)?;
        let end = rest.iter().position(|&b| b == 0)?;
        std::str::from_utf8(rest.get(..end)?).ok()
    };
    // Per start: how many names, and the pick so far.
    let mut best: FxMap<u64, (u32, Alias)> = FxMap::default();
    for e in syms.chunks_exact(24) {
        let u32_at = |i: usize| e.get(i..i + 4)?.try_into().ok().map(u32::from_le_bytes);
        let u64_at = |i: usize| e.get(i..i + 8)?.try_into().ok().map(u64::from_le_bytes);
        let (Some(&info), Some(name), Some(value), Some(size)) =
            (e.get(4), u32_at(0), u64_at(8), u64_at(16))
        else {
            continue;
        };
        if !matches!(info & 0xf, STT_FUNC | STT_GNU_IFUNC) || value == 0 || !starts.contains(&value)
        {
            continue;
        }
        let Some(name) = name_at(name) else { continue };
        let alias = Alias {
            size,
            bind: info >> 4,
            name,
        };
        match best.get_mut(&value) {
            Some((count, cur)) => {
                *count += 1;
                if alias.replaces(cur) {
                    *cur = alias;
                }
            }
            None => {
                best.insert(value, (1, alias));
            }
        }
    }
    best.into_iter()
        .filter(|(_, (count, _))| *count > 1)
        .map(|(addr, (_, alias))| (addr, alias.name.to_string()))
        .collect()
}

/// One of the names at a symbol start, with what perf weighs.
#[derive(Clone, Copy, Debug)]
struct Alias<'a> {
    size: u64,
    /// The ELF binding (STB_LOCAL 0, STB_GLOBAL 1, STB_WEAK 2).
    bind: u8,
    name: &'a str,
}

impl Alias<'_> {
    /// Whether this alias, listed after the current pick `cur`, replaces
    /// it: perf's `choose_best_symbol(cur, self)` choosing the second.
    fn replaces(&self, cur: &Alias<'_>) -> bool {
        const STB_GLOBAL: u8 = 1;
        const STB_WEAK: u8 = 2;
        let underscores = |n: &str| n.bytes().take_while(|&c| c == b'_').count();
        let first_differs = [
            (cur.size != 0, self.size != 0),
            (cur.bind != STB_WEAK, self.bind != STB_WEAK),
            (cur.bind == STB_GLOBAL, self.bind == STB_GLOBAL),
        ]
        .into_iter()
        .find(|(a, b)| a != b);
        if let Some((_, mine)) = first_differs {
            return mine;
        }
        match underscores(cur.name).cmp(&underscores(self.name)) {
            std::cmp::Ordering::Greater => return true,
            std::cmp::Ordering::Less => return false,
            std::cmp::Ordering::Equal => {}
        }
        self.name.len() > cur.name.len()
    }
}

impl std::fmt::Debug for ElfNames {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ElfNames")
            .field("inline", &self.inline)
            .field("demangle", &self.demangle)
            .finish()
    }
}

impl ElfNames {
    pub(crate) fn new(inline: bool, demangle: bool) -> Self {
        let symbolizer = Symbolizer::builder()
            .enable_demangling(false)
            .enable_code_info(inline)
            .enable_inlined_fns(inline)
            .build();
        ElfNames {
            symbolizer,
            inline,
            demangle,
            lines: None,
            aliases: HashMap::new(),
            dwarf_bytes: HashMap::new(),
        }
    }

    /// Also finds each address's source line (`Names::srcline`).
    pub(crate) fn with_srcline(mut self) -> Self {
        self.lines = Some(Symbolizer::builder().enable_code_info(true).build());
        self
    }

    /// How this one is configured, to make another like it on another
    /// thread (blazesym's symbolizer is not `Send`).
    pub(crate) fn config(&self) -> NamesConfig {
        NamesConfig {
            inline: self.inline,
            demangle: self.demangle,
            srcline: self.lines.is_some(),
        }
    }

    /// `file:line` (base name) of each svma, from DWARF; `None` where the
    /// file has no line for it.
    ///
    /// Only a file with `.debug_line` is read (the others would be parsed
    /// a second time, symbol table and all, for nothing), and a big one's
    /// parsed DWARF is dropped after each batch (`KEPT_DWARF_BYTES`),
    /// unlike its symbol table: kept to the end, the second symbol tables
    /// of every binary a system-wide file touched and the DWARF of the
    /// debug builds among them were most of a big file's memory (bench
    /// export.sh's 127 MB system-wide recording: the pprof export peaked
    /// at 610 MB, 486 MB now; `scry report` 352 MB). A small one (libc's
    /// debug file) is kept: it is in every batch, and inflating its
    /// compressed sections again each time doubled the time.
    fn source_lines(&mut self, path: &Path, svmas: &[u64]) -> Vec<Option<String>> {
        let Some(lines) = &mut self.lines else {
            return vec![None; svmas.len()];
        };
        let bytes = *self
            .dwarf_bytes
            .entry(path.to_path_buf())
            .or_insert_with(|| dwarf_bytes(path));
        if bytes == 0 {
            return vec![None; svmas.len()];
        }
        let mut src = Elf::new(path);
        src.debug_syms = true;
        let found: Vec<Option<String>> =
            match lines.symbolize(&Source::Elf(src), Input::VirtOffset(svmas)) {
                Ok(results) => results
                    .into_iter()
                    .map(|r| {
                        let Symbolized::Sym(sym) = r else { return None };
                        let info = sym.code_info?;
                        let file = Path::new(&*info.file).file_name()?.to_string_lossy();
                        Some(format!("{file}:{}", info.line?))
                    })
                    .collect(),
                Err(_) => vec![None; svmas.len()],
            };
        if bytes >= KEPT_DWARF_BYTES {
            let _ = lines.evict(&blazesym::symbolize::evict::Elf::new(path).into());
        }
        found
    }

    fn finish(&self, raw: &str) -> String {
        let raw = strip_version(raw);
        if self.demangle {
            demangle(raw)
        } else {
            raw.to_string()
        }
    }

    /// Drops what is cached for `path` (its parsed symbols, its alias
    /// picks): a one-shot resolve names each file in one batch, and keeping
    /// every big library's tables until the end only raises peak memory.
    pub(crate) fn forget(&mut self, path: &Path) {
        let evict = || blazesym::symbolize::evict::Elf::new(path).into();
        let _ = self.symbolizer.evict(&evict());
        if let Some(lines) = &mut self.lines {
            let _ = lines.evict(&evict());
        }
        self.aliases.remove(path);
    }

    /// Name the svmas of one file, in order; `None` where no symbol covers
    /// the address. An error means the file could not be parsed at all.
    pub(crate) fn symbolize(
        &mut self,
        path: &Path,
        svmas: &[u64],
    ) -> Result<Vec<Option<Names>>, blazesym::Error> {
        let lines = self.source_lines(path, svmas);
        let mut src = Elf::new(path);
        src.debug_syms = self.inline;
        let src = Source::Elf(src);
        let results = self.symbolizer.symbolize(&src, Input::VirtOffset(svmas))?;
        let known = self.aliases.entry(path.to_path_buf()).or_default();
        if !self.inline {
            let new: FxSet<u64> = results
                .iter()
                .filter_map(|r| match r {
                    Symbolized::Sym(sym) if !known.contains_key(&sym.addr) => Some(sym.addr),
                    _ => None,
                })
                .collect();
            if !new.is_empty() {
                let mut picks = alias_picks(path, &new);
                for start in new {
                    known.insert(start, picks.remove(&start));
                }
            }
        }
        let known = &self.aliases[path];
        Ok(results
            .into_iter()
            .zip(lines)
            .map(|(r, line)| match r {
                Symbolized::Sym(sym) => Some(Names {
                    function: self.finish(
                        known
                            .get(&sym.addr)
                            .and_then(Option::as_deref)
                            .unwrap_or(&sym.name),
                    ),
                    offset: Some(sym.offset as u64),
                    srcline: line.or_else(|| {
                        self.lines
                            .as_ref()
                            .map(|_| format!("{}+{}", strip_version(&sym.name), sym.offset))
                    }),
                    inlined: sym.inlined.iter().map(|f| self.finish(&f.name)).collect(),
                }),
                Symbolized::Unknown(_) => None,
            })
            .collect())
    }
}

/// The vDSO's function symbols, sorted by address.
#[derive(Debug, Default)]
pub(crate) struct VdsoSymbols {
    syms: Vec<(u64, u64, String)>,
    /// File offset → svma of the vDSO image (its PT_LOAD).
    load_bias: i64,
}

impl VdsoSymbols {
    /// Read this process's vDSO; empty if it has none or cannot be read.
    pub(crate) fn from_self() -> Self {
        Self::read_self().unwrap_or_default()
    }

    fn read_self() -> Option<Self> {
        Self::parse(crate::sys::proc::vdso_image()?)
    }

    /// Parse vDSO ELF bytes.
    pub(crate) fn parse(data: &[u8]) -> Option<Self> {
        use object::ObjectSegment;
        let obj = object::File::parse(data).ok()?;
        let load_bias = obj
            .segments()
            .next()
            .map(|s| s.address() as i64 - s.file_range().0 as i64)
            .unwrap_or(0);
        let mut syms: Vec<(u64, u64, String)> = obj
            .dynamic_symbols()
            .chain(obj.symbols())
            .filter(|s| s.kind() == SymbolKind::Text && s.address() != 0)
            .filter_map(|s| Some((s.address(), s.size(), s.name().ok()?.to_string())))
            .collect();
        // Prefer the name without leading underscores at one address
        // (`clock_gettime` over `__vdso_clock_gettime`), as perf does.
        syms.sort_by(|a, b| {
            let u = |n: &str| n.bytes().take_while(|&c| c == b'_').count();
            a.0.cmp(&b.0).then(u(&a.2).cmp(&u(&b.2)))
        });
        syms.dedup_by_key(|s| s.0);
        Some(VdsoSymbols { syms, load_bias })
    }

    /// The symbol at a file offset in the vDSO mapping, and the offset
    /// into it.
    pub(crate) fn find(&self, file_offset: u64) -> Option<(&str, u64)> {
        let svma = (file_offset as i64).checked_add(self.load_bias)? as u64;
        let idx = self.syms.partition_point(|s| s.0 <= svma);
        let (start, size, name) = self.syms.get(idx.checked_sub(1)?)?;
        (size == &0 || svma < start + size).then_some((name.as_str(), svma - start))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn demangles_like_perf() {
        assert_eq!(
            demangle("_ZN9rust_work4spin17h0123456789abcdefE"),
            "rust_work::spin"
        );
        assert_eq!(demangle("_ZN3foo3barEi"), "foo::bar");
        assert_eq!(demangle("_ZN4work3HotIiE4spinEi"), "work::Hot<int>::spin");
        assert_eq!(demangle("main"), "main");
        assert_eq!(demangle("_Zinvalid"), "_Zinvalid");
    }

    #[test]
    fn symbol_versions_are_stripped() {
        assert_eq!(
            strip_version("clock_nanosleep@@GLIBC_2.17"),
            "clock_nanosleep"
        );
        assert_eq!(
            strip_version("clock_nanosleep@GLIBC_2.2.5"),
            "clock_nanosleep"
        );
        assert_eq!(strip_version("memcpy@plt"), "memcpy@plt");
        assert_eq!(strip_version("main"), "main");
        assert_eq!(strip_version("@weird"), "@weird");
    }

    #[test]
    fn aliases_are_settled_like_perf() {
        // Elf64_Sym entries at 0x1000 (FUNC, size 33), each (name, binding)
        // in symbol-table order.
        fn pick(entries: &[(&str, u8)]) -> String {
            let mut strs = String::from("\0");
            let mut syms = vec![0u8; 24]; // the null symbol
            for (name, bind) in entries {
                let mut e = [0u8; 24];
                e[..4].copy_from_slice(&(strs.len() as u32).to_le_bytes());
                e[4] = bind << 4 | 2; // FUNC
                e[8..16].copy_from_slice(&0x1000u64.to_le_bytes());
                e[16..24].copy_from_slice(&33u64.to_le_bytes());
                syms.extend_from_slice(&e);
                strs.push_str(name);
                strs.push('\0');
            }
            let starts: FxSet<u64> = [0x1000, 0x2000].into_iter().collect();
            alias_picks_from(&syms, strs.as_bytes(), &starts)[&0x1000].clone()
        }
        const L: u8 = 0;
        const G: u8 = 1;
        const W: u8 = 2;
        // Debian 12's libc (its debug file's .symtab), as perf 6.1 names them.
        let mmap = [
            ("__GI___mmap64", L),
            ("__mmap64", L),
            ("__GI___mmap", L),
            ("mmap", W),
            ("__mmap", G),
            ("mmap64", W),
        ];
        assert_eq!(pick(&mmap), "__mmap");
        let munmap = [
            ("__GI___munmap", L),
            ("__GI_munmap", L),
            ("munmap", W),
            ("__munmap", G),
        ];
        assert_eq!(pick(&munmap), "__munmap");
        assert_eq!(
            pick(&[("__GI__exit", L), ("_exit", G), ("_Exit", W)]),
            "_exit"
        );
        // Its ld.so, all local: fewer underscores, then the longer name.
        let ld_mmap = [("__mmap", L), ("mmap", L), ("__mmap64", L), ("mmap64", L)];
        assert_eq!(pick(&ld_mmap), "mmap64");
        let ld_munmap = [
            ("munmap", L),
            ("__GI___munmap", L),
            ("__GI_munmap", L),
            ("__munmap", L),
        ];
        assert_eq!(pick(&ld_munmap), "munmap");
        // A tie keeps the first.
        assert_eq!(pick(&[("abc", G), ("xyz", G)]), "abc");
        let sized = |size| Alias {
            size,
            bind: G,
            name: "x",
        };
        assert!(sized(10).replaces(&sized(0)));
        assert!(!sized(0).replaces(&sized(10)));
    }

    #[test]
    fn our_vdso_has_clock_gettime() {
        let v = VdsoSymbols::from_self();
        if v.syms.is_empty() {
            eprintln!("no [vdso] in this process: skipped");
            return;
        }
        assert!(v.syms.iter().any(|s| s.2.contains("clock_gettime")));
    }
}
