//! Locations into frames: every location not named yet, grouped by dso and
//! named in bulk — ELF files through one sorted blazesym batch each (the
//! biggest on two threads for the last batch), kernel addresses from
//! kallsyms, the vDSO from scry's own, JIT code from perf-PID.map and the
//! process's jitdump file — and then
//! the frames of each new location stack.

use std::collections::HashMap;
use std::sync::Arc;

use super::stack::frames_key;
use super::{LocResult, NamedStack, Resolver};
use crate::model::sample::{Frame, FrameId, FrameKind};
use crate::symbol::UnresolvedReason;
use crate::symbol::binary::{Binary, BinaryMiss};
use crate::symbol::function_ranges::range_name;
use crate::symbol::jitdump;
use crate::symbol::kallsyms::Kallsyms;
use crate::symbol::names::{ElfNames, Names, VdsoSymbols};
use crate::symbol::perf_map::PerfMap;
use crate::symbol::process::{DsoId, DsoKind, DsoTable};

/// `Resolver::plain_locs` of a location that is not plain.
const NOT_PLAIN: u32 = u32::MAX;

/// Symbol files this big in all (bytes) are named on two threads.
const PARALLEL_SYMBOLS_BYTES: u64 = 8 << 20;

/// One file's locations to name (`Resolver::prepare_file`).
struct FileJob {
    dso: DsoId,
    /// Location ids, and the svma of each (None: outside every load).
    ids: Vec<u32>,
    svmas: Vec<Option<u64>>,
    /// The distinct svmas, sorted: what is asked of the symbolizer.
    batch: Vec<u64>,
    binary: Arc<Binary>,
    /// The symbol file's size: the cost estimate that balances threads.
    weight: u64,
}

impl Resolver {
    /// Builds the frames of every stack not named yet (its locations are).
    ///
    /// The loop runs once per location of every distinct stack (five
    /// million on the bench's deep file), so a plain location (one frame,
    /// named by a symbol: most of them) costs a load and a push
    /// (`plain_locs`); the others are looked at whole.
    pub(super) fn name_stacks(&mut self) {
        self.refresh_plain_locs();
        let mut frames = Vec::new();
        for id in self.named_stacks.len()..self.stacks.len() {
            frames.clear();
            let mut named = NamedStack {
                frames: Arc::from([]),
                locations: 0,
                unnamed: Vec::new(),
                ranged: 0,
                outermost_unnamed: false,
                outermost_ranged: false,
            };
            let locs = self.stacks.get(id as u32);
            frames.reserve(locs.len());
            let mut plain = 0;
            // The outermost named location, None when it is plain.
            let mut outermost = None;
            for &loc in locs {
                if let Some(&frame) = self.plain_locs.get(loc as usize)
                    && frame != NOT_PLAIN
                {
                    frames.push(FrameId(frame));
                    plain += 1;
                    outermost = None;
                    continue;
                }
                let Some(Some(r)) = self.loc_results.get(loc as usize) else {
                    continue;
                };
                let range = r.start as usize..(r.start + r.len) as usize;
                frames.extend_from_slice(self.loc_frames.get(range).unwrap_or(&[]));
                named.locations += 1;
                named.unnamed.extend(r.reason);
                named.ranged += u64::from(r.ranged);
                outermost = Some(r);
            }
            named.locations += plain;
            if let Some(r) = outermost {
                named.outermost_unnamed = r.reason.is_some();
                named.outermost_ranged = r.ranged;
            }
            // Stacks of locations that differ only in addresses within the
            // same functions name the same frames: share one `Arc`, found
            // by the frames' 128-bit key (not compared: the frames of a
            // stack met before are cold in memory).
            named.frames = Arc::clone(
                self.frame_stacks
                    .entry(frames_key(&frames))
                    .or_insert_with(|| Arc::from(frames.as_slice())),
            );
            self.named_stacks.push(named);
        }
    }

    /// Brings `plain_locs` up to `loc_results`: from the first location
    /// that was unnamed at the last call (a named location does not
    /// change: it is named once, in one batch).
    fn refresh_plain_locs(&mut self) {
        let from = self.plain_from.min(self.loc_results.len());
        self.plain_locs.truncate(from);
        let mut unnamed = None;
        for (id, r) in self.loc_results.iter().enumerate().skip(from) {
            let plain = match r {
                Some(r) if r.len == 1 && r.reason.is_none() && !r.ranged => self
                    .loc_frames
                    .get(r.start as usize)
                    .map_or(NOT_PLAIN, |f| f.0),
                Some(_) => NOT_PLAIN,
                None => {
                    unnamed.get_or_insert(id);
                    NOT_PLAIN
                }
            };
            self.plain_locs.push(plain);
        }
        self.plain_from = unnamed.unwrap_or(self.loc_results.len());
    }

    /// Name all unnamed locations, grouped by dso.
    pub(super) fn resolve_locations(&mut self) {
        let mut by_dso: HashMap<DsoId, Vec<u32>> = HashMap::new();
        let from = self.named_locs;
        for (id, r) in self.loc_results.iter().enumerate().skip(from) {
            if r.is_none()
                && let Some(key) = self.locs.get(id)
            {
                by_dso.entry(key.dso).or_default().push(id as u32);
            }
        }
        let mut dsos: Vec<_> = by_dso.into_iter().collect();
        dsos.sort_by_key(|(d, _)| *d);
        let mut jobs = Vec::new();
        for (dso, mut ids) in dsos {
            ids.sort_by_key(|&id| self.locs.get(id as usize).map_or(0, |k| k.addr));
            let kind = self.dsos.get(dso).kind.clone();
            match kind {
                DsoKind::Kernel => self.name_kernel(&ids),
                DsoKind::File => jobs.extend(self.prepare_file(dso, ids)),
                DsoKind::Vdso => self.name_vdso(dso, &ids),
                DsoKind::PerfMap(pid) => self.name_jit(dso, pid, &ids),
                DsoKind::Unknown => {
                    for &id in &ids {
                        self.set_unnamed(
                            id,
                            dso,
                            FrameKind::User,
                            UnresolvedReason::UnknownMapping,
                        );
                    }
                }
            }
        }
        let named = self.symbolize_jobs(&jobs);
        for (job, named) in jobs.into_iter().zip(named) {
            self.apply_file(job, &named);
        }
        // A location left unnamed is looked for again next batch.
        self.named_locs = from
            + self.loc_results[from..]
                .iter()
                .position(Option::is_none)
                .unwrap_or(self.loc_results.len() - from);
    }

    fn set_frames(&mut self, id: u32, frames: &[Frame], reason: Option<UnresolvedReason>) {
        let start = self.loc_frames.len() as u32;
        for f in frames {
            let fid = self.frames.intern(f.clone());
            self.loc_frames.push(fid);
        }
        if let Some(slot) = self.loc_results.get_mut(id as usize) {
            *slot = Some(LocResult {
                start,
                len: frames.len() as u32,
                reason,
                symoff: None,
                ranged: false,
            });
        }
    }

    fn set_unnamed(&mut self, id: u32, dso: DsoId, kind: FrameKind, reason: UnresolvedReason) {
        let frame = Frame {
            sym: None,
            dso: self.dsos.get(dso).name.clone(),
            kind,
            inlined: false,
            srcline: None,
        };
        self.set_frames(id, &[frame], Some(reason));
    }

    fn set_named(&mut self, id: u32, dso: Arc<str>, kind: FrameKind, names: Option<&Names>) {
        let Some(names) = names else {
            let frame = Frame {
                sym: None,
                dso,
                kind,
                inlined: false,
                srcline: None,
            };
            self.set_frames(id, &[frame], Some(UnresolvedReason::NoSymbol));
            return;
        };
        let mut frames: Vec<Frame> = names
            .inlined
            .iter()
            .rev()
            .map(|n| Frame {
                sym: Some(Arc::from(n.as_str())),
                dso: dso.clone(),
                kind,
                inlined: true,
                srcline: None,
            })
            .collect();
        let srcline = names.srcline.as_deref().filter(|_| self.srcline);
        frames.push(Frame {
            sym: Some(Arc::from(names.function.as_str())),
            dso,
            kind,
            inlined: false,
            srcline: srcline.map(Arc::from),
        });
        self.set_frames(id, &frames, None);
        if let Some(Some(r)) = self.loc_results.get_mut(id as usize) {
            r.symoff = names.offset;
        }
    }

    /// The recording's KSYMBOL function holding `addr`: its name, the
    /// offset in it, and its dso's name (the same, as perf has it).
    fn ksymbol_at(&self, addr: u64) -> Option<(String, u64, String)> {
        let (&start, (end, name)) = self.ksymbols.range(..=addr).next_back()?;
        (addr < *end).then(|| (name.to_string(), addr - start, name.to_string()))
    }

    fn name_kernel(&mut self, ids: &[u32]) {
        if self.kallsyms.is_none() {
            let loaded = match self.kallsyms_loader.take().map(|t| t.join()) {
                Some(Ok(k)) => k,
                _ => load_kallsyms(self.kallsyms_path.as_deref()),
            };
            self.kallsyms = Some(loaded);
        }
        // The recording's own BPF functions first (see the module doc).
        let addr_of = |id: u32| self.locs.get(id as usize).map_or(0, |l| l.addr);
        // A cached table does not hold BPF programs and trampolines: for an
        // address outside what it holds (nor among the recording's own)
        // that may be such code, the BPF programs' functions (a few system
        // calls each), and only when one is not among them the kernel's
        // whole list (tens of milliseconds of the kernel's time). An
        // address no code can be at (a stack's garbage) costs nothing.
        let unheld: Vec<u64> = match self.kallsyms.as_ref() {
            Some(k) => ids
                .iter()
                .map(|&id| addr_of(id))
                .filter(|&addr| {
                    !k.holds(addr) && self.ksymbol_at(addr).is_none() && may_be_dynamic_code(addr)
                })
                .collect(),
            None => Vec::new(),
        };
        let mut jited = Vec::new();
        if !unheld.is_empty() {
            jited = crate::sys::bpf::jited_symbols();
            if !unheld.iter().all(|&a| jited_at(&jited, a).is_some()) {
                jited.clear();
                self.kallsyms = Some(Kallsyms::from_proc().unwrap_or_default());
            }
        }
        for &id in ids {
            let addr = self.locs.get(id as usize).map_or(0, |k| k.addr);
            let found = self
                .ksymbol_at(addr)
                .or_else(|| {
                    jited_at(&jited, addr)
                        .map(|s| (s.name.clone(), addr - s.start, "[bpf]".to_string()))
                })
                .or_else(|| {
                    self.kallsyms.as_ref().and_then(|k| {
                        k.find(addr)
                            .map(|s| (s.name.to_string(), addr - s.start, Kallsyms::dso_name(&s)))
                    })
                });
            match found {
                Some((name, offset, dso)) => {
                    let names = Names {
                        srcline: Some(format!("{name}+{offset}")),
                        function: name,
                        offset: Some(offset),
                        inlined: Vec::new(),
                    };
                    self.set_named(id, Arc::from(dso.as_str()), FrameKind::Kernel, Some(&names));
                }
                None => {
                    let hidden = self
                        .kallsyms
                        .as_ref()
                        .is_none_or(|k| k.hidden() || k.is_empty());
                    let reason = if hidden {
                        UnresolvedReason::KallsymsHidden
                    } else {
                        UnresolvedReason::NoSymbol
                    };
                    let outside_text = self
                        .kernel_text
                        .is_some_and(|(start, end)| addr < start || addr >= end);
                    let dso = match outside_text {
                        true => DsoTable::UNKNOWN,
                        false => DsoTable::KERNEL,
                    };
                    self.set_unnamed(id, dso, FrameKind::Kernel, reason);
                }
            }
        }
    }

    /// The work of naming one file's locations, or `None` when the file is
    /// missing or not the recorded one (those locations are then set).
    fn prepare_file(&mut self, dso: DsoId, ids: Vec<u32>) -> Option<FileJob> {
        let binary = match self.binary(dso) {
            Ok(b) => b,
            Err(miss) => {
                let reason = match miss {
                    BinaryMiss::Missing => UnresolvedReason::MissingBinary,
                    BinaryMiss::BuildIdMismatch => UnresolvedReason::BuildIdMismatch,
                };
                for &id in &ids {
                    self.set_unnamed(id, dso, FrameKind::User, reason);
                }
                return None;
            }
        };
        let svmas: Vec<Option<u64>> = ids
            .iter()
            .map(|&id| {
                let off = self.locs.get(id as usize).map_or(0, |k| k.addr);
                binary.svma_for_offset(off)
            })
            .collect();
        let mut batch: Vec<u64> = svmas.iter().flatten().copied().collect();
        batch.sort_unstable();
        batch.dedup();
        let weight = std::fs::metadata(&binary.symbols_path).map_or(0, |m| m.len());
        Some(FileJob {
            dso,
            ids,
            svmas,
            batch,
            binary,
            weight,
        })
    }

    /// Names the jobs' addresses: on two threads for the last batch of a
    /// file (each thread with a symbolizer of its own; blazesym's is not
    /// `Send`), else here, keeping the symbolizer's caches for later
    /// batches.
    fn symbolize_jobs(&mut self, jobs: &[FileJob]) -> Vec<Vec<Option<Names>>> {
        let total: u64 = jobs.iter().map(|j| j.weight).sum();
        if !self.last_batch || jobs.len() < 2 || total < PARALLEL_SYMBOLS_BYTES {
            return jobs.iter().map(|j| self.symbolize_one(j)).collect();
        }
        // Heaviest first, each to the lighter side.
        let mut order: Vec<usize> = (0..jobs.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(jobs[i].weight));
        let (mut here, mut there) = (Vec::new(), Vec::new());
        let (mut here_w, mut there_w) = (0u64, 0u64);
        for i in order {
            if here_w <= there_w {
                here_w += jobs[i].weight;
                here.push(i);
            } else {
                there_w += jobs[i].weight;
                there.push(i);
            }
        }
        let config = self.names.config();
        let mut out: Vec<Vec<Option<Names>>> = vec![Vec::new(); jobs.len()];
        let theirs = std::thread::scope(|scope| {
            let worker = scope.spawn(|| {
                let mut names = config.build();
                there
                    .iter()
                    .map(|&i| {
                        let j = &jobs[i];
                        let named = symbolize_binary(&mut names, &j.binary, &j.batch);
                        forget_binary(&mut names, &j.binary);
                        (i, named)
                    })
                    .collect::<Vec<_>>()
            });
            for &i in &here {
                out[i] = self.symbolize_one(&jobs[i]);
            }
            worker.join()
        });
        match theirs {
            Ok(theirs) => {
                for (i, named) in theirs {
                    out[i] = named;
                }
            }
            // The worker panicked: name its share here.
            Err(_) => {
                for &i in &there {
                    out[i] = self.symbolize_one(&jobs[i]);
                }
            }
        }
        out
    }

    fn symbolize_one(&mut self, job: &FileJob) -> Vec<Option<Names>> {
        let named = symbolize_binary(&mut self.names, &job.binary, &job.batch);
        if self.last_batch {
            forget_binary(&mut self.names, &job.binary);
        }
        named
    }

    fn apply_file(&mut self, job: FileJob, named: &[Option<Names>]) {
        let name = self.dsos.get(job.dso).name.clone();
        let miss = if job.binary.has_symtab {
            UnresolvedReason::NoSymbol
        } else {
            UnresolvedReason::StrippedBinary
        };
        for (&id, svma) in job.ids.iter().zip(job.svmas) {
            let found = svma
                .and_then(|a| job.batch.binary_search(&a).ok())
                .and_then(|i| named.get(i))
                .and_then(Option::as_ref);
            // No symbol: the function the unwind tables place it in.
            let ranged = || {
                let (svma, functions) = (svma?, job.binary.functions.as_ref()?);
                let start = functions.find(svma)?;
                Some(Names {
                    function: range_name(&name, start),
                    offset: Some(svma - start),
                    srcline: None,
                    inlined: Vec::new(),
                })
            };
            match found {
                Some(n) => self.set_named(id, name.clone(), FrameKind::User, Some(n)),
                None => match ranged() {
                    Some(n) => {
                        self.set_named(id, name.clone(), FrameKind::User, Some(&n));
                        if let Some(Some(r)) = self.loc_results.get_mut(id as usize) {
                            r.ranged = true;
                        }
                    }
                    None => self.set_unnamed(id, job.dso, FrameKind::User, miss),
                },
            }
        }
    }

    fn name_vdso(&mut self, dso: DsoId, ids: &[u32]) {
        let vdso = self.vdso.get_or_insert_with(VdsoSymbols::from_self);
        let found: Vec<Option<(String, u64)>> = ids
            .iter()
            .map(|&id| {
                let off = self.locs.get(id as usize).map_or(0, |k| k.addr);
                vdso.find(off)
                    .map(|(name, offset)| (name.to_string(), offset))
            })
            .collect();
        let name = self.dsos.get(dso).name.clone();
        for (&id, f) in ids.iter().zip(found) {
            let names = f.map(|(function, offset)| Names {
                srcline: Some(format!("{function}+{offset}")),
                function,
                offset: Some(offset),
                inlined: Vec::new(),
            });
            self.set_named(id, name.clone(), FrameKind::User, names.as_ref());
        }
    }

    fn name_jit(&mut self, dso: DsoId, pid: i32, ids: &[u32]) {
        let fresh = !self.perf_maps.contains_key(&pid);
        let jitdump = self.jitdumps.get(&pid);
        let map = self.perf_maps.entry(pid).or_insert_with(|| {
            let mut map = PerfMap::for_pid(pid);
            if let Some(codes) = jitdump.and_then(|p| jitdump::read(p)) {
                map.get_or_insert_default().extend(codes);
            }
            map
        });
        if fresh && let Some(m) = map {
            self.stats.malformed_perf_map_lines += m.malformed_lines;
        }
        let found: Vec<Option<(String, u64)>> = ids
            .iter()
            .map(|&id| {
                let addr = self.locs.get(id as usize).map_or(0, |k| k.addr);
                let found = map.as_ref().and_then(|m| m.find(addr));
                found.map(|(name, offset)| (name.to_string(), offset))
            })
            .collect();
        let have_map = map.is_some();
        let name = self.dsos.get(dso).name.clone();
        for (&id, f) in ids.iter().zip(found) {
            match f {
                Some((function, offset)) => {
                    let names = Names {
                        srcline: None,
                        function,
                        offset: Some(offset),
                        inlined: Vec::new(),
                    };
                    self.set_named(id, name.clone(), FrameKind::User, Some(&names));
                }
                None if !have_map => {
                    self.set_unnamed(id, dso, FrameKind::User, UnresolvedReason::MissingPerfMap)
                }
                None => self.set_unnamed(id, dso, FrameKind::User, UnresolvedReason::NoSymbol),
            }
        }
    }
}

/// Names the svmas of one binary from its symbol file; with
/// MiniDebugInfo, which leaves out what `.dynsym` has, the misses from the
/// binary itself.
fn symbolize_binary(names: &mut ElfNames, binary: &Binary, batch: &[u64]) -> Vec<Option<Names>> {
    let mut named = names
        .symbolize(&binary.symbols_path, batch)
        .unwrap_or_default();
    if binary.mini_debuginfo && named.len() == batch.len() {
        let misses: Vec<u64> = batch
            .iter()
            .zip(&named)
            .filter(|(_, n)| n.is_none())
            .map(|(&a, _)| a)
            .collect();
        let found = names.symbolize(&binary.path, &misses).unwrap_or_default();
        let mut found = misses.iter().zip(found);
        for (a, n) in batch.iter().zip(named.iter_mut()) {
            if n.is_none()
                && let Some((_, f)) = found.find(|(m, _)| *m == a)
            {
                *n = f;
            }
        }
    }
    named
}

/// False where the kernel puts no code it allocates at run time (BPF
/// programs and trampolines, ftrace and kprobe trampolines, modules):
/// on x86-64 those are in the module area, MODULES_VADDR (0xffffffffa0000000,
/// 0xffffffffc0000000 with KASLR) to MODULES_END (0xffffffffff000000);
/// elsewhere any address may be.
fn may_be_dynamic_code(addr: u64) -> bool {
    if cfg!(target_arch = "x86_64") {
        (0xffff_ffff_a000_0000..0xffff_ffff_ff00_0000).contains(&addr)
    } else {
        true
    }
}

/// The BPF function of `jited` covering `addr`.
fn jited_at(jited: &[crate::sys::bpf::JitedSym], addr: u64) -> Option<&crate::sys::bpf::JitedSym> {
    jited
        .iter()
        .find(|s| s.start <= addr && addr - s.start < s.len)
}

fn forget_binary(names: &mut ElfNames, binary: &Binary) {
    names.forget(&binary.symbols_path);
    if binary.mini_debuginfo {
        names.forget(&binary.path);
    }
}

/// The kernel's symbols from `path`, else the running kernel's (cached:
/// `kallsyms::load_running`); empty when unreadable (every kernel frame
/// then says why it has no name).
pub(super) fn load_kallsyms(path: Option<&std::path::Path>) -> Kallsyms {
    match path {
        Some(p) => std::fs::File::open(p)
            .and_then(|f| Kallsyms::parse(std::io::BufReader::new(f)))
            .unwrap_or_default(),
        None => crate::symbol::kallsyms::load_running(),
    }
}
