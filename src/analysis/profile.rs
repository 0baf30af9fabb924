//! The flat profile behind `scry report`: histogram entries keyed by perf's
//! sort keys (`sort_key`: `comm`, `pid`, `tid`, `cpu`, `parent`, `dso`,
//! `sym`, `srcline`), with perf's `Self` and `Children` arithmetic.
//!
//! Semantics (those of `perf report`):
//! - **self**: a sample's period goes to the entry of its leaf frame only;
//! - **children**: a sample's period goes once to every *distinct* entry on
//!   its stack, so a recursive function counts once per sample, not once
//!   per frame; `self <= children` always holds for every entry;
//! - percentages are of the event's total period (perf's default
//!   `--percentage absolute`): filters hide entries and samples but never
//!   change the denominator, so a filtered report still reads as "share of
//!   everything recorded".
//!
//! Non-obvious decision: entries are keyed by interned integers. Every frame
//! is mapped once to a `(dso, sym)` id pair (a symbol is identified by its
//! name *and* binary, as perf's `sym` key compares symbol objects, not
//! names) and to a slot id (what its entry is told apart by under the frame
//! keys in use), every comm string once to an id, and the hot loop then
//! hashes six integers per entry. Stacks of hundreds of thousands of samples
//! aggregate without touching a string.

use std::sync::Arc;

use super::hash::FxHashMap;
use super::sample::{FrameId, FrameKind, FrameTable, ResolvedSample};

use super::sort_key::is_parent_name;
pub(crate) use super::sort_key::{SampleFilter, SortKey, dso_short_name};

/// Settings of one report.
#[derive(Clone, Debug)]
pub(crate) struct ProfileOptions {
    /// Sort keys, in column order. Default `comm,dso,sym`.
    pub(crate) sort: Vec<SortKey>,
    /// Compute `Children` (cumulative) besides `Self`. Default: on when the
    /// file has callchains, as perf does.
    pub(crate) children: bool,
    pub(crate) filter: SampleFilter,
    /// The socket of each CPU (the file's CPU_TOPOLOGY), for the `socket`
    /// key; CPUs past its end are socket -1, as in perf.
    pub(crate) sockets: Vec<i32>,
}

impl Default for ProfileOptions {
    fn default() -> Self {
        ProfileOptions {
            sort: vec![SortKey::Comm, SortKey::Dso, SortKey::Sym],
            children: true,
            filter: SampleFilter::default(),
            sockets: Vec::new(),
        }
    }
}

/// The integer key of an entry; fields not in the sort list are zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct RawKey {
    comm: u32,
    pid: i32,
    tid: i32,
    cpu: u32,
    socket: i32,
    parent: u32,
    /// The frame's part: its slot (`KeyTable::frame_slots`).
    slot: u32,
}

/// What the entry keys of a group share besides the frame: comm (when a
/// sort key), pid, tid, cpu, socket and parent (zero unless sort keys).
pub(crate) type GroupContext = (u32, i32, i32, (u32, i32), u32);

/// `StackGroup::parent` of a stack with no frame matching the pattern.
const NO_PARENT: u32 = u32::MAX;

/// One line of the report.
#[derive(Clone, Debug)]
pub(crate) struct Entry {
    /// The sample's command, if `comm` is a sort key.
    pub(crate) comm: Option<Arc<str>>,
    pub(crate) pid: Option<i32>,
    pub(crate) tid: Option<i32>,
    pub(crate) cpu: Option<u32>,
    pub(crate) socket: Option<i32>,
    /// `parent`: the first frame from the leaf matching perf's parent
    /// pattern; `Some(None)` is perf's `[other]`.
    pub(crate) parent: Option<Option<FrameId>>,
    /// A frame carrying this entry's binary, symbol and source line, if
    /// `dso`, `sym` or `srcline` is a sort key (the first frame seen).
    pub(crate) frame: Option<FrameId>,
    pub(crate) self_period: u64,
    pub(crate) self_samples: u64,
    /// The part of `self_period` sampled in the kernel (perf's `overhead_sys`).
    pub(crate) self_sys_period: u64,
    /// Equal to the self figures when children are not computed.
    pub(crate) children_period: u64,
    pub(crate) children_samples: u64,
    pub(crate) key: RawKey,
}

/// The profile of one event (one section of the report).
#[derive(Clone, Debug)]
pub(crate) struct EventProfile {
    /// Index of the event in the file.
    pub(crate) event: usize,
    /// Samples of this event in the file (before filters).
    pub(crate) nr_samples: u64,
    /// Sum of their periods: the denominator of every percentage.
    pub(crate) total_period: u64,
    /// Samples whose stack was empty (not even an IP): counted in the total,
    /// attributed to no entry.
    pub(crate) no_ip_samples: u64,
    /// Sorted hottest first (by children when computed, else by self).
    pub(crate) entries: Vec<Entry>,
}

impl EventProfile {
    /// `period` as a percentage of this event's total.
    pub(crate) fn percent(&self, period: u64) -> f64 {
        if self.total_period == 0 {
            0.0
        } else {
            period as f64 * 100.0 / self.total_period as f64
        }
    }

    /// Drops entries under `limit` percent (`--percent-limit`), measured on
    /// the column the report is sorted by.
    pub(crate) fn retain_above(&mut self, limit: f64, children: bool) {
        let total = self.total_period;
        self.entries.retain(|e| {
            let period = if children {
                e.children_period
            } else {
                e.self_period
            };
            total == 0 || period as f64 * 100.0 / total as f64 >= limit
        });
    }
}

/// Interned identities of frames and comms, shared by the flat profile and
/// the call trees built on top of it.
#[derive(Debug, Default)]
pub(crate) struct KeyTable {
    /// Per `FrameId`: (dso id, sym id). Sym ids are unique across dsos.
    frame_keys: Vec<(u32, u32)>,
    /// Per sym id: the first frame seen with it.
    sym_frames: Vec<FrameId>,
    /// Per `FrameId`: what tells its entry apart from other frames' under
    /// the sort keys (the dso, sym and srcline the keys use, interned);
    /// all zero when no key is a frame key.
    frame_slots: Vec<u32>,
    slot_count: usize,
    /// Per `FrameId`: whether its name matches perf's parent pattern.
    parent_frames: Vec<bool>,
    comms: FxHashMap<Arc<str>, u32>,
}

impl KeyTable {
    pub(crate) fn new(frames: &FrameTable, sort: &[SortKey]) -> KeyTable {
        let mut dsos: FxHashMap<&str, u32> = FxHashMap::default();
        let mut syms: FxHashMap<(u32, Option<&str>), u32> = FxHashMap::default();
        let mut slots: FxHashMap<(u32, u32, Option<&str>), u32> = FxHashMap::default();
        let (by_dso, by_sym) = (sort.contains(&SortKey::Dso), sort.contains(&SortKey::Sym));
        let by_line = sort.contains(&SortKey::Srcline);
        let parents = sort.contains(&SortKey::Parent);
        let mut table = KeyTable::default();
        for index in 0..frames.len() {
            let id = FrameId(index as u32);
            let frame = frames.get(id);
            let next_dso = dsos.len() as u32;
            let dso = *dsos.entry(&frame.dso).or_insert(next_dso);
            let next_sym = syms.len() as u32;
            let sym = *syms.entry((dso, frame.sym.as_deref())).or_insert(next_sym);
            if sym as usize == table.sym_frames.len() {
                table.sym_frames.push(id);
            }
            table.frame_keys.push((dso, sym));
            let slot_key = (
                if by_dso { dso } else { u32::MAX },
                if by_sym { sym } else { u32::MAX },
                frame.srcline.as_deref().filter(|_| by_line),
            );
            let next_slot = slots.len() as u32;
            table
                .frame_slots
                .push(*slots.entry(slot_key).or_insert(next_slot));
            table
                .parent_frames
                .push(parents && frame.sym.as_deref().is_some_and(is_parent_name));
        }
        table.slot_count = slots.len().max(1);
        table
    }

    /// The symbol identity (name + binary) of a frame.
    pub(crate) fn sym_of(&self, frame: FrameId) -> u32 {
        self.frame_keys
            .get(frame.0 as usize)
            .map_or(u32::MAX, |&(_, sym)| sym)
    }

    /// The first frame seen with this symbol identity.
    pub(crate) fn frame_of_sym(&self, sym: u32) -> Option<FrameId> {
        self.sym_frames.get(sym as usize).copied()
    }

    fn slot_of(&self, frame: FrameId) -> u32 {
        self.frame_slots
            .get(frame.0 as usize)
            .copied()
            .unwrap_or(u32::MAX)
    }

    /// perf's parent of a stack (leaf first): the sym id of the first frame
    /// matching the pattern, or `NO_PARENT`.
    fn parent_of(&self, stack: &[FrameId]) -> u32 {
        stack
            .iter()
            .find(|f| self.parent_frames.get(f.0 as usize) == Some(&true))
            .map_or(NO_PARENT, |&f| self.sym_of(f))
    }

    fn comm_id(&mut self, comm: &Arc<str>) -> u32 {
        if let Some(&id) = self.comms.get(comm) {
            return id;
        }
        let id = self.comms.len() as u32;
        self.comms.insert(comm.clone(), id);
        id
    }
}

/// Which fields of a `RawKey` the sort list uses.
#[derive(Clone, Copy, Debug)]
pub(crate) struct KeyMask {
    comm: bool,
    pid: bool,
    tid: bool,
    cpu: bool,
    socket: bool,
    parent: bool,
    /// `dso`, `sym` or `srcline`: entries carry a frame.
    frame: bool,
}

impl KeyMask {
    fn new(sort: &[SortKey]) -> KeyMask {
        KeyMask {
            comm: sort.contains(&SortKey::Comm),
            pid: sort.contains(&SortKey::Pid),
            tid: sort.contains(&SortKey::Tid),
            cpu: sort.contains(&SortKey::Cpu),
            socket: sort.contains(&SortKey::Socket),
            parent: sort.contains(&SortKey::Parent),
            frame: sort.iter().any(|k| !k.of_sample()),
        }
    }

    /// Within one group (comm, pid, tid, cpu and parent fixed), what tells
    /// the entries of frames apart (`KeyTable::frame_slots`). Slots run
    /// below `slots`.
    pub(crate) fn slot(self, keys: &KeyTable, frame: FrameId) -> u32 {
        keys.slot_of(frame)
    }

    pub(crate) fn slots(self, keys: &KeyTable) -> usize {
        keys.slot_count
    }

    /// The key of `frame` in a group of samples (whose pid, tid, cpu and
    /// parent are already zero unless they are sort keys).
    fn key(self, keys: &KeyTable, group: &StackGroup, frame: FrameId) -> RawKey {
        RawKey {
            comm: if self.comm { group.comm } else { 0 },
            pid: group.pid,
            tid: group.tid,
            cpu: if self.cpu { group.cpu } else { 0 },
            socket: group.socket,
            parent: group.parent,
            slot: keys.slot_of(frame),
        }
    }
}

/// Samples that agree on everything a profile looks at (event, comm, the
/// pid/tid when they are sort keys, and the whole stack), merged. Real
/// profiles repeat a few thousand stacks hundreds of thousands of times, so
/// the self/children arithmetic and the call trees run once per group with
/// the group's weight instead of once per sample.
#[derive(Clone, Debug)]
pub(crate) struct StackGroup {
    pub(crate) event: usize,
    pub(crate) comm: u32,
    pub(crate) comm_name: Arc<str>,
    pub(crate) pid: i32,
    pub(crate) tid: i32,
    /// The sample's CPU when `cpu` or `socket` is a sort key, else 0.
    pub(crate) cpu: u32,
    pub(crate) socket: i32,
    /// Sym id of the stack's parent (`KeyTable::parent_of`).
    pub(crate) parent: u32,
    /// The leaf was sampled in the kernel.
    pub(crate) kernel: bool,
    /// Range of this group's stack (leaf first) in `Profile::stack_frames`.
    pub(crate) start: u32,
    pub(crate) len: u32,
    pub(crate) period: u64,
    pub(crate) samples: u64,
}

/// Aggregates samples into per-event profiles, with the interned keys and
/// merged stacks that call-tree building needs afterwards.
pub(crate) struct Profile {
    pub(crate) events: Vec<EventProfile>,
    pub(crate) keys: KeyTable,
    pub(crate) mask: KeyMask,
    pub(crate) children: bool,
    pub(crate) groups: Vec<StackGroup>,
    pub(crate) stack_frames: Vec<FrameId>,
}

/// A sample's comm and stack `Arc`s by address, with its event, pid, tid
/// and cpu (the last three zero unless sort keys).
type PtrKey = (usize, usize, u32, u32, (u32, u32));

/// Per-event totals gathered while grouping.
#[derive(Default)]
struct Totals {
    nr_samples: u64,
    total_period: u64,
    no_ip: u64,
}

impl Profile {
    /// Builds the profile of every event present in `samples`.
    pub(crate) fn build(
        samples: &[ResolvedSample],
        frames: &FrameTable,
        options: &ProfileOptions,
    ) -> Profile {
        let mut keys = KeyTable::new(frames, &options.sort);
        let mask = KeyMask::new(&options.sort);
        let filter = &options.filter;
        let entry_filter = !filter.dsos.is_empty() || !filter.symbols.is_empty();

        // Phase 1: totals, filters, and identical samples merged.
        let mut totals: Vec<Totals> = Vec::new();
        let mut groups: Vec<StackGroup> = Vec::new();
        let mut stack_frames: Vec<FrameId> = Vec::new();
        let mut index: FxHashMap<Box<[u32]>, usize> = FxHashMap::default();
        let mut scratch: Vec<u32> = Vec::with_capacity(256);
        // Samples with one stack share its `Arc` (and threads their comm's):
        // by address, most samples find their group without hashing frames
        // or names. The content index keeps groups unique.
        let mut by_ptr: FxHashMap<PtrKey, usize> = FxHashMap::default();
        for sample in samples {
            while totals.len() <= sample.event {
                totals.push(Totals::default());
            }
            let Some(t) = totals.get_mut(sample.event) else {
                continue;
            };
            t.nr_samples += sample.count;
            t.total_period = t.total_period.saturating_add(sample.period);
            if sample.stack.is_empty() {
                t.no_ip += sample.count;
                continue;
            }
            if !filter.keeps_sample(sample) {
                continue;
            }
            let pid = if mask.pid { sample.pid } else { 0 };
            let tid = if mask.tid { sample.tid } else { 0 };
            let cpu = if mask.cpu || mask.socket {
                sample.cpu
            } else {
                0
            };
            let ptrs = (
                Arc::as_ptr(&sample.comm) as *const u8 as usize,
                Arc::as_ptr(&sample.stack) as *const FrameId as usize,
                sample.event as u32,
                pid as u32,
                (tid as u32, cpu),
            );
            if let Some(group) = by_ptr.get(&ptrs).and_then(|&slot| groups.get_mut(slot)) {
                group.period = group.period.saturating_add(sample.period);
                group.samples += sample.count;
                continue;
            }
            let comm = keys.comm_id(&sample.comm);
            scratch.clear();
            scratch.extend([sample.event as u32, comm, pid as u32, tid as u32, cpu]);
            scratch.extend(sample.stack.iter().map(|f| f.0));
            let slot = match index.get(scratch.as_slice()) {
                Some(&slot) => slot,
                None => {
                    let slot = groups.len();
                    groups.push(StackGroup {
                        event: sample.event,
                        comm,
                        comm_name: sample.comm.clone(),
                        pid,
                        tid,
                        cpu,
                        socket: if mask.socket {
                            socket_of(&options.sockets, sample.cpu)
                        } else {
                            0
                        },
                        parent: if mask.parent {
                            keys.parent_of(&sample.stack)
                        } else {
                            0
                        },
                        kernel: sample
                            .stack
                            .first()
                            .is_some_and(|&f| frames.get(f).kind == FrameKind::Kernel),
                        start: stack_frames.len() as u32,
                        len: sample.stack.len() as u32,
                        period: 0,
                        samples: 0,
                    });
                    stack_frames.extend_from_slice(&sample.stack);
                    index.insert(scratch.as_slice().into(), slot);
                    slot
                }
            };
            by_ptr.insert(ptrs, slot);
            if let Some(group) = groups.get_mut(slot) {
                group.period = group.period.saturating_add(sample.period);
                group.samples += sample.count;
            }
        }
        drop(index);
        drop(by_ptr);

        // Phase 2: self and children, once per group.
        let mut maps: Vec<FxHashMap<RawKey, Entry>> =
            (0..totals.len()).map(|_| FxHashMap::default()).collect();
        let mut seen = SeenSet::new(&keys, mask);
        for group in &groups {
            let Some(map) = maps.get_mut(group.event) else {
                continue;
            };
            let stack = group_stack(&stack_frames, group);
            let Some(&leaf) = stack.first() else {
                continue;
            };
            let new_entry = |key: RawKey, frame: FrameId| Entry {
                comm: mask.comm.then(|| group.comm_name.clone()),
                pid: mask.pid.then_some(group.pid),
                tid: mask.tid.then_some(group.tid),
                cpu: mask.cpu.then_some(group.cpu),
                socket: mask.socket.then_some(group.socket),
                parent: mask.parent.then(|| {
                    keys.frame_of_sym(group.parent)
                        .filter(|_| group.parent != NO_PARENT)
                }),
                frame: mask.frame.then_some(frame),
                self_period: 0,
                self_samples: 0,
                self_sys_period: 0,
                children_period: 0,
                children_samples: 0,
                key,
            };
            let leaf_key = mask.key(&keys, group, leaf);
            let entry = map
                .entry(leaf_key)
                .or_insert_with(|| new_entry(leaf_key, leaf));
            entry.self_period = entry.self_period.saturating_add(group.period);
            entry.self_samples += group.samples;
            if group.kernel {
                entry.self_sys_period = entry.self_sys_period.saturating_add(group.period);
            }

            if options.children {
                seen.next_sample();
                for &frame in stack {
                    if !seen.first_time(&keys, frame) {
                        continue;
                    }
                    let key = mask.key(&keys, group, frame);
                    let entry = map.entry(key).or_insert_with(|| new_entry(key, frame));
                    entry.children_period = entry.children_period.saturating_add(group.period);
                    entry.children_samples += group.samples;
                }
            }
        }

        let mut events = Vec::new();
        for (event, (t, map)) in totals.into_iter().zip(maps).enumerate() {
            if t.nr_samples == 0 {
                continue;
            }
            let mut entries: Vec<Entry> = map.into_values().collect();
            if !options.children {
                for e in &mut entries {
                    e.children_period = e.self_period;
                    e.children_samples = e.self_samples;
                }
            }
            if entry_filter {
                entries.retain(|e| e.frame.is_none_or(|f| filter.keeps_frame(frames.get(f))));
            }
            sort_entries(&mut entries, options.children, frames);
            events.push(EventProfile {
                event,
                nr_samples: t.nr_samples,
                total_period: t.total_period,
                no_ip_samples: t.no_ip,
                entries,
            });
        }
        Profile {
            events,
            keys,
            mask,
            children: options.children,
            groups,
            stack_frames,
        }
    }

    /// The entry key of `frame` in a group under this profile's sort keys.
    pub(crate) fn key_in(&self, group: &StackGroup, frame: FrameId) -> RawKey {
        self.mask.key(&self.keys, group, frame)
    }

    /// What entry keys of a group share besides the frame: its comm (when a
    /// sort key), pid and tid (zero unless sort keys).
    pub(crate) fn context_of(&self, group: &StackGroup) -> GroupContext {
        let comm = if self.mask.comm { group.comm } else { 0 };
        let cpu = if self.mask.cpu { group.cpu } else { 0 };
        (
            comm,
            group.pid,
            group.tid,
            (cpu, group.socket),
            group.parent,
        )
    }

    /// The stack (leaf first) of a group.
    pub(crate) fn stack_of(&self, group: &StackGroup) -> &[FrameId] {
        group_stack(&self.stack_frames, group)
    }

    /// A fresh per-sample "already counted" set for this profile's keys.
    #[cfg(test)]
    pub(crate) fn seen_set(&self) -> SeenSet {
        SeenSet::new(&self.keys, self.mask)
    }

    #[cfg(test)]
    pub(crate) fn key_of(&self, sample: &ResolvedSample, frame: FrameId) -> Option<RawKey> {
        let comm = *self.keys.comms.get(&sample.comm)?;
        let m = self.mask;
        Some(RawKey {
            comm: if m.comm { comm } else { 0 },
            pid: if m.pid { sample.pid } else { 0 },
            tid: if m.tid { sample.tid } else { 0 },
            cpu: if m.cpu { sample.cpu } else { 0 },
            socket: 0,
            parent: if m.parent {
                self.keys.parent_of(&sample.stack)
            } else {
                0
            },
            slot: self.keys.slot_of(frame),
        })
    }
}

/// Which entries of the current sample were already counted, in O(1) per
/// frame: within one sample comm, pid, tid, cpu and parent are fixed, so an
/// entry is told apart by its frame slot (symbol, dso, source line),
/// and a stamp per id records the last sample that counted it. This keeps
/// children arithmetic linear in stack depth (kernel + user stacks of 100
/// frames are common system-wide).
pub(crate) struct SeenSet {
    stamps: Vec<u32>,
    now: u32,
    by: KeyMask,
}

impl SeenSet {
    fn new(keys: &KeyTable, mask: KeyMask) -> SeenSet {
        SeenSet {
            stamps: vec![0; mask.slots(keys)],
            now: 0,
            by: mask,
        }
    }

    /// Starts a new sample.
    pub(crate) fn next_sample(&mut self) {
        self.now = self.now.wrapping_add(1);
        if self.now == 0 {
            self.stamps.fill(0);
            self.now = 1;
        }
    }

    /// True the first time the entry of `frame` is met in this sample.
    pub(crate) fn first_time(&mut self, keys: &KeyTable, frame: FrameId) -> bool {
        match self.stamps.get_mut(self.by.slot(keys, frame) as usize) {
            Some(stamp) if *stamp == self.now => false,
            Some(stamp) => {
                *stamp = self.now;
                true
            }
            None => true,
        }
    }
}

/// perf's socket of a CPU: from the topology, else -1.
fn socket_of(sockets: &[i32], cpu: u32) -> i32 {
    sockets.get(cpu as usize).copied().unwrap_or(-1)
}

fn group_stack<'a>(frames: &'a [FrameId], group: &StackGroup) -> &'a [FrameId] {
    let start = group.start as usize;
    frames
        .get(start..start + group.len as usize)
        .unwrap_or_default()
}

/// Hottest first; ties broken by self, then by names, so output is stable.
fn sort_entries(entries: &mut [Entry], children: bool, frames: &FrameTable) {
    entries.sort_by(|a, b| {
        let (pa, pb) = if children {
            (a.children_period, b.children_period)
        } else {
            (a.self_period, b.self_period)
        };
        pb.cmp(&pa)
            .then(b.self_period.cmp(&a.self_period))
            .then_with(|| a.comm.cmp(&b.comm))
            .then(a.pid.cmp(&b.pid))
            .then(a.tid.cmp(&b.tid))
            .then_with(|| {
                let name = |e: &Entry| {
                    e.frame.map(|f| {
                        let frame = frames.get(f);
                        (frame.sym.clone(), frame.dso.clone())
                    })
                };
                name(a).cmp(&name(b))
            })
            .then(a.key.cmp(&b.key))
    });
}

#[cfg(test)]
#[path = "profile_tests.rs"]
mod tests;
