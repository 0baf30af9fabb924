//! DWARF unwinding of `--call-graph dwarf` samples with framehop: the user
//! registers and the copy of the user stack in a sample become the list of
//! return addresses the frame-pointer chain would have given.
//!
//! One framehop unwinder per process, rebuilt when the process's maps change
//! (its `AddressSpace::generation`), holding one module per mapped binary
//! with that binary's `.eh_frame`/`.eh_frame_hdr`/`.debug_frame`. Section
//! bytes are the binary's mapping (`sys::mapped`), shared by every process
//! that maps it, not copies: framehop wants `.text` too, and copying a big
//! library's (librustc_driver's is 100+ MB) was a quarter of a report's
//! time, for the few pages it looks at.
//!
//! The module base: the avma of svma 0 is computed from the PT_LOAD whose
//! page-aligned `p_offset` equals the mapping's file offset. lld-linked PIEs
//! (everything rustc links) have segments whose `p_vaddr - p_offset` differs
//! per segment; using the first segment there silently gives 1-frame stacks.
//!
//! Output: absolute addresses, leaf first (the first is the sampled IP, the
//! rest are return addresses), and whether framehop reached the stack's root;
//! `unwind_frames` also gives the stack slot each return address was read
//! from, for `stack_join`. Where framehop cannot step out of code without
//! tables (a JIT trampoline), `stub_frames` may.

use std::collections::hash_map::Entry;
use std::sync::Arc;

use framehop::x86_64::{CacheX86_64, UnwindRegsX86_64, UnwinderX86_64};
use framehop::{ExplicitModuleSectionInfo, FrameAddress, Module, Unwinder};
use object::{Object, ObjectSection};

use super::binary::{Binary, Load};
use super::process::{AddressSpace, DsoId, FxMap};
use super::stub_frames::{CallSites, TabledCode};

/// x86_64 perf register numbers (arch/x86/include/uapi/asm/perf_regs.h).
pub(crate) const PERF_REG_X86_BP: u64 = 6;
pub(crate) const PERF_REG_X86_SP: u64 = 7;
pub(crate) const PERF_REG_X86_IP: u64 = 8;

/// A section's bytes: a range of its binary's mapping (none: no bytes).
#[derive(Clone, Default)]
struct Data {
    file: Option<Arc<crate::sys::mapped::MappedFile>>,
    range: std::ops::Range<usize>,
}

impl std::ops::Deref for Data {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        let file = self.file.as_deref().map(|f| &**f).unwrap_or_default();
        file.get(self.range.clone()).unwrap_or_default()
    }
}

impl std::fmt::Debug for Data {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Data({:?})", self.range)
    }
}

/// The unwind sections of one binary.
#[derive(Debug, Clone, Default)]
struct UnwindSections {
    text: Option<(std::ops::Range<u64>, Data)>,
    got: Option<std::ops::Range<u64>>,
    eh_frame: Option<(std::ops::Range<u64>, Data)>,
    eh_frame_hdr: Option<(std::ops::Range<u64>, Data)>,
    debug_frame: Option<Data>,
}

impl UnwindSections {
    fn read(binary: &Binary) -> Option<Self> {
        let file = Arc::new(crate::sys::mapped::MappedFile::open(&binary.path).ok()?);
        let obj = object::File::parse(&**file).ok()?;
        let section = |name: &str| {
            let s = obj.section_by_name(name)?;
            // What `data()` gives: the file's bytes (none for NOBITS).
            let range = match s.file_range() {
                Some((offset, size)) => {
                    let start = usize::try_from(offset).ok()?;
                    start..start.checked_add(usize::try_from(size).ok()?)?
                }
                None => 0..0,
            };
            file.get(range.clone())?;
            let bytes = Data {
                file: Some(Arc::clone(&file)),
                range,
            };
            Some((s.address()..s.address() + s.size(), bytes))
        };
        let got = obj
            .section_by_name(".got")
            .map(|s| s.address()..s.address() + s.size());
        Some(UnwindSections {
            text: section(".text"),
            got,
            eh_frame: section(".eh_frame"),
            eh_frame_hdr: section(".eh_frame_hdr"),
            debug_frame: section(".debug_frame").map(|(_, d)| d),
        })
    }

    fn info(&self) -> ExplicitModuleSectionInfo<Data> {
        ExplicitModuleSectionInfo {
            base_svma: 0,
            text_svma: self.text.as_ref().map(|t| t.0.clone()),
            text: self.text.as_ref().map(|t| t.1.clone()),
            got_svma: self.got.clone(),
            eh_frame_svma: self.eh_frame.as_ref().map(|t| t.0.clone()),
            eh_frame: self.eh_frame.as_ref().map(|t| t.1.clone()),
            eh_frame_hdr_svma: self.eh_frame_hdr.as_ref().map(|t| t.0.clone()),
            eh_frame_hdr: self.eh_frame_hdr.as_ref().map(|t| t.1.clone()),
            debug_frame: self.debug_frame.clone(),
            ..Default::default()
        }
    }
}

/// The avma of svma 0 for a mapping of `binary` at `start` with file offset
/// `pgoff` (see the module doc for why the segment choice matters).
pub(crate) fn base_avma(loads: &[Load], start: u64, pgoff: u64) -> Option<u64> {
    const PAGE: u64 = 4096;
    let load = loads
        .iter()
        .find(|l| l.file_offset & !(PAGE - 1) == pgoff)
        .or_else(|| {
            loads
                .iter()
                .find(|l| pgoff >= l.file_offset && pgoff - l.file_offset < l.file_size.max(1))
        })?;
    // avma(svma) = start + (svma - load.svma) + (load.file_offset - pgoff)
    Some(
        start
            .wrapping_add(load.file_offset)
            .wrapping_sub(pgoff)
            .wrapping_sub(load.svma),
    )
}

/// One process's unwinder, and the ranges of its maps that have unwind
/// tables (framehop falls back to %rbp elsewhere: no check there).
struct ProcessUnwinder {
    generation: u64,
    unwinder: UnwinderX86_64<Data>,
    with_tables: Vec<TabledCode>,
}

/// A frame the unwinder found: its address, and the stack address its
/// return address was read from (`None` for the sampled instruction).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct UnwoundFrame {
    pub(crate) addr: u64,
    pub(crate) slot: Option<u64>,
}

/// How an unwind ended.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Unwound {
    /// The root of the stack was reached.
    pub(crate) complete: bool,
    /// The sampled address is in a binary with unwind tables.
    pub(crate) leaf_has_tables: bool,
}

/// Per-process framehop unwinders, found by FxHash: the process's is
/// looked up once a sample (with SipHash, twice, it was a twentieth of the
/// unwinding thread's time on a shallow file).
#[derive(Default)]
pub(crate) struct DwarfUnwinder {
    processes: FxMap<i32, ProcessUnwinder>,
    sections: FxMap<DsoId, Option<Arc<UnwindSections>>>,
    cache: CacheX86_64,
    /// Return-address checks for stepping out of stubs (`stub_frames`).
    call_sites: CallSites,
}

impl std::fmt::Debug for DwarfUnwinder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DwarfUnwinder")
            .field("processes", &self.processes.len())
            .finish()
    }
}

/// A sample's user registers and stack copy.
pub(crate) struct UserState<'a> {
    pub(crate) ip: u64,
    pub(crate) sp: u64,
    pub(crate) bp: u64,
    pub(crate) stack: &'a [u8],
}

impl DwarfUnwinder {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Unwind one sample of process `pid`. `binary_of` gives the usable
    /// binary for each mapping (None if missing or replaced). Pushes the
    /// frames, leaf first, to `out`: each absolute address with where its
    /// return address was read (what `stack_join` meets the frame-pointer
    /// chain by); says whether the root of the stack was reached and
    /// whether the sampled address lies in a binary with unwind tables.
    pub(crate) fn unwind_frames(
        &mut self,
        pid: i32,
        space: &AddressSpace,
        binary_of: impl FnMut(DsoId) -> Option<Arc<Binary>>,
        state: &UserState<'_>,
        out: &mut Vec<UnwoundFrame>,
    ) -> Unwound {
        let DwarfUnwinder {
            processes,
            sections,
            cache,
            call_sites,
        } = self;
        let process = refresh(processes, sections, pid, space, binary_of);
        let leaf_has_tables = process
            .with_tables
            .iter()
            .any(|c| c.range.contains(&state.ip));
        let stack = state.stack;
        let sp = state.sp;
        let mut read_stack = |addr: u64| -> Result<u64, ()> {
            let off = usize::try_from(addr.checked_sub(sp).ok_or(())?).map_err(|_| ())?;
            let bytes = stack.get(off..off.checked_add(8).ok_or(())?).ok_or(())?;
            let arr: [u8; 8] = bytes.try_into().map_err(|_| ())?;
            Ok(u64::from_le_bytes(arr))
        };
        let mut regs = UnwindRegsX86_64::new(state.ip, state.sp, state.bp);
        let mut address = FrameAddress::from_instruction_pointer(state.ip);
        out.push(UnwoundFrame {
            addr: state.ip,
            slot: None,
        });
        let complete = loop {
            if out.len() >= 1024 {
                break false;
            }
            match process
                .unwinder
                .unwind_frame(address, &mut regs, cache, &mut read_stack)
            {
                Ok(Some(ret)) => {
                    // x86_64: the return address sits just below the CFA,
                    // which is the caller's stack pointer.
                    out.push(UnwoundFrame {
                        addr: ret,
                        slot: regs.sp().checked_sub(8),
                    });
                    match FrameAddress::from_return_address(ret) {
                        Some(next) => address = next,
                        None => break false,
                    }
                }
                Ok(None) => break true,
                // Code without tables whose %rbp led nowhere: a stub
                // without a frame (a JIT trampoline), if a return address
                // for certain sits just above the stack pointer.
                Err(_)
                    if !process
                        .with_tables
                        .iter()
                        .any(|c| c.range.contains(&address.address())) =>
                {
                    let Some((ret, slot)) =
                        call_sites.step(&process.with_tables, regs.sp(), &mut read_stack)
                    else {
                        break false;
                    };
                    out.push(UnwoundFrame {
                        addr: ret,
                        slot: Some(slot),
                    });
                    regs.set_ip(ret);
                    regs.set_sp(slot + 8);
                    match FrameAddress::from_return_address(ret) {
                        Some(next) => address = next,
                        None => break false,
                    }
                }
                Err(_) => break false,
            }
        };
        Unwound {
            complete,
            leaf_has_tables,
        }
    }
}

/// The unwinder of `pid` in `processes`, rebuilt (with the unwind sections
/// of its binaries, read once into `sections`) if its maps changed since it
/// was built.
fn refresh<'p>(
    processes: &'p mut FxMap<i32, ProcessUnwinder>,
    sections: &mut FxMap<DsoId, Option<Arc<UnwindSections>>>,
    pid: i32,
    space: &AddressSpace,
    mut binary_of: impl FnMut(DsoId) -> Option<Arc<Binary>>,
) -> &'p ProcessUnwinder {
    let process = match processes.entry(pid) {
        Entry::Occupied(p) if p.get().generation == space.generation => {
            return p.into_mut();
        }
        Entry::Occupied(p) => p.into_mut(),
        Entry::Vacant(v) => v.insert(ProcessUnwinder {
            generation: space.generation,
            unwinder: UnwinderX86_64::new(),
            with_tables: Vec::new(),
        }),
    };
    let mut unwinder = UnwinderX86_64::new();
    let mut with_tables = Vec::new();
    for m in &space.maps {
        let Some(binary) = binary_of(m.dso) else {
            continue;
        };
        let sections = sections
            .entry(m.dso)
            .or_insert_with(|| UnwindSections::read(&binary).map(Arc::new));
        let Some(sections) = sections else {
            continue;
        };
        let Some(base) = base_avma(&binary.loads, m.start, m.pgoff) else {
            continue;
        };
        if sections.eh_frame.is_some() || sections.debug_frame.is_some() {
            with_tables.push(TabledCode {
                range: m.start..m.end,
                binary: Arc::clone(&binary),
                base,
            });
        }
        let module = Module::new(
            binary.path.display().to_string(),
            m.start..m.end,
            base,
            sections.info(),
        );
        unwinder.add_module(module);
    }
    *process = ProcessUnwinder {
        generation: space.generation,
        unwinder,
        with_tables,
    };
    process
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_uses_the_segment_at_the_mapping_offset() {
        // An lld PIE: text at file 0x1000 but svma 0x2000.
        let loads = [
            Load {
                file_offset: 0,
                svma: 0,
                file_size: 0x800,
            },
            Load {
                file_offset: 0x1000,
                svma: 0x2000,
                file_size: 0x3000,
            },
        ];
        let base = base_avma(&loads, 0x5555_0000_1000, 0x1000);
        // svma 0x2000 must land at the mapping start.
        assert_eq!(base.map(|b| b + 0x2000), Some(0x5555_0000_1000));
    }
}
