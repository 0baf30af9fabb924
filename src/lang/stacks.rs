//! `kstack` and `ustack` as bpftrace prints them: the stack map's frames
//! one per line, indented four spaces, `name+offset` (kernel frames through
//! `/proc/kallsyms`, user frames through the process's maps while it still
//! runs, an address in hex otherwise), between the brackets of the key.
//!
//! A stack value is the stack id in its low 32 bits and the depth asked
//! for (`kstack(5)`) in the high ones; a user stack adds the process id.

use std::cell::OnceCell;

use blazesym::symbolize::source::{Process, Source};
use blazesym::symbolize::{Input, Symbolized, Symbolizer};

use crate::symbol::Kallsyms;
use crate::sys::bpf_raw::Map;

/// Frames a stack map holds per stack (bpftrace's default depth).
pub(crate) const MAX_DEPTH: usize = 127;

/// Reads and names stacks.
pub(crate) struct StackNames<'a> {
    pub(crate) map: Option<&'a Map>,
    kallsyms: OnceCell<Option<Kallsyms>>,
}

impl<'a> StackNames<'a> {
    pub(crate) fn new(map: Option<&'a Map>) -> Self {
        StackNames {
            map,
            kallsyms: OnceCell::new(),
        }
    }

    /// The frames of `value` (id | depth << 32): empty for a failed id.
    fn frames(&self, value: u64) -> Vec<u64> {
        let id = value as u32;
        let depth = ((value >> 32) as usize).clamp(1, MAX_DEPTH);
        let Some(map) = self.map else {
            return Vec::new();
        };
        if id >= 0x8000_0000 {
            return Vec::new();
        }
        let Ok(Some(values)) = map.lookup(&id.to_le_bytes(), false) else {
            return Vec::new();
        };
        let bytes = values.into_iter().next().unwrap_or_default();
        bytes
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
            .take_while(|&a| a != 0)
            .take(depth)
            .collect()
    }

    /// One frame a line, four spaces in, after a newline; no frames (a
    /// kernel stack sampled in user mode) is empty, as bpftrace prints
    /// it (`@[]: 3`).
    fn lines(names: Vec<String>) -> String {
        if names.is_empty() {
            return String::new();
        }
        let mut out = String::from("\n");
        for n in names {
            out.push_str("    ");
            out.push_str(&n);
            out.push('\n');
        }
        out
    }

    /// Kernel addresses named `name+offset` (`with_offset`) or `name`,
    /// in hex when unknown.
    fn kernel_names(&self, addrs: &[u64], with_offset: bool) -> Vec<String> {
        let syms = self
            .kallsyms
            .get_or_init(|| Kallsyms::from_proc().ok())
            .as_ref();
        addrs
            .iter()
            .map(|&addr| match syms.and_then(|s| s.find(addr)) {
                Some(sym) if with_offset => format!("{}+{}", sym.name, addr - sym.start),
                Some(sym) => sym.name.to_string(),
                None => format!("0x{addr:x}"),
            })
            .collect()
    }

    /// User addresses of process `pid`, named as `kernel_names` does.
    fn user_names(addrs: &[u64], pid: u32, with_offset: bool) -> Vec<String> {
        let symbolizer = Symbolizer::new();
        let src = Source::Process(Process::new(pid.into()));
        let named = symbolizer
            .symbolize(&src, Input::AbsAddr(addrs))
            .unwrap_or_default();
        addrs
            .iter()
            .enumerate()
            .map(|(i, addr)| match named.get(i) {
                // `sym.addr` is the symbol's address in its file, `addr` the
                // process's: the offset is blazesym's, as bpftrace's is.
                Some(Symbolized::Sym(sym)) if with_offset => format!("{}+{}", sym.name, sym.offset),
                Some(Symbolized::Sym(sym)) => sym.name.to_string(),
                _ => format!("0x{addr:x}"),
            })
            .collect()
    }

    pub(crate) fn kernel(&self, value: u64) -> String {
        Self::lines(self.kernel_names(&self.frames(value), true))
    }

    pub(crate) fn user(&self, value: u64, pid: u32) -> String {
        Self::lines(Self::user_names(&self.frames(value), pid, true))
    }

    /// `ksym(addr)`: the name of the kernel function holding `addr`.
    pub(crate) fn ksym(&self, addr: u64) -> String {
        // bpftrace's resolver names address 0 as "0", not 0x0.
        if addr == 0 {
            return "0".into();
        }
        self.kernel_names(&[addr], false).remove(0)
    }

    /// `usym(addr)`: the name of process `pid`'s function holding `addr`.
    pub(crate) fn usym(addr: u64, pid: u32) -> String {
        Self::user_names(&[addr], pid, false).remove(0)
    }
}
