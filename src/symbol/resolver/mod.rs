//! The resolver: parsed records in, `ResolvedSample`s out.
//!
//! Two phases so that each distinct (binary, file offset) is symbolized once
//! and in bulk. Its `RecordHandler` methods keep the process model current and turn
//! each sample's addresses into interned locations (`LocKey`: a dso and a
//! file offset, or an absolute address for kernel and JIT code) — cheap, no
//! symbol lookup. `take_samples` (live, after each batch) or `finish` (file)
//! then names every location not seen before, one sorted blazesym batch per
//! binary, and builds the samples from the location → frames table.
//!
//! Return addresses are looked up as they are by default, because perf 6.1
//! (the oracle) does so for symbol names: measured on a 400k-sample
//! system-wide file, looking them up at `addr - 1` lowered whole-stack
//! agreement with `perf script` from 93.7% to 90.1% (garbage frame-pointer
//! chains, and `_start` vs `_dl_start_user` in ld.so). With
//! `adjust_return_addresses` or `--inline` they are looked up at `addr - 1`,
//! so the call (its inlined frames and line), not the next instruction, is
//! found; the first address of a stack, where the sample was taken, never is.
//!
//! Stack quality: a sample without callchain or user stack is
//! `NoCallchain`; one whose DWARF unwind stopped early, whose chain hit the
//! kernel's depth limit, or whose outermost frame could not be named (a
//! frame-pointer chain through code without frame pointers ends in garbage)
//! is `Truncated`; the rest are `Complete`.
//!
//! The work is split by concern: this file holds the resolver's state and
//! its public face (records in, samples out); `stack` turns a sample's
//! addresses into an interned stack of locations (each address through
//! `loc_cache` first, a direct-mapped cache); `naming` names the
//! locations (ELF files in bulk, the kernel, the vDSO, JIT maps); `merge`
//! folds samples that name the same frames. The process model and the dso
//! table live in `symbol::process`.
//!
//! Kernel code without a map (JIT'd BPF functions) is named from the
//! recording's KSYMBOL records, as perf names it (the function's name is its
//! dso's too), before kallsyms is asked: the programs loaded when a file is
//! read are not those that ran when it was recorded.

mod loc_cache;
mod merge;
mod naming;
pub(super) mod pipeline;
mod stack;
#[cfg(test)]
mod tests;
mod user_stack;

use std::collections::HashMap;
use std::sync::Arc;

use linux_perf_event_reader::{CommonData, CpuMode, EventRecord, ForkOrExitRecord, SampleRecord};

use self::stack::loc_key;
use super::binary::{Binary, BinaryCache, BinaryMiss};
use super::kallsyms::Kallsyms;
use super::names::{ElfNames, VdsoSymbols};
use super::perf_map::PerfMap;
use super::process::{DsoId, DsoKind, DsoTable, FxMap, Mapping, ProcessModel};
use super::stacks::StackTable;

/// The least `merge_batch` with source lines: a big file's DWARF is read
/// again each batch, so 4096 distinct samples a batch read a debug build's
/// line tables 60 times in a 400,000-sample file.
const SRCLINE_MERGE_BATCH: usize = 1 << 15;
use super::unwind::DwarfUnwinder;
use super::{ResolveOptions, ResolveStats, UnresolvedReason};
use crate::data::handler::{Comm, Ksymbol, Lost, LostTally, Mmap, RecordHandler, dispatch};
use crate::model::sample::{FrameId, FrameTable, ResolvedSample, StackQuality};

/// Addresses at or above this are kernel addresses on x86_64.
const KERNEL_START: u64 = 0xffff_8000_0000_0000;

/// A place in code before naming: a dso and a file offset (absolute address
/// for kernel and JIT code).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct LocKey {
    dso: DsoId,
    addr: u64,
}

#[derive(Clone, Copy, Debug)]
struct LocResult {
    /// Range in `Resolver::loc_frames`.
    start: u32,
    len: u32,
    reason: Option<UnresolvedReason>,
    /// The offset into the (outermost) function, for `sym+0xoff`.
    symoff: Option<u64>,
    /// Named by the function range its binary's unwind tables give
    /// (`gzip+0x4290`): a function without a symbol.
    ranged: bool,
}

/// One address of a sample, named (`Resolver::address`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct AddressName {
    /// The function's frame (the outermost one when inlined frames expand it).
    pub(crate) frame: FrameId,
    /// The address's offset into that function (perf's `symoff`).
    pub(crate) symoff: Option<u64>,
    /// The address as perf script prints callchain frames: relative to its
    /// binary (`addr - map start + pgoff`) in user binaries, else as is.
    pub(crate) shown: u64,
}

/// A distinct stack, named: the frames every sample with it shares, and
/// what its frames add to the stack-quality counts.
#[derive(Debug)]
struct NamedStack {
    frames: Arc<[FrameId]>,
    /// Locations on the stack (an inlined expansion counts once).
    locations: u64,
    /// Their reasons, for the locations without a name.
    unnamed: Vec<UnresolvedReason>,
    /// Locations named by a function range only (`LocResult::ranged`).
    ranged: u64,
    /// The outermost location had no name: the stack is cut.
    outermost_unnamed: bool,
    /// The outermost location is a function without a symbol
    /// (`LocResult::ranged`): a frame-pointer chain may have ended in
    /// garbage there, an unwinder's stack (`Reach::Unwound`) did not.
    outermost_ranged: bool,
}

/// How far a sample's stack reaches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Reach {
    /// The sample has no callchain (nor stack copy).
    NoCallchain,
    /// Cut short: the unwinder stopped early, or the chain hit the
    /// kernel's depth limit.
    Cut,
    /// To its end, as far as the recording can tell.
    Whole,
    /// To its root, by the unwind tables (DWARF mode, or `-g` whose copy
    /// reached the root): its outermost frame is real even without a name.
    Unwound,
    /// A `-g` chain kept as the kernel gave it: its first frames could not
    /// be checked against unwind tables (`symbol::stack_join`).
    FpKept,
}

/// What merged samples share (`ResolveOptions::merge_samples`). The comm
/// is the process model's `Arc`, by address: pending samples keep it alive.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct MergeKey {
    event: usize,
    comm: usize,
    pid: i32,
    tid: i32,
    stack: u32,
    reach: Reach,
}

/// What a pending sample still needs to get its stack and quality.
#[derive(Clone, Copy, Debug)]
struct PendingStack {
    /// Id in `Resolver::stacks`.
    stack: u32,
    reach: Reach,
}

/// A stack another thread found (`pipeline`), by its key: its location ids
/// (in `Resolver::prepared_locs`) and, if interned since the last fold,
/// its stack id.
struct PreparedStack {
    locs: std::ops::Range<usize>,
    epoch: u32,
    stack: u32,
}

/// What a resolver hands over at the end (`Resolver::finish`).
pub(crate) struct Resolution {
    /// The samples, in feeding order (merged when `merge_samples` asked).
    pub(crate) samples: Vec<ResolvedSample>,
    /// The frames the samples' stacks point into.
    pub(crate) frames: FrameTable,
    /// How well stacks were unwound and named.
    pub(crate) stats: ResolveStats,
    /// Events the kernel or the recorder reported lost.
    pub(crate) lost: u64,
}

/// Turns records into resolved samples; see the module doc.
pub(crate) struct Resolver {
    procs: ProcessModel,
    dsos: DsoTable,
    binaries: BinaryCache,
    /// HEADER_BUILD_ID: path → build-id.
    header_build_ids: HashMap<Vec<u8>, Vec<u8>>,
    /// Whether the host sees a mapped path (`file_seen_by`).
    host_visible: HashMap<Arc<str>, bool>,
    kallsyms: Option<Kallsyms>,
    kallsyms_path: Option<std::path::PathBuf>,
    /// kallsyms being read on a thread of its own since the first kernel
    /// address: the kernel takes ~70 ms to print it, the records meanwhile.
    kallsyms_loader: Option<std::thread::JoinHandle<Kallsyms>>,
    /// The recording's `[kernel.kallsyms]_text` map (start, end). An
    /// unnamed kernel address outside it is in no binary (a BPF program
    /// the recording has no KSYMBOL for): `[unknown]`, as perf reads it.
    kernel_text: Option<(u64, u64)>,
    /// The recording's KSYMBOL functions: start → (end, name). An
    /// unregistering record is not applied: locations are named after
    /// the records are read, and a sample in the code came before it.
    ksymbols: std::collections::BTreeMap<u64, (u64, Arc<str>)>,
    vdso: Option<VdsoSymbols>,
    perf_maps: HashMap<i32, Option<PerfMap>>,
    /// The jitdump file each process mapped as its marker (`jit-PID.dump`).
    jitdumps: HashMap<i32, std::path::PathBuf>,
    names: ElfNames,
    unwinder: DwarfUnwinder,
    loc_index: FxMap<LocKey, u32>,
    /// (pid, user address) → location id, for addresses seen since the last
    /// mmap, exec or fork (any of which empties it): most addresses repeat,
    /// and this skips the search of the maps.
    addr_locs: FxMap<(i32, u64), u32>,
    /// In front of `addr_locs` (and of `loc_index` for kernel addresses),
    /// emptied with it.
    loc_cache: loc_cache::LocCache,
    /// (pid, callchain) → stack id and unwound, emptied with `addr_locs`:
    /// the chain by two 64-bit hashes of it, not held (see `chain_key`).
    chain_stacks: FxMap<u128, (u32, Reach)>,
    /// (pid, addresses) → stack id, emptied with `chain_stacks`: for
    /// samples whose chain alone does not give their addresses (a stack
    /// copy's frames join it) or whose addresses another thread found.
    addr_stacks: FxMap<u128, u32>,
    /// (pid, addresses) → stack id of the samples another thread found
    /// (`pipeline`), emptied only when that thread says so: it sends a
    /// sample's addresses only the first time since, so the map is what
    /// the step stream made it, never emptied on its own.
    prepared_stacks: FxMap<u128, PreparedStack>,
    /// The location ids of `prepared_stacks`, end to end.
    prepared_locs: Vec<u32>,
    /// Counts the folds (`fold_pending`), which start the stack table
    /// over: a prepared stack interned before the last one is interned
    /// again from its location ids.
    fold_epoch: u32,
    /// Counts the changes of maps (`forget_addresses`): `pipeline`'s
    /// finding thread notices them by it.
    maps_generation: u64,
    locs: Vec<LocKey>,
    loc_results: Vec<Option<LocResult>>,
    /// Locations below this index are all named: a batch looks for unnamed
    /// ones from here, not through the whole table.
    named_locs: usize,
    loc_frames: Vec<FrameId>,
    /// Per location: its one frame when it is plain (named by a symbol,
    /// not inlined, not a function range), else `naming::NOT_PLAIN`; up
    /// to date below `plain_from` (see `name_stacks`).
    plain_locs: Vec<u32>,
    plain_from: usize,
    frames: FrameTable,
    /// Samples fed since the last `take_samples`, complete but for their
    /// stacks (empty until named; built in place, never copied).
    pending: Vec<ResolvedSample>,
    pending_stacks: Vec<PendingStack>,
    no_frames: Arc<[FrameId]>,
    stacks: StackTable,
    named_stacks: Vec<NamedStack>,
    /// Each distinct frame stack once, by its `frames_key` (see
    /// `name_stacks`).
    frame_stacks: FxMap<u128, Arc<[FrameId]>>,
    loc_scratch: Vec<u32>,
    stats: ResolveStats,
    lost: LostTally,
    scratch: Vec<(u64, bool)>,
    user_scratch: Vec<u64>,
    chain_scratch: Vec<u64>,
    frame_scratch: Vec<super::unwind::UnwoundFrame>,
    /// Look return addresses up at `addr - 1` (see the module doc).
    adjust_return_addresses: bool,
    /// `ResolveOptions::srcline`: frames carry their source line.
    srcline: bool,
    /// `ResolveOptions::merge_samples`: the pending sample each (event,
    /// comm, pid, tid, stack, unwound) went to.
    merged: Option<FxMap<MergeKey, usize>>,
    /// `ResolveOptions::merge_batch`.
    merge_batch: usize,
    /// With `merge_samples`: samples named so far, merged by frame stack
    /// (`fold_pending`), and where each (event, comm, pid, tid, stack,
    /// quality) went.
    folded: Vec<ResolvedSample>,
    folded_index: FxMap<(usize, usize, i32, i32, usize, StackQuality), usize>,
    /// Set by `finish`: no batch follows, so each binary's symbol tables
    /// are dropped as soon as it is named.
    last_batch: bool,
}

impl std::fmt::Debug for Resolver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Resolver")
            .field("locations", &self.locs.len())
            .field("frames", &self.frames.len())
            .field("pending", &self.pending.len())
            .finish()
    }
}

impl Resolver {
    pub(crate) fn new(options: &ResolveOptions) -> Self {
        Resolver {
            procs: ProcessModel::new(),
            dsos: DsoTable::new(),
            binaries: BinaryCache::new(options.use_build_id_cache),
            header_build_ids: HashMap::new(),
            host_visible: HashMap::new(),
            kallsyms: None,
            kallsyms_path: options.kallsyms.clone(),
            kallsyms_loader: None,
            kernel_text: None,
            ksymbols: std::collections::BTreeMap::new(),
            vdso: None,
            perf_maps: HashMap::new(),
            jitdumps: HashMap::new(),
            names: if options.srcline {
                ElfNames::new(options.inline, options.demangle).with_srcline()
            } else {
                ElfNames::new(options.inline, options.demangle)
            },
            unwinder: DwarfUnwinder::new(),
            loc_index: FxMap::default(),
            addr_locs: FxMap::default(),
            loc_cache: loc_cache::LocCache::new(),
            chain_stacks: FxMap::default(),
            addr_stacks: FxMap::default(),
            prepared_stacks: FxMap::default(),
            prepared_locs: Vec::new(),
            fold_epoch: 0,
            maps_generation: 0,
            locs: Vec::new(),
            loc_results: Vec::new(),
            named_locs: 0,
            loc_frames: Vec::new(),
            plain_locs: Vec::new(),
            plain_from: 0,
            frames: FrameTable::default(),
            pending: Vec::new(),
            pending_stacks: Vec::new(),
            no_frames: Arc::from([]),
            stacks: StackTable::default(),
            named_stacks: Vec::new(),
            frame_stacks: FxMap::default(),
            loc_scratch: Vec::new(),
            stats: ResolveStats::default(),
            lost: LostTally::default(),
            scratch: Vec::new(),
            user_scratch: Vec::new(),
            chain_scratch: Vec::new(),
            frame_scratch: Vec::new(),
            adjust_return_addresses: options.adjust_return_addresses || options.inline,
            srcline: options.srcline,
            merged: options.merge_samples.then(FxMap::default),
            // With source lines, each batch reads the DWARF of the big
            // files again (`ElfNames::source_lines`): fewer, bigger batches.
            merge_batch: match options.srcline {
                true => options.merge_batch.max(SRCLINE_MERGE_BATCH),
                false => options.merge_batch.max(1),
            },
            folded: Vec::new(),
            folded_index: FxMap::default(),
            last_batch: false,
        }
    }

    /// Build-ids the file's HEADER_BUILD_ID section states, by path.
    pub(crate) fn set_header_build_ids(
        &mut self,
        ids: impl IntoIterator<Item = (Vec<u8>, Vec<u8>)>,
    ) {
        self.header_build_ids.extend(ids);
    }

    /// Feed one record, in time order. `attr_index` is the event (attribute)
    /// the record belongs to. (The record pipeline calls the
    /// `RecordHandler` methods below directly.)
    pub(crate) fn handle_record(&mut self, attr_index: usize, record: &EventRecord<'_>) {
        dispatch(self, attr_index, record, &CommonData::default());
    }

    fn add_mapping(&mut self, m: &Mmap<'_>) {
        // The maps change: what `addr_locs` remembers may no longer hold.
        self.forget_addresses();
        // Kernel and module maps: kernel addresses are named from kallsyms.
        if m.pid == -1 || matches!(m.cpu_mode, CpuMode::Kernel | CpuMode::GuestKernel) {
            if m.path.starts_with(b"[kernel.kallsyms]") {
                self.kernel_text = Some((m.start, m.start.saturating_add(m.len)));
            }
            return;
        }
        let (pid, path) = (m.pid, m.path);
        let name = String::from_utf8_lossy(path);
        if super::jitdump::is_jitdump(&name) {
            self.jitdumps.insert(pid, std::path::PathBuf::from(&*name));
        }
        let (kind, name) = classify(pid, &name);
        let build_id = match kind {
            DsoKind::File => m
                .build_id
                .map(<[u8]>::to_vec)
                .or_else(|| self.header_build_ids.get(path).cloned()),
            _ => None,
        };
        let file = match kind {
            DsoKind::File => self.file_seen_by(pid, &name, m.start, m.len),
            _ => None,
        };
        let dso = self
            .dsos
            .intern_file(&name, file.as_deref().unwrap_or(&name), kind, build_id);
        let mapping = Mapping {
            start: m.start,
            end: m.start.saturating_add(m.len),
            pgoff: m.pgoff,
            dso,
        };
        self.procs.handle_mmap(pid, mapping);
    }

    fn binary(&mut self, dso: DsoId) -> Result<Arc<Binary>, BinaryMiss> {
        let d = self.dsos.get(dso);
        let (file, build_id) = (d.file.clone(), d.build_id.clone());
        self.binaries.get(&file, build_id.as_deref())
    }

    /// `path` as process `pid` sees it, when the host does not see it
    /// there (another mount namespace, a chroot), while the process lives:
    /// `/proc/PID/root/PATH`, else the mapping itself,
    /// `/proc/PID/map_files/START-END` (the kernel names a chrooted
    /// process's files from its namespace's root, not from the chroot);
    /// None when the host's own path will do. Whether the host sees a path
    /// is asked once per path.
    fn file_seen_by(&mut self, pid: i32, path: &str, start: u64, len: u64) -> Option<String> {
        let visible = *self
            .host_visible
            .entry(Arc::from(path))
            .or_insert_with(|| std::path::Path::new(path).exists());
        if visible || pid <= 0 {
            return None;
        }
        let inside = format!("/proc/{pid}/root{path}");
        let mapped = format!(
            "/proc/{pid}/map_files/{start:x}-{:x}",
            start.saturating_add(len)
        );
        [inside, mapped]
            .into_iter()
            .find(|p| std::path::Path::new(p).is_file())
    }

    /// Name every location not named yet and return the samples fed since
    /// the last call, in feeding order. Frame ids index `frames()`.
    pub(crate) fn take_samples(&mut self) -> Vec<ResolvedSample> {
        self.resolve_locations();
        self.name_stacks();
        let mut out = std::mem::take(&mut self.pending);
        let mut pending = std::mem::take(&mut self.pending_stacks);
        if let Some(merged) = &mut self.merged {
            merged.clear();
        }
        for (sample, p) in out.iter_mut().zip(pending.drain(..)) {
            let Some(named) = self.named_stacks.get(p.stack as usize) else {
                continue;
            };
            let n = sample.count;
            self.stats.frames += named.locations * n;
            self.stats.unknown_frames += named.unnamed.len() as u64 * n;
            self.stats.ranged_frames += named.ranged * n;
            for &reason in &named.unnamed {
                *self.stats.reasons.entry(reason).or_insert(0) += n;
            }
            let quality = match p.reach {
                Reach::NoCallchain => StackQuality::NoCallchain,
                Reach::Cut => StackQuality::Truncated,
                Reach::Unwound => StackQuality::Complete,
                _ if named.outermost_unnamed || named.outermost_ranged => StackQuality::Truncated,
                Reach::FpKept => StackQuality::FramePointerOnly,
                Reach::Whole => StackQuality::Complete,
            };
            self.stats.samples += n;
            match quality {
                StackQuality::Complete => self.stats.complete += n,
                StackQuality::Truncated => self.stats.truncated += n,
                StackQuality::NoCallchain => self.stats.no_callchain += n,
                StackQuality::FramePointerOnly => self.stats.fp_kept += n,
            }
            sample.stack = Arc::clone(&named.frames);
            sample.quality = quality;
        }
        // Its memory serves the next batch.
        self.pending_stacks = pending;
        out
    }

    /// The jitdump file process `pid` mapped as its marker, if any.
    pub(crate) fn jitdump(&self, pid: i32) -> Option<&std::path::Path> {
        self.jitdumps.get(&pid).map(std::path::PathBuf::as_path)
    }

    /// The interned frames the samples' stacks point into.
    pub(crate) fn frames(&self) -> &FrameTable {
        &self.frames
    }

    /// The name of `addr` in process `pid` under the maps as they are now,
    /// for an address of a sample already taken (`take_samples` named its
    /// location); `None` for one never seen. Looked up as given (no
    /// return-address adjustment).
    pub(crate) fn address(&self, pid: i32, addr: u64, kernel: bool) -> Option<AddressName> {
        let kernel = kernel || addr >= KERNEL_START;
        let key = loc_key(&self.dsos, self.procs.space(pid), addr, kernel);
        let id = *self.loc_index.get(&key)?;
        let r = (*self.loc_results.get(id as usize)?)?;
        let frame = *self
            .loc_frames
            .get((r.start + r.len).checked_sub(1)? as usize)?;
        let relative =
            !kernel && matches!(self.dsos.get(key.dso).kind, DsoKind::File | DsoKind::Vdso);
        Some(AddressName {
            frame,
            symoff: r.symoff,
            shown: if relative { key.addr } else { addr },
        })
    }

    /// Take everything: the remaining samples, the frames and the counts.
    pub(crate) fn finish(mut self) -> Resolution {
        self.last_batch = true;
        let samples = if self.merged.is_some() {
            self.fold_pending();
            self.folded_index = FxMap::default();
            std::mem::take(&mut self.folded)
        } else {
            self.take_samples()
        };
        self.stats.distinct_locations = self.locs.len() as u64;
        self.stats.distinct_stacks = if self.merged.is_some() {
            self.frame_stacks.len() as u64
        } else {
            self.stacks.len() as u64
        };
        let lost = self.lost.count();
        Resolution {
            samples,
            frames: self.frames,
            stats: self.stats,
            lost,
        }
    }
}

/// What an mmap'd path holds, and the name frames in it carry.
fn classify(pid: i32, path: &str) -> (DsoKind, String) {
    if path == "[vdso]" {
        return (DsoKind::Vdso, path.to_string());
    }
    let anon = path.is_empty()
        || path == "//anon"
        || path.starts_with("/anon_hugepage")
        || path.starts_with("/dev/zero")
        || path.starts_with("[anon");
    if anon {
        return (DsoKind::PerfMap(pid), PerfMap::path(pid));
    }
    if path.starts_with('/') {
        (DsoKind::File, path.to_string())
    } else {
        (DsoKind::Unknown, path.to_string())
    }
}

/// The resolver's part of the record pipeline: the process model from
/// COMM, FORK and executable MMAP records, samples to interned stacks, and
/// the two kinds of loss report counted apart (see `LostTally`).
impl RecordHandler for Resolver {
    fn handle_sample(&mut self, attr_index: usize, sample: &SampleRecord<'_>) {
        self.add_sample(attr_index, sample);
    }

    fn handle_mmap(&mut self, _attr_index: usize, mmap: &Mmap<'_>, _id: &CommonData) {
        if mmap.executable {
            self.add_mapping(mmap);
        }
    }

    fn handle_comm(&mut self, _attr_index: usize, c: &Comm<'_>, _id: &CommonData) {
        if c.exec {
            self.forget_addresses();
        }
        self.procs.handle_comm(c.pid, c.tid, c.name, c.exec);
    }

    fn handle_fork(&mut self, _attr_index: usize, f: &ForkOrExitRecord, _id: &CommonData) {
        self.forget_addresses();
        self.procs.handle_fork(f.pid, f.ppid, f.tid, f.ptid);
    }

    fn handle_lost(&mut self, lost: &Lost, _id: &CommonData) {
        self.lost.add(lost);
    }

    fn handle_ksymbol(&mut self, k: &Ksymbol<'_>, _id: &CommonData) {
        if !k.unregister && k.len > 0 {
            let name = Arc::from(String::from_utf8_lossy(k.name).as_ref());
            self.ksymbols
                .insert(k.addr, (k.addr.saturating_add(u64::from(k.len)), name));
        }
    }
}
