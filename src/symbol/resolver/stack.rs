//! A sample's addresses (`user_stack`) into an interned stack of locations,
//! each address turned into a location (a dso and a file offset) with
//! no symbol lookup. Two caches skip the work for what repeats: (pid,
//! address) -> location and (pid, callchain) -> stack, both emptied when the
//! maps may have changed (mmap, exec, fork).

use std::sync::Arc;

use linux_perf_event_reader::{CpuMode, RawDataU64, SampleRecord};

use super::naming::load_kallsyms;
use super::{LocKey, MergeKey, PendingStack, PreparedStack, Reach, Resolver};
use crate::model::sample::{FrameId, ResolvedSample, StackQuality};
use crate::symbol::process::{AddressSpace, DsoKind, DsoTable};

/// A sample's callchain (with its pid and whether it was taken in the
/// kernel) as two 64-bit hashes (`StackKey`): the key of `chain_stacks`.
/// Two chains that differ share both with a chance of about 2^-128 per
/// pair, so the chain itself is not kept to compare (it would double the
/// resolver's memory on deep stacks).
fn chain_key(pid: i32, kernel: bool, chain: &RawDataU64<'_>) -> u128 {
    let mut key = StackKey::new(u64::from(pid as u32) | (u64::from(kernel) << 32));
    let n = chain.len();
    let mut i = 0;
    while i < n {
        let Some(w0) = chain.get(i) else { break };
        key.pair(w0, chain.get(i + 1).unwrap_or(0));
        i += 2;
    }
    key.finish(n)
}

/// Two 64-bit hashes of a stack's words, each a different multiply mix.
/// The words go in by pairs and only one multiply per pair is on each
/// lane's chain of dependent operations (the other word's is off it), so
/// a deep stack costs a quarter of the dependent multiplies of the Fx plus
/// splitmix64 pair it replaces (its hashing was a tenth of a deep report's
/// CPU). A pair that differs in one word changes both lanes (each step is
/// a bijection of either word), and the length goes into the finish.
pub(super) struct StackKey {
    a: u64,
    b: u64,
}

const KEY_A: u64 = 0x517c_c1b7_2722_0a95;
const KEY_B: u64 = 0x9e37_79b9_7f4a_7c15;
const KEY_C: u64 = 0xbf58_476d_1ce4_e5b9;
const KEY_D: u64 = 0x94d0_49bb_1331_11eb;
/// Xored into a kernel address: a kernel and a user address differ.
const KEY_KERNEL: u64 = 0xd6e8_feb8_6659_fd93;

impl StackKey {
    pub(super) fn new(seed: u64) -> Self {
        StackKey {
            a: seed.wrapping_mul(KEY_A),
            b: seed ^ KEY_B,
        }
    }

    #[inline]
    pub(super) fn pair(&mut self, w0: u64, w1: u64) {
        self.a = (self.a.rotate_left(5) ^ w0.wrapping_mul(KEY_C) ^ w1).wrapping_mul(KEY_A);
        let m = (self.b ^ w0 ^ w1.wrapping_mul(KEY_D)).wrapping_mul(KEY_B);
        self.b = m ^ (m >> 29);
    }

    pub(super) fn finish(self, len: usize) -> u128 {
        let len = len as u64;
        let a = splitmix(self.a ^ len);
        let b = splitmix(self.b.wrapping_add(len.wrapping_mul(KEY_C)));
        (u128::from(a) << 64) | u128::from(b)
    }
}

/// splitmix64's finalizer.
fn splitmix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(KEY_C);
    z = (z ^ (z >> 27)).wrapping_mul(KEY_D);
    z ^ (z >> 31)
}

/// Chains `chain_stacks` holds at most (about 1 MB) before it starts over.
pub(super) const CHAIN_CACHE: usize = 1 << 15;

impl Resolver {
    pub(super) fn add_sample(&mut self, attr_index: usize, s: &SampleRecord<'_>) {
        let meta = SampleMeta::of(s);
        let pid = meta.pid;
        // Before this sample's stack gets an id: folding starts the stack
        // table over.
        self.fold_if_full();
        // A frame-pointer chain met before in this process: its stack
        // without looking its addresses up again.
        let chain_key = match &s.callchain {
            Some(chain) if !chain.is_empty() && s.user_regs.is_none() && s.user_stack.is_none() => {
                Some(chain_key(pid, s.cpu_mode == CpuMode::Kernel, chain))
            }
            _ => None,
        };
        let (stack, reach) = match chain_key.and_then(|k| self.chain_stacks.get(&k)) {
            Some(&known) => known,
            None => {
                let mut addrs = std::mem::take(&mut self.scratch);
                let reach = self.sample_addresses(pid, s, &mut addrs);
                let found = match chain_key {
                    // Bounded: the hot chains come back at once.
                    Some(k) => {
                        let found = (self.stack_of_addresses(pid, &addrs), reach);
                        if self.chain_stacks.len() >= CHAIN_CACHE {
                            self.chain_stacks.clear();
                        }
                        self.chain_stacks.insert(k, found);
                        found
                    }
                    // A stack copy makes each chain differ: the stack by
                    // the addresses the copy and the chain gave.
                    None => (self.cached_stack(pid, &addrs), reach),
                };
                self.scratch = addrs;
                found
            }
        };
        self.push_sample(attr_index, meta, stack, reach);
    }

    /// A sample whose addresses (and their `addresses_key`) another
    /// thread found (`pipeline`): as `add_sample`, from its metadata and
    /// addresses; None when that thread sent the same key before (its
    /// stack is in `prepared_stacks`).
    pub(super) fn add_prepared(
        &mut self,
        attr_index: usize,
        meta: SampleMeta,
        addrs: Option<&[(u64, bool)]>,
        key: u128,
        reach: Reach,
    ) {
        self.fold_if_full();
        let stack = match addrs {
            Some(addrs) => {
                let stack = self.stack_of_addresses(meta.pid, addrs);
                // `stack_of_addresses` left the location ids there.
                let start = self.prepared_locs.len();
                self.prepared_locs.extend_from_slice(&self.loc_scratch);
                let prepared = PreparedStack {
                    locs: start..self.prepared_locs.len(),
                    epoch: self.fold_epoch,
                    stack,
                };
                self.prepared_stacks.insert(key, prepared);
                stack
            }
            // Sent before, and not forgotten since: always there (an empty
            // stack rather than a panic were it not).
            None => match self.prepared_stacks.get_mut(&key) {
                Some(p) if p.epoch == self.fold_epoch => p.stack,
                Some(p) => {
                    let locs = self.prepared_locs.get(p.locs.clone()).unwrap_or(&[]);
                    p.stack = self.stacks.intern(locs);
                    p.epoch = self.fold_epoch;
                    p.stack
                }
                None => self.stack_of_addresses(meta.pid, &[]),
            },
        };
        self.push_sample(attr_index, meta, stack, reach);
    }

    /// `pipeline`'s finding thread forgot the stacks it sent.
    pub(super) fn forget_prepared(&mut self) {
        self.prepared_stacks.clear();
        self.prepared_locs.clear();
    }

    /// With merging, every `merge_batch` pending samples are named and
    /// folded.
    fn fold_if_full(&mut self) {
        if self.merged.is_some() && self.pending.len() >= self.merge_batch {
            self.fold_pending();
        }
    }

    /// The stack id of a sample's addresses, through `addr_stacks`: the
    /// same addresses in the same process, between two changes of its
    /// maps, are the same stack.
    fn cached_stack(&mut self, pid: i32, addrs: &[(u64, bool)]) -> u32 {
        self.stack_by_key(addresses_key(pid, addrs), pid, addrs)
    }

    /// `cached_stack` with the key already made.
    fn stack_by_key(&mut self, key: u128, pid: i32, addrs: &[(u64, bool)]) -> u32 {
        if let Some(&known) = self.addr_stacks.get(&key) {
            return known;
        }
        let found = self.stack_of_addresses(pid, addrs);
        if self.addr_stacks.len() >= CHAIN_CACHE {
            self.addr_stacks.clear();
        }
        self.addr_stacks.insert(key, found);
        found
    }

    /// The stack id of a sample's addresses (leaf first, each marked
    /// kernel or user), each looked up and the whole interned; their
    /// location ids stay in `loc_scratch`.
    fn stack_of_addresses(&mut self, pid: i32, addrs: &[(u64, bool)]) -> u32 {
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
        let tags = self.loc_cache.tags(pid);
        let adjust = self.adjust_return_addresses;
        // One slot compared per address on the hot path (a few registers:
        // the maps' way is out of line, `location_of`). Return addresses
        // are looked up as they are unless `adjust_return_addresses`: the
        // loop without the position of each is the usual one.
        let mut locate = |lookup: u64, kernel: bool| {
            let tag = tags.of(kernel);
            match self.loc_cache.get(tag, lookup) {
                Some(id) => id,
                None => self.location_of(pid, lookup, kernel, tag),
            }
        };
        match (adjust, addrs.split_first()) {
            (true, Some((&(leaf, kernel), callers))) => {
                ids.push(locate(leaf, kernel));
                ids.extend(
                    callers
                        .iter()
                        .map(|&(addr, kernel)| locate(addr.saturating_sub(1), kernel)),
                );
            }
            _ => ids.extend(addrs.iter().map(|&(addr, kernel)| locate(addr, kernel))),
        }
        let stack = self.stacks.intern(&ids);
        self.loc_scratch = ids;
        stack
    }

    /// The location id of `addr` (as looked up) in process `pid`, made if
    /// new: the maps' way, behind `loc_cache` (where it goes, under `tag`).
    #[cold]
    #[inline(never)]
    fn location_of(&mut self, pid: i32, addr: u64, kernel: bool, tag: u64) -> u32 {
        let id = self.location_in_maps(pid, addr, kernel);
        self.loc_cache.put(tag, addr, id);
        id
    }

    fn location_in_maps(&mut self, pid: i32, addr: u64, kernel: bool) -> u32 {
        // A user address seen before in this process: its location
        // without the search of the process's maps.
        if !kernel && let Some(&id) = self.addr_locs.get(&(pid, addr)) {
            return id;
        }
        let key = loc_key(&self.dsos, self.procs.space(pid), addr, kernel);
        let next = self.locs.len() as u32;
        let id = *self.loc_index.entry(key).or_insert(next);
        if id == next {
            self.locs.push(key);
            self.loc_results.push(None);
        }
        if !kernel {
            self.addr_locs.insert((pid, addr), id);
        }
        id
    }

    /// The maps of a process changed: addresses may name other places now.
    pub(super) fn forget_addresses(&mut self) {
        self.maps_generation = self.maps_generation.wrapping_add(1);
        self.addr_locs.clear();
        self.loc_cache.clear();
        self.chain_stacks.clear();
        self.addr_stacks.clear();
    }

    /// Adds a sample with its stack id to the pending ones (or to the
    /// pending sample it merges with).
    fn push_sample(&mut self, attr_index: usize, meta: SampleMeta, stack: u32, reach: Reach) {
        let SampleMeta {
            pid,
            tid,
            cpu,
            time,
            period,
        } = meta;
        if self.merged.is_some() {
            let key = MergeKey {
                event: attr_index,
                comm: Arc::as_ptr(self.procs.comm_ref(tid)) as *const u8 as usize,
                pid,
                tid,
                stack,
                reach,
            };
            let into = self.merged.as_ref().and_then(|m| m.get(&key).copied());
            if let Some(sample) = into.and_then(|i| self.pending.get_mut(i)) {
                sample.period = sample.period.saturating_add(period);
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
            comm: Arc::clone(self.procs.comm_ref(tid)),
            pid,
            tid,
            cpu,
            time,
            period,
            stack: Arc::clone(&self.no_frames),
            quality: StackQuality::Complete,
            count: 1,
        });
        self.pending_stacks.push(PendingStack { stack, reach });
    }
}

/// What a resolved sample keeps of its record, besides its stack.
#[derive(Clone, Copy, Debug)]
pub(super) struct SampleMeta {
    pub(super) pid: i32,
    pub(super) tid: i32,
    pub(super) cpu: u32,
    pub(super) time: u64,
    pub(super) period: u64,
}

impl SampleMeta {
    pub(super) fn of(s: &SampleRecord<'_>) -> Self {
        let pid = s.pid.unwrap_or(-1);
        SampleMeta {
            pid,
            tid: s.tid.unwrap_or(pid),
            cpu: s.cpu.unwrap_or(u32::MAX),
            time: s.timestamp.unwrap_or(0),
            period: s.period.unwrap_or(1),
        }
    }
}

/// A sample's addresses (with its pid) as two 64-bit hashes, as
/// `chain_key`: the key of `addr_stacks`.
pub(super) fn addresses_key(pid: i32, addrs: &[(u64, bool)]) -> u128 {
    let word = |(addr, kernel): (u64, bool)| addr ^ (u64::from(kernel) * KEY_KERNEL);
    let mut key = StackKey::new(u64::from(pid as u32) | (1 << 33));
    let mut pairs = addrs.chunks_exact(2);
    for pair in &mut pairs {
        if let [x, y] = pair {
            key.pair(word(*x), word(*y));
        }
    }
    if let [x] = pairs.remainder() {
        key.pair(word(*x), 0);
    }
    key.finish(addrs.len())
}

/// A stack of frames as two 64-bit hashes, as `chain_key` (two frame ids
/// a word): the key of `Resolver::frame_stacks`.
pub(super) fn frames_key(frames: &[FrameId]) -> u128 {
    let word = |pair: &[FrameId]| {
        pair.iter()
            .rev()
            .fold(0u64, |w, f| (w << 32) | u64::from(f.0))
    };
    let mut key = StackKey::new(1 << 34);
    let mut quads = frames.chunks_exact(4);
    for quad in &mut quads {
        let (lo, hi) = quad.split_at(2);
        key.pair(word(lo), word(hi));
    }
    let rest = quads.remainder();
    if !rest.is_empty() {
        let (lo, hi) = rest.split_at(rest.len().min(2));
        key.pair(word(lo), word(hi));
    }
    key.finish(frames.len())
}

/// The location of `addr` in a process with maps `space`.
pub(super) fn loc_key(
    dsos: &DsoTable,
    space: Option<&AddressSpace>,
    addr: u64,
    kernel: bool,
) -> LocKey {
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
