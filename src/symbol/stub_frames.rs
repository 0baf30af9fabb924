//! Stepping out of code that has neither unwind tables nor a frame
//! pointer: JIT stubs such as CPython's perf trampolines (`-X perf`: a
//! copy of `_Py_trampoline_func_start`, `sub $8,%rsp; call *%rcx; add
//! $8,%rsp; ret`, in anonymous memory, one per Python function, named in
//! `/tmp/perf-PID.map`). framehop falls back to %rbp there, which holds
//! whatever the interpreter left in it, and the stack ended at the
//! `py::` frame.
//!
//! The step taken instead: the return address is one of the first words
//! above the stack pointer (a stub keeps at most a slot of padding), and it
//! is taken only when it is a return address for certain: it lies in a
//! binary with unwind tables, and the bytes before it, read from that
//! binary, are a call instruction (`E8 rel32`, or `FF /2` in its register,
//! memory, disp8, disp32 and SIB forms). A stale code pointer in the
//! padding fails the second test. Verdicts are cached per (binary, svma).

use std::collections::HashMap;
use std::fs::File;
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::Arc;

use super::binary::Binary;

/// How many words above the stack pointer are looked at.
const SCAN_WORDS: u64 = 2;

/// Mapped code of a binary with unwind tables.
#[derive(Debug, Clone)]
pub(crate) struct TabledCode {
    pub(crate) range: Range<u64>,
    pub(crate) binary: Arc<Binary>,
    /// The avma of svma 0 (`unwind::base_avma`).
    pub(crate) base: u64,
}

/// Files and verdicts kept between samples.
#[derive(Debug, Default)]
pub(crate) struct CallSites {
    files: HashMap<PathBuf, Option<File>>,
    verdicts: HashMap<(PathBuf, u64), bool>,
}

/// Whether `bytes` (the up to 7 bytes that end where a return address
/// points) end with a call instruction.
pub(crate) fn ends_with_call(bytes: &[u8; 7]) -> bool {
    let at = |back: usize| bytes[7 - back];
    // FF /2: the ModRM's reg field is 2.
    let ff2 = |back: usize| at(back) == 0xff && at(back - 1) & 0x38 == 0x10;
    at(5) == 0xe8
        || (ff2(2) && at(1) & 0xc0 != 0x40 && at(1) & 0xc0 != 0x80)
        || (ff2(3) && (at(2) & 0xc0 == 0x40 || at(2) & 0xc7 == 0x04))
        || (ff2(4) && at(3) & 0xc7 == 0x44)
        || (ff2(6) && (at(5) & 0xc0 == 0x80 || at(5) & 0xc7 == 0x05))
        || (ff2(7) && at(6) & 0xc7 == 0x84)
}

impl CallSites {
    /// Whether `addr` is a return address: in `code` and after a call.
    fn is_return_address(&mut self, code: &[TabledCode], addr: u64) -> bool {
        let Some(c) = code.iter().find(|c| c.range.contains(&addr)) else {
            return false;
        };
        let svma = addr.wrapping_sub(c.base);
        let key = (c.binary.path.clone(), svma);
        if let Some(&v) = self.verdicts.get(&key) {
            return v;
        }
        let offset = c.binary.loads.iter().find_map(|l| {
            (svma >= l.svma && svma - l.svma <= l.file_size).then(|| svma - l.svma + l.file_offset)
        });
        let file = self
            .files
            .entry(c.binary.path.clone())
            .or_insert_with(|| File::open(&c.binary.path).ok());
        let mut bytes = [0u8; 7];
        let verdict = match (offset.and_then(|o| o.checked_sub(7)), file) {
            (Some(start), Some(f)) => {
                f.read_exact_at(&mut bytes, start).is_ok() && ends_with_call(&bytes)
            }
            _ => false,
        };
        self.verdicts.insert(key, verdict);
        verdict
    }

    /// The return address of a stub frame whose stack pointer is `sp`,
    /// and the slot it was read from.
    pub(crate) fn step(
        &mut self,
        code: &[TabledCode],
        sp: u64,
        read_stack: &mut impl FnMut(u64) -> Result<u64, ()>,
    ) -> Option<(u64, u64)> {
        (0..SCAN_WORDS).find_map(|i| {
            let slot = sp.checked_add(i * 8)?;
            let ret = read_stack(slot).ok()?;
            self.is_return_address(code, ret).then_some((ret, slot))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ends(tail: &[u8]) -> bool {
        let mut b = [0x90u8; 7];
        b[7 - tail.len()..].copy_from_slice(tail);
        ends_with_call(&b)
    }

    #[test]
    fn call_forms_are_recognized() {
        assert!(ends(&[0xe8, 1, 2, 3, 4])); // call rel32
        assert!(ends(&[0xff, 0xd1])); // call *%rcx
        assert!(ends(&[0x41, 0xff, 0xd3])); // call *%r11
        assert!(ends(&[0xff, 0x10])); // call *(%rax)
        assert!(ends(&[0xff, 0x50, 0x08])); // call *8(%rax)
        assert!(ends(&[0xff, 0x15, 1, 2, 3, 4])); // call *x(%rip)
        assert!(ends(&[0xff, 0x90, 1, 2, 3, 4])); // call *disp32(%rax)
        assert!(ends(&[0xff, 0x54, 0x24, 0x08])); // call *8(%rsp)
        assert!(!ends(&[0x48, 0x83, 0xc4, 0x08])); // add $8,%rsp
        assert!(!ends(&[0xff, 0xe1])); // jmp *%rcx
        assert!(!ends(&[0x90, 0x90]));
    }
}
