//! Kernel symbols from `/proc/kallsyms` text.
//!
//! Parsed here rather than through blazesym so that the kernel is read once
//! per run (blazesym rebuilds its kernel resolver per call) and so that two
//! perf conventions hold: module code is named `[module]`, and of several
//! symbols at one address the last one listed wins (perf gives kallsyms
//! symbols the size up to the next address, then drops the zero-sized
//! aliases), e.g. `__x64_sys_getppid` over `__ia32_sys_getppid`.
//!
//! Invariant: the table (`table`) is sorted by address with one entry per address; a
//! symbol covers addresses up to the next one. When `kptr_restrict` hides the
//! addresses (all read as 0) the table is empty and `hidden` is set, so each
//! kernel frame is counted under that reason instead of being misnamed.
//!
//! The kernel takes tens of milliseconds to print kallsyms, most of a small
//! report's time: `cache` keeps the parsed table of the parts that cannot
//! change while the machine runs (the core kernel, loaded modules) keyed by
//! boot and module state, and such a table says which addresses it holds
//! (`holds`); for any other the caller asks the BPF programs' functions
//! of the kernel (`sys::bpf::jited_symbols`) and reads the kernel's list
//! again only for an address none of them covers (ftrace trampolines).

mod cache;
mod table;

use std::cell::OnceCell;
use std::io::BufRead;

use crate::event::format_cache::KernelSymbols;

pub(crate) use cache::load_running;
use table::{KSym, SymTable};

/// A kernel symbol table.
#[derive(Debug, Default)]
pub(crate) struct Kallsyms {
    /// The symbols, sorted by address (owned, or the cache's in place).
    table: SymTable,
    modules: Vec<String>,
    hidden: bool,
    /// `_etext`: the end of the core kernel's code.
    etext: Option<u64>,
    /// `None`: every symbol the kernel listed. Else the address ranges
    /// (start, end) this table is the kernel's word on: a cached table
    /// holds only what cannot change until the next boot or module load.
    known: Option<Vec<(u64, u64)>>,
}

/// A named kernel address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct KernelSym<'a> {
    pub(crate) name: &'a str,
    /// The symbol's address (`addr - start` is perf's `symoff`).
    pub(crate) start: u64,
    /// `[kernel.kallsyms]` or `[module]`, as perf names the dso.
    pub(crate) dso: &'a str,
}

impl Kallsyms {
    /// Parse kallsyms text (`ADDR TYPE NAME [MODULE]` lines). Lines that do
    /// not parse are skipped: the file comes from the running kernel.
    pub(crate) fn parse(text: impl BufRead) -> std::io::Result<Self> {
        let mut syms: Vec<KSym> = Vec::new();
        let mut modules: Vec<String> = Vec::new();
        let mut names = String::new();
        let mut lines = 0usize;
        let mut etext = None;
        for line in text.lines() {
            let line = line?;
            lines += 1;
            let mut parts = line.split_ascii_whitespace();
            let (Some(addr), Some(ty), Some(name)) = (parts.next(), parts.next(), parts.next())
            else {
                continue;
            };
            let Ok(addr) = u64::from_str_radix(addr, 16) else {
                continue;
            };
            // perf's symbol_type__filter: text, weak, data, bss.
            if !matches!(ty, "T" | "t" | "W" | "w" | "D" | "d" | "B" | "b") || addr == 0 {
                continue;
            }
            let module = match parts.next() {
                Some(m) => {
                    let m = m.trim_start_matches('[').trim_end_matches(']');
                    let idx = match modules.iter().position(|x| x == m) {
                        Some(i) => i,
                        None => {
                            modules.push(m.to_string());
                            modules.len() - 1
                        }
                    };
                    Some(idx as u32)
                }
                None => None,
            };
            if name == "_etext" && module.is_none() {
                etext = Some(addr);
            }
            let data = matches!(ty, "D" | "d" | "B" | "b");
            let start = names.len();
            names.push_str(name);
            let name = (start as u32, names.len() as u32);
            // Of aliases at one address the last listed wins: perf sizes
            // kallsyms symbols up to the next address before deduplicating,
            // so only the last alias has a non-zero size and is kept.
            if let Some(last) = syms.last_mut()
                && last.addr == addr
            {
                *last = KSym {
                    addr,
                    name,
                    module,
                    data,
                };
                continue;
            }
            syms.push(KSym {
                addr,
                name,
                module,
                data,
            });
        }
        // Stable: aliases keep their order, and the last of each run wins.
        syms.sort_by_key(|s| s.addr);
        syms.reverse();
        syms.dedup_by_key(|s| s.addr);
        syms.reverse();
        syms.shrink_to_fit();
        names.shrink_to_fit();
        let hidden = syms.is_empty() && lines > 0;
        Ok(Kallsyms {
            table: SymTable::Owned { syms, names },
            modules,
            hidden,
            etext,
            known: None,
        })
    }

    /// The module a symbol is named under: `None` for the core kernel and
    /// for the code it lists as `[__builtin__*]` (perf's
    /// `[kernel.kallsyms]`).
    fn dso_of(&self, sym: &KSym) -> Option<&str> {
        let m = self.modules.get(sym.module? as usize)?;
        (!m.starts_with("__builtin__")).then_some(m.as_str())
    }

    /// Whether this table is the kernel's word on `addr`: always for a
    /// table read from the kernel's list; for a cached one, inside the
    /// ranges it kept (elsewhere a BPF program or trampoline may have come
    /// or gone since: read the list again).
    pub(crate) fn holds(&self, addr: u64) -> bool {
        match &self.known {
            None => true,
            Some(ranges) => ranges
                .iter()
                .any(|&(start, end)| start <= addr && addr < end),
        }
    }

    /// The symbol covering `addr` (the last at or before it), with its
    /// name; `None` when none does or its record does not fit.
    fn covering(&self, addr: u64) -> Option<(KSym, &str)> {
        let idx = self.table.partition_point(addr);
        let sym = self.table.get(idx.checked_sub(1)?)?;
        if sym.module.is_some_and(|m| m as usize >= self.modules.len()) {
            return None;
        }
        let name = self.table.name(&sym)?;
        Some((sym, name))
    }

    /// Read the running kernel's `/proc/kallsyms`.
    pub(crate) fn from_proc() -> std::io::Result<Self> {
        let file = std::fs::File::open("/proc/kallsyms")?;
        Self::parse(std::io::BufReader::new(file))
    }

    /// True when the kernel hid its addresses (`kptr_restrict`).
    pub(crate) fn hidden(&self) -> bool {
        self.hidden
    }

    /// The symbol covering `addr`, if any. Past the end of the kernel's
    /// code, the core kernel's data symbols cover nothing: an address there
    /// is code kallsyms no longer lists (a BPF program unloaded since the
    /// recording), not the last variable before the module area.
    pub(crate) fn find(&self, addr: u64) -> Option<KernelSym<'_>> {
        let (sym, name) = self.covering(addr)?;
        let dso = self.dso_of(&sym);
        if sym.data && dso.is_none() && self.etext.is_some_and(|end| addr >= end) {
            return None;
        }
        let dso = dso.unwrap_or("[kernel.kallsyms]");
        Some(KernelSym {
            name,
            start: sym.addr,
            dso,
        })
    }

    /// The start of the first symbol after `addr`: where the function at
    /// `addr` ends, at the latest.
    pub(crate) fn next_start(&self, addr: u64) -> Option<u64> {
        self.table.addr(self.table.partition_point(addr))
    }

    /// `[module]` names are returned bare by `find`; this adds the brackets
    /// perf prints.
    pub(crate) fn dso_name(sym: &KernelSym<'_>) -> String {
        if sym.dso.starts_with('[') {
            sym.dso.to_string()
        } else {
            format!("[{}]", sym.dso)
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.table.len() == 0
    }
}

/// `%pS`/`%ps` in tracepoint print fmts: the covering symbol and its start,
/// as perf script resolves them through its kernel map.
impl KernelSymbols for Kallsyms {
    fn lookup(&self, addr: u64) -> Option<(&str, u64)> {
        let (sym, name) = self.covering(addr)?;
        Some((name, sym.addr))
    }
}

/// The running kernel's kallsyms, read on the first lookup (most renders
/// never meet a `%pS`). Unreadable kallsyms leave addresses in hex.
#[derive(Debug, Default)]
pub struct ProcKallsyms(OnceCell<Kallsyms>);

impl KernelSymbols for ProcKallsyms {
    fn lookup(&self, addr: u64) -> Option<(&str, u64)> {
        self.0
            .get_or_init(|| Kallsyms::from_proc().unwrap_or_default())
            .lookup(addr)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "\
ffffffff81000000 T srso_alias_untrain_ret
ffffffff81000000 T _stext
ffffffff81000000 T _text
ffffffff81000100 t do_thing
ffffffff81000200 T __x64_sys_write
garbage line
ffffffffc0201000 t ftrace_trampoline\t[__builtin__ftrace]
ffffffffc0400000 t ext4_fill_super\t[ext4]
";

    #[test]
    fn finds_the_covering_symbol_with_perfs_alias_choice() {
        let k = Kallsyms::parse(TEXT.as_bytes()).unwrap_or_default();
        assert!(!k.hidden());
        let s = k.find(0xffffffff81000010);
        assert_eq!(s.map(|s| s.name), Some("_text"));
        assert_eq!(k.find(0xffffffff81000150).map(|s| s.name), Some("do_thing"));
        let m = k.find(0xffffffffc0400010);
        assert_eq!(m.as_ref().map(|s| s.name), Some("ext4_fill_super"));
        assert_eq!(
            m.as_ref().map(Kallsyms::dso_name).as_deref(),
            Some("[ext4]")
        );
        let b = k.find(0xffffffffc0201001);
        assert_eq!(b.map(|s| s.dso), Some("[kernel.kallsyms]"));
        assert!(k.find(0x1000).is_none());
        assert_eq!(
            k.lookup(0xffffffff81000150),
            Some(("do_thing", 0xffffffff81000100))
        );
        assert_eq!(k.lookup(0x1000), None);
    }

    #[test]
    fn code_past_the_kernel_text_is_not_a_data_symbol() {
        let text = "ffffffff81000000 T _stext\n\
                    ffffffff82000000 T _etext\n\
                    ffffffff83000000 D __start_early_lsm_info\n\
                    ffffffffc0201000 t ftrace_trampoline\t[__builtin__ftrace]\n\
                    ffffffffc0400000 t bpf_prog_1_x\t[bpf]\n";
        let k = Kallsyms::parse(text.as_bytes()).unwrap_or_default();
        // An unloaded BPF program's address, before the trampoline.
        assert!(k.find(0xffffffffc0100000).is_none());
        // Inside the data itself (a data address), and code after it, stay.
        assert_eq!(k.find(0xffffffff81800000).map(|s| s.name), Some("_stext"));
        assert_eq!(
            k.find(0xffffffffc0201010).map(|s| s.name),
            Some("ftrace_trampoline")
        );
        assert_eq!(
            k.find(0xffffffffc0400010).map(|s| s.name),
            Some("bpf_prog_1_x")
        );
    }

    #[test]
    fn zeroed_addresses_mean_hidden() {
        let k = Kallsyms::parse("0000000000000000 T _text\n0000000000000000 t x\n".as_bytes())
            .unwrap_or_default();
        assert!(k.hidden());
        assert!(k.find(0xffffffff81000000).is_none());
    }
}
