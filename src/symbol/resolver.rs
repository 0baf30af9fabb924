//! The resolver: parsed records in, `ResolvedSample`s out.
//!
//! Two phases so that each distinct (binary, file offset) is symbolized once
//! and in bulk. `handle_record` keeps the process model current and turns
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

use std::collections::HashMap;
use std::sync::Arc;

use linux_perf_event_reader::constants::{
    PERF_CONTEXT_KERNEL, PERF_CONTEXT_MAX, PERF_CONTEXT_USER,
};
use linux_perf_event_reader::{CpuMode, EventRecord, Mmap2FileId, RawDataU64, SampleRecord};
use std::hash::Hasher;

use super::binary::{Binary, BinaryCache, BinaryMiss};
use super::kallsyms::Kallsyms;
use super::names::{ElfNames, Names, VdsoSymbols};
use super::perf_map::PerfMap;
use super::process::{AddressSpace, DsoId, DsoKind, DsoTable, Mapping, ProcessModel};
use super::stacks::StackTable;
use super::unwind::{DwarfUnwinder, PERF_REG_X86_BP, PERF_REG_X86_IP, PERF_REG_X86_SP, UserState};
use super::{ResolveOptions, ResolveStats, UnresolvedReason};
use crate::model::sample::{Frame, FrameId, FrameKind, FrameTable, ResolvedSample, StackQuality};

/// The kernel's default `perf_event_max_stack`: a chain this long was cut.
const MAX_STACK: usize = 127;

/// A sample's callchain (with its pid and whether it was taken in the
/// kernel) as two independent 64-bit hashes: the key of `chain_stacks`.
/// Two chains that differ share both with a chance of about 2^-128 per
/// pair, so the chain itself is not kept to compare (it would double the
/// resolver's memory on deep stacks).
fn chain_key(pid: i32, kernel: bool, chain: &RawDataU64<'_>) -> u128 {
    let mut a = super::process::FxHasher::default();
    let mut b: u64 = 0x9e37_79b9_7f4a_7c15 ^ u64::from(pid as u32) ^ (u64::from(kernel) << 40);
    a.write_i32(pid);
    a.write_u8(u8::from(kernel));
    for i in 0..chain.len() {
        let Some(v) = chain.get(i) else { break };
        a.write_u64(v);
        // splitmix64's finalizer over a running sum: unrelated to Fx.
        b = b.wrapping_add(v).wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = b;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        b = z ^ (z >> 31);
    }
    a.write_usize(chain.len());
    (u128::from(a.finish()) << 64) | u128::from(b)
}

/// Chains `chain_stacks` holds at most (about 1 MB) before it starts over.
const CHAIN_CACHE: usize = 1 << 15;

/// Addresses at or above this are kernel addresses on x86_64.
const KERNEL_START: u64 = 0xffff_8000_0000_0000;

use super::process::FxMap;

const PROT_EXEC: u32 = 4;

/// The fields of MMAP and MMAP2 records the process model needs.
struct MmapInfo<'a> {
    pid: i32,
    cpu_mode: CpuMode,
    start: u64,
    len: u64,
    pgoff: u64,
    path: &'a [u8],
    /// The build-id an MMAP2 record carried (`perf record --buildid-mmap`).
    build_id: Option<Vec<u8>>,
}

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
}

/// One address of a sample, named (`Resolver::address`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AddressName {
    /// The function's frame (the outermost one when inlined frames expand it).
    pub frame: FrameId,
    /// The address's offset into that function (perf's `symoff`).
    pub symoff: Option<u64>,
    /// The address as perf script prints callchain frames: relative to its
    /// binary (`addr - map start + pgoff`) in user binaries, else as is.
    pub shown: u64,
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
    /// The outermost location had no name: the stack is cut.
    outermost_unnamed: bool,
}

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

/// What merged samples share (`ResolveOptions::merge_samples`). The comm
/// is the process model's `Arc`, by address: pending samples keep it alive.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct MergeKey {
    event: usize,
    comm: usize,
    pid: i32,
    tid: i32,
    stack: u32,
    unwound: Option<bool>,
}

/// What a pending sample still needs to get its stack and quality.
#[derive(Clone, Copy, Debug)]
struct PendingStack {
    /// Id in `Resolver::stacks`.
    stack: u32,
    /// None: no callchain at all; Some(false): cut short while unwinding.
    unwound: Option<bool>,
}

/// Turns records into resolved samples; see the module doc.
pub struct Resolver {
    procs: ProcessModel,
    dsos: DsoTable,
    binaries: BinaryCache,
    /// HEADER_BUILD_ID: path → build-id.
    header_build_ids: HashMap<Vec<u8>, Vec<u8>>,
    kallsyms: Option<Kallsyms>,
    kallsyms_path: Option<std::path::PathBuf>,
    /// kallsyms being read on a thread of its own since the first kernel
    /// address: the kernel takes ~70 ms to print it, the records meanwhile.
    kallsyms_loader: Option<std::thread::JoinHandle<Kallsyms>>,
    vdso: Option<VdsoSymbols>,
    perf_maps: HashMap<i32, Option<PerfMap>>,
    names: ElfNames,
    unwinder: DwarfUnwinder,
    loc_index: FxMap<LocKey, u32>,
    /// (pid, user address) → location id, for addresses seen since the last
    /// mmap, exec or fork (any of which empties it): most addresses repeat,
    /// and this skips the search of the maps.
    addr_locs: FxMap<(i32, u64), u32>,
    /// (pid, callchain) → stack id and unwound, emptied with `addr_locs`:
    /// the chain by two 64-bit hashes of it, not held (see `chain_key`).
    chain_stacks: FxMap<u128, (u32, Option<bool>)>,
    locs: Vec<LocKey>,
    loc_results: Vec<Option<LocResult>>,
    /// Locations below this index are all named: a batch looks for unnamed
    /// ones from here, not through the whole table.
    named_locs: usize,
    loc_frames: Vec<FrameId>,
    frames: FrameTable,
    /// Samples fed since the last `take_samples`, complete but for their
    /// stacks (empty until named; built in place, never copied).
    pending: Vec<ResolvedSample>,
    pending_stacks: Vec<PendingStack>,
    no_frames: Arc<[FrameId]>,
    stacks: StackTable,
    named_stacks: Vec<NamedStack>,
    /// Each distinct frame stack once (see `name_stacks`).
    frame_stacks: super::process::FxSet<Arc<[FrameId]>>,
    loc_scratch: Vec<u32>,
    stats: ResolveStats,
    lost: u64,
    scratch: Vec<(u64, bool)>,
    user_scratch: Vec<u64>,
    /// Look return addresses up at `addr - 1` (see the module doc).
    adjust_return_addresses: bool,
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
    pub fn new(options: &ResolveOptions) -> Self {
        Resolver {
            procs: ProcessModel::new(),
            dsos: DsoTable::new(),
            binaries: BinaryCache::new(options.use_build_id_cache),
            header_build_ids: HashMap::new(),
            kallsyms: None,
            kallsyms_path: options.kallsyms.clone(),
            kallsyms_loader: None,
            vdso: None,
            perf_maps: HashMap::new(),
            names: ElfNames::new(options.inline, options.demangle),
            unwinder: DwarfUnwinder::new(),
            loc_index: FxMap::default(),
            addr_locs: FxMap::default(),
            chain_stacks: FxMap::default(),
            locs: Vec::new(),
            loc_results: Vec::new(),
            named_locs: 0,
            loc_frames: Vec::new(),
            frames: FrameTable::default(),
            pending: Vec::new(),
            pending_stacks: Vec::new(),
            no_frames: Arc::from([]),
            stacks: StackTable::default(),
            named_stacks: Vec::new(),
            frame_stacks: Default::default(),
            loc_scratch: Vec::new(),
            stats: ResolveStats::default(),
            lost: 0,
            scratch: Vec::new(),
            user_scratch: Vec::new(),
            adjust_return_addresses: options.adjust_return_addresses || options.inline,
            merged: options.merge_samples.then(FxMap::default),
            merge_batch: options.merge_batch.max(1),
            folded: Vec::new(),
            folded_index: FxMap::default(),
            last_batch: false,
        }
    }

    /// Build-ids the file's HEADER_BUILD_ID section states, by path.
    pub fn set_header_build_ids(&mut self, ids: impl IntoIterator<Item = (Vec<u8>, Vec<u8>)>) {
        self.header_build_ids.extend(ids);
    }

    /// Feed one record, in time order. `attr_index` is the event (attribute)
    /// the record belongs to.
    pub fn handle_record(&mut self, attr_index: usize, record: &EventRecord<'_>) {
        match record {
            EventRecord::Sample(s) => self.handle_sample(attr_index, s),
            EventRecord::Comm(c) => {
                if c.is_execve {
                    self.forget_addresses();
                }
                self.procs
                    .handle_comm(c.pid, c.tid, &c.name.as_slice(), c.is_execve)
            }
            EventRecord::Fork(f) => {
                self.forget_addresses();
                self.procs.handle_fork(f.pid, f.ppid, f.tid, f.ptid)
            }
            EventRecord::Exit(_) => {}
            EventRecord::Mmap(m) if m.is_executable => self.handle_mmap(&MmapInfo {
                pid: m.pid,
                cpu_mode: m.cpu_mode,
                start: m.address,
                len: m.length,
                pgoff: m.page_offset,
                path: &m.path.as_slice(),
                build_id: None,
            }),
            EventRecord::Mmap2(m) if m.protection & PROT_EXEC != 0 => {
                let build_id = match &m.file_id {
                    Mmap2FileId::BuildId(id) => Some(id.clone()),
                    Mmap2FileId::InodeAndVersion(_) => None,
                };
                self.handle_mmap(&MmapInfo {
                    pid: m.pid,
                    cpu_mode: m.cpu_mode,
                    start: m.address,
                    len: m.length,
                    pgoff: m.page_offset,
                    path: &m.path.as_slice(),
                    build_id,
                })
            }
            EventRecord::Lost(l) => self.lost += l.count,
            _ => {}
        }
    }

    /// Count samples the kernel or perf reported lost (LOST, LOST_SAMPLES).
    pub fn add_lost(&mut self, n: u64) {
        self.lost += n;
    }

    fn handle_mmap(&mut self, m: &MmapInfo<'_>) {
        // The maps change: what `addr_locs` remembers may no longer hold.
        self.forget_addresses();
        // Kernel and module maps: kernel addresses are named from kallsyms.
        if m.pid == -1 || matches!(m.cpu_mode, CpuMode::Kernel | CpuMode::GuestKernel) {
            return;
        }
        let (pid, path) = (m.pid, m.path);
        let name = String::from_utf8_lossy(path);
        let (kind, name) = classify(pid, &name);
        let build_id = match kind {
            DsoKind::File => m
                .build_id
                .clone()
                .or_else(|| self.header_build_ids.get(path).cloned()),
            _ => None,
        };
        let dso = self.dsos.intern(&name, kind, build_id);
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
        let (name, build_id) = (d.name.clone(), d.build_id.clone());
        self.binaries.get(&name, build_id.as_deref())
    }

    fn handle_sample(&mut self, attr_index: usize, s: &SampleRecord<'_>) {
        let pid = s.pid.unwrap_or(-1);
        let tid = s.tid.unwrap_or(pid);
        // Before this sample's stack gets an id: folding starts the stack
        // table over.
        if self.merged.is_some() && self.pending.len() >= self.merge_batch {
            self.fold_pending();
        }
        // A frame-pointer chain met before in this process: its stack
        // without looking its addresses up again.
        let chain_key = match &s.callchain {
            Some(chain) if !chain.is_empty() && s.user_regs.is_none() && s.user_stack.is_none() => {
                Some(chain_key(pid, s.cpu_mode == CpuMode::Kernel, chain))
            }
            _ => None,
        };
        let (stack, unwound) = match chain_key.and_then(|k| self.chain_stacks.get(&k)) {
            Some(&known) => known,
            None => {
                let found = self.stack_of(pid, s);
                if let Some(k) = chain_key {
                    // Bounded: the hot chains come back at once.
                    if self.chain_stacks.len() >= CHAIN_CACHE {
                        self.chain_stacks.clear();
                    }
                    self.chain_stacks.insert(k, found);
                }
                found
            }
        };
        let comm = self.procs.comm(tid);
        self.push_sample(attr_index, s, comm, stack, unwound);
    }

    /// The stack id of a sample's addresses (and whether it was unwound
    /// to the end), looked up and interned.
    fn stack_of(&mut self, pid: i32, s: &SampleRecord<'_>) -> (u32, Option<bool>) {
        let mut addrs = std::mem::take(&mut self.scratch);
        addrs.clear();
        let dwarf_state = match (&s.user_regs, &s.user_stack) {
            (Some(regs), Some((stack, dyn_size))) => {
                match (
                    regs.get(PERF_REG_X86_IP),
                    regs.get(PERF_REG_X86_SP),
                    regs.get(PERF_REG_X86_BP),
                ) {
                    (Some(ip), Some(sp), Some(bp)) => Some((ip, sp, bp, stack, *dyn_size)),
                    _ => None,
                }
            }
            _ => None,
        };
        let mut unwound = None;
        let mut chain_len = 0;
        if let Some(chain) = &s.callchain {
            unwound = Some(true);
            let mut kernel = s.cpu_mode == CpuMode::Kernel;
            chain_len = chain.len();
            for i in 0..chain.len() {
                let Some(addr) = chain.get(i) else { break };
                if addr >= PERF_CONTEXT_MAX {
                    match addr {
                        PERF_CONTEXT_KERNEL => kernel = true,
                        PERF_CONTEXT_USER => {
                            kernel = false;
                            if dwarf_state.is_some() {
                                break;
                            }
                        }
                        _ => kernel = false,
                    }
                    continue;
                }
                addrs.push((addr, kernel || addr >= KERNEL_START));
            }
        }
        if let Some((ip, sp, bp, stack, dyn_size)) = dwarf_state
            && ip != 0
        {
            let bytes = stack.as_slice();
            let n = usize::try_from(dyn_size)
                .unwrap_or(usize::MAX)
                .min(bytes.len());
            let state = UserState {
                ip,
                sp,
                bp,
                stack: bytes.get(..n).unwrap_or(&[]),
            };
            let mut user = std::mem::take(&mut self.user_scratch);
            user.clear();
            let dsos = &self.dsos;
            let binaries = &mut self.binaries;
            let lookup = |dso: DsoId| {
                let d = dsos.get(dso);
                if d.kind != DsoKind::File {
                    return None;
                }
                binaries.get(&d.name, d.build_id.as_deref()).ok()
            };
            let complete = match self.procs.space(pid) {
                Some(space) => self.unwinder.unwind(pid, space, lookup, &state, &mut user),
                None => {
                    user.push(ip);
                    false
                }
            };
            addrs.extend(user.iter().map(|&a| (a, false)));
            self.user_scratch = user;
            unwound = Some(unwound.unwrap_or(true) && complete);
        }
        if addrs.is_empty()
            && let Some(ip) = s.ip
        {
            addrs.push((ip, s.cpu_mode == CpuMode::Kernel || ip >= KERNEL_START));
        }
        if chain_len >= MAX_STACK {
            unwound = unwound.map(|_| false);
        }
        if self.kallsyms.is_none()
            && self.kallsyms_loader.is_none()
            && addrs.iter().any(|&(_, kernel)| kernel)
        {
            let path = self.kallsyms_path.clone();
            self.kallsyms_loader = std::thread::Builder::new()
                .name("kallsyms".into())
                .spawn(move || load_kallsyms(path.as_deref()))
                .ok();
        }
        let mut ids = std::mem::take(&mut self.loc_scratch);
        ids.clear();
        let space = self.procs.space(pid);
        for (i, &(addr, kernel)) in addrs.iter().enumerate() {
            let lookup = if i == 0 || !self.adjust_return_addresses {
                addr
            } else {
                addr.saturating_sub(1)
            };
            // A user address seen before in this process: its location
            // without the search of the process's maps.
            if !kernel && let Some(&id) = self.addr_locs.get(&(pid, lookup)) {
                ids.push(id);
                continue;
            }
            let key = loc_key(&self.dsos, space, lookup, kernel);
            let next = self.locs.len() as u32;
            let id = *self.loc_index.entry(key).or_insert(next);
            if id == next {
                self.locs.push(key);
                self.loc_results.push(None);
            }
            if !kernel {
                self.addr_locs.insert((pid, lookup), id);
            }
            ids.push(id);
        }
        let stack = self.stacks.intern(&ids);
        self.loc_scratch = ids;
        self.scratch = addrs;
        (stack, unwound)
    }

    /// The maps of a process changed: addresses may name other places now.
    fn forget_addresses(&mut self) {
        self.addr_locs.clear();
        self.chain_stacks.clear();
    }

    /// Adds a sample with its stack id to the pending ones (or to the
    /// pending sample it merges with).
    fn push_sample(
        &mut self,
        attr_index: usize,
        s: &SampleRecord<'_>,
        comm: Arc<str>,
        stack: u32,
        unwound: Option<bool>,
    ) {
        let pid = s.pid.unwrap_or(-1);
        let tid = s.tid.unwrap_or(pid);
        let period = s.period.unwrap_or(1);
        if self.merged.is_some() {
            let key = MergeKey {
                event: attr_index,
                comm: Arc::as_ptr(&comm) as *const u8 as usize,
                pid,
                tid,
                stack,
                unwound,
            };
            let into = self.merged.as_ref().and_then(|m| m.get(&key).copied());
            if let Some(sample) = into.and_then(|i| self.pending.get_mut(i)) {
                sample.period += period;
                sample.count += 1;
                return;
            }
            let at = self.pending.len();
            if let Some(merged) = &mut self.merged {
                merged.insert(key, at);
            }
        }
        self.pending.push(ResolvedSample {
            event: attr_index,
            comm,
            pid,
            tid,
            cpu: s.cpu.unwrap_or(0),
            time: s.timestamp.unwrap_or(0),
            period,
            stack: Arc::clone(&self.no_frames),
            quality: StackQuality::Complete,
            count: 1,
        });
        self.pending_stacks.push(PendingStack { stack, unwound });
    }
}

impl Resolver {
    /// Name every location not named yet and return the samples fed since
    /// the last call, in feeding order. Frame ids index `frames()`.
    pub fn take_samples(&mut self) -> Vec<ResolvedSample> {
        self.resolve_locations();
        self.name_stacks();
        let mut out = std::mem::take(&mut self.pending);
        let pending = std::mem::take(&mut self.pending_stacks);
        if let Some(merged) = &mut self.merged {
            merged.clear();
        }
        for (sample, p) in out.iter_mut().zip(pending) {
            let Some(named) = self.named_stacks.get(p.stack as usize) else {
                continue;
            };
            let n = sample.count;
            self.stats.frames += named.locations * n;
            self.stats.unknown_frames += named.unnamed.len() as u64 * n;
            for &reason in &named.unnamed {
                *self.stats.reasons.entry(reason).or_insert(0) += n;
            }
            let quality = match p.unwound {
                None => StackQuality::NoCallchain,
                Some(false) => StackQuality::Truncated,
                Some(true) if named.outermost_unnamed => StackQuality::Truncated,
                Some(true) => StackQuality::Complete,
            };
            self.stats.samples += n;
            match quality {
                StackQuality::Complete => self.stats.complete += n,
                StackQuality::Truncated => self.stats.truncated += n,
                StackQuality::NoCallchain => self.stats.no_callchain += n,
            }
            sample.stack = Arc::clone(&named.frames);
            sample.quality = quality;
        }
        out
    }

    /// Builds the frames of every stack not named yet (its locations are).
    fn name_stacks(&mut self) {
        let mut frames = Vec::new();
        for id in self.named_stacks.len()..self.stacks.len() {
            frames.clear();
            let mut named = NamedStack {
                frames: Arc::from([]),
                locations: 0,
                unnamed: Vec::new(),
                outermost_unnamed: false,
            };
            for &loc in self.stacks.get(id as u32) {
                let Some(Some(r)) = self.loc_results.get(loc as usize) else {
                    continue;
                };
                let range = r.start as usize..(r.start + r.len) as usize;
                frames.extend_from_slice(self.loc_frames.get(range).unwrap_or(&[]));
                named.locations += 1;
                named.unnamed.extend(r.reason);
                named.outermost_unnamed = r.reason.is_some();
            }
            // Stacks of locations that differ only in addresses within the
            // same functions name the same frames: share one `Arc`.
            named.frames = match self.frame_stacks.get(frames.as_slice()) {
                Some(shared) => Arc::clone(shared),
                None => {
                    let shared: Arc<[FrameId]> = Arc::from(frames.as_slice());
                    self.frame_stacks.insert(Arc::clone(&shared));
                    shared
                }
            };
            self.named_stacks.push(named);
        }
    }

    /// The interned frames the samples' stacks point into.
    pub fn frames(&self) -> &FrameTable {
        &self.frames
    }

    /// The name of `addr` in process `pid` under the maps as they are now,
    /// for an address of a sample already taken (`take_samples` named its
    /// location); `None` for one never seen. Looked up as given (no
    /// return-address adjustment).
    pub fn address(&self, pid: i32, addr: u64, kernel: bool) -> Option<AddressName> {
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

    /// Counts so far (samples are counted when taken).
    pub fn stats(&self) -> &ResolveStats {
        &self.stats
    }

    /// Lost events seen so far.
    pub fn lost(&self) -> u64 {
        self.lost
    }

    /// Names the pending samples and merges them into `folded`: samples
    /// whose locations differ but name the same frames become one, so
    /// memory follows the distinct frame stacks, not the samples.
    fn fold_pending(&mut self) {
        let samples = self.take_samples();
        // No pending sample refers to a location stack any more: start the
        // table over, so it holds one batch's stacks, not the file's. The
        // named frame stacks (`frame_stacks`) stay, and keep merging.
        self.stacks = StackTable::default();
        self.named_stacks.clear();
        self.chain_stacks.clear();
        for sample in samples {
            let key = (
                sample.event,
                Arc::as_ptr(&sample.comm) as *const u8 as usize,
                sample.pid,
                sample.tid,
                Arc::as_ptr(&sample.stack) as *const FrameId as usize,
                sample.quality,
            );
            match self
                .folded_index
                .get(&key)
                .and_then(|&i| self.folded.get_mut(i))
            {
                Some(into) => {
                    into.period += sample.period;
                    into.count += sample.count;
                }
                None => {
                    self.folded_index.insert(key, self.folded.len());
                    self.folded.push(sample);
                }
            }
        }
    }

    /// Take everything: the remaining samples, the frames and the counts.
    pub fn finish(mut self) -> (Vec<ResolvedSample>, FrameTable, ResolveStats, u64) {
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
        (samples, self.frames, self.stats, self.lost)
    }

    /// Name all unnamed locations, grouped by dso.
    fn resolve_locations(&mut self) {
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
            });
        }
    }

    fn set_unnamed(&mut self, id: u32, dso: DsoId, kind: FrameKind, reason: UnresolvedReason) {
        let frame = Frame {
            sym: None,
            dso: self.dsos.get(dso).name.clone(),
            kind,
            inlined: false,
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
            })
            .collect();
        frames.push(Frame {
            sym: Some(Arc::from(names.function.as_str())),
            dso,
            kind,
            inlined: false,
        });
        self.set_frames(id, &frames, None);
        if let Some(Some(r)) = self.loc_results.get_mut(id as usize) {
            r.symoff = names.offset;
        }
    }

    fn name_kernel(&mut self, ids: &[u32]) {
        if self.kallsyms.is_none() {
            let loaded = match self.kallsyms_loader.take().map(|t| t.join()) {
                Some(Ok(k)) => k,
                _ => load_kallsyms(self.kallsyms_path.as_deref()),
            };
            self.kallsyms = Some(loaded);
        }
        for &id in ids {
            let addr = self.locs.get(id as usize).map_or(0, |k| k.addr);
            let found = self.kallsyms.as_ref().and_then(|k| {
                k.find(addr)
                    .map(|s| (s.name.to_string(), addr - s.start, Kallsyms::dso_name(&s)))
            });
            match found {
                Some((name, offset, dso)) => {
                    let names = Names {
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
                    self.set_unnamed(id, DsoTable::KERNEL, FrameKind::Kernel, reason);
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
        let (inline, demangle) = self.names.config();
        let mut out: Vec<Vec<Option<Names>>> = vec![Vec::new(); jobs.len()];
        let theirs = std::thread::scope(|scope| {
            let worker = scope.spawn(|| {
                let mut names = ElfNames::new(inline, demangle);
                there
                    .iter()
                    .map(|&i| {
                        let j = &jobs[i];
                        let named = names
                            .symbolize(&j.binary.symbols_path, &j.batch)
                            .unwrap_or_default();
                        names.forget(&j.binary.symbols_path);
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
        let path = &job.binary.symbols_path;
        let named = self.names.symbolize(path, &job.batch).unwrap_or_default();
        if self.last_batch {
            self.names.forget(path);
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
            match found {
                Some(n) => self.set_named(id, name.clone(), FrameKind::User, Some(n)),
                None => self.set_unnamed(id, job.dso, FrameKind::User, miss),
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
                function,
                offset: Some(offset),
                inlined: Vec::new(),
            });
            self.set_named(id, name.clone(), FrameKind::User, names.as_ref());
        }
    }

    fn name_jit(&mut self, dso: DsoId, pid: i32, ids: &[u32]) {
        let fresh = !self.perf_maps.contains_key(&pid);
        let map = self
            .perf_maps
            .entry(pid)
            .or_insert_with(|| PerfMap::for_pid(pid));
        if fresh && let Some(m) = map {
            self.stats.malformed_perf_map_lines += m.malformed_lines;
        }
        let found: Vec<Option<String>> = ids
            .iter()
            .map(|&id| {
                let addr = self.locs.get(id as usize).map_or(0, |k| k.addr);
                map.as_ref().and_then(|m| m.find(addr)).map(str::to_string)
            })
            .collect();
        let have_map = map.is_some();
        let name = self.dsos.get(dso).name.clone();
        for (&id, f) in ids.iter().zip(found) {
            match f {
                Some(function) => {
                    let names = Names {
                        function,
                        offset: None,
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

/// The kernel's symbols from `path`, else `/proc/kallsyms`; empty when
/// unreadable (every kernel frame then says why it has no name).
fn load_kallsyms(path: Option<&std::path::Path>) -> Kallsyms {
    let parsed = match path {
        Some(p) => std::fs::File::open(p).and_then(|f| Kallsyms::parse(std::io::BufReader::new(f))),
        None => Kallsyms::from_proc(),
    };
    parsed.unwrap_or_default()
}

/// The location of `addr` in a process with maps `space`.
fn loc_key(dsos: &DsoTable, space: Option<&AddressSpace>, addr: u64, kernel: bool) -> LocKey {
    if kernel {
        return LocKey {
            dso: DsoTable::KERNEL,
            addr,
        };
    }
    let unknown = LocKey {
        dso: DsoTable::UNKNOWN,
        addr: 0,
    };
    let Some(m) = space.and_then(|s| s.find(addr)) else {
        return unknown;
    };
    match dsos.get(m.dso).kind {
        DsoKind::File | DsoKind::Vdso => LocKey {
            dso: m.dso,
            addr: addr - m.start + m.pgoff,
        },
        DsoKind::PerfMap(_) => LocKey { dso: m.dso, addr },
        DsoKind::Kernel | DsoKind::Unknown => unknown,
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
