//! Samples per instruction, for annotate: each sample's own address (not
//! its stack) named by the resolver (its function, and its offset into
//! that function), summed per function and offset.
//!
//! The decision that isn't obvious: addresses are named in batches, as the
//! resolver names stacks (`Resolver::take_samples` names the pending
//! locations, then `Resolver::address` reads each distinct address back),
//! and a batch is closed before an exec, after which the same address of
//! the same process is other code. Offsets are as the resolver shows them:
//! file offsets in user binaries, virtual addresses in the kernel and JIT
//! code; a function's start is its sampled offset minus the offset into it.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use linux_perf_event_reader::{CpuMode, EventRecord};

use crate::model::hash::FxHashMap;
use crate::model::sample::{Frame, FrameId};
use crate::symbol::{ResolveOptions, Resolver};

/// Samples of one function, by offset.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct FunctionHits {
    pub(crate) frame: Frame,
    /// Where it starts: a file offset in its binary (user code) or a
    /// virtual address (kernel, JIT).
    pub(crate) start: u64,
    pub(crate) samples: u64,
    /// Offset into the function → samples.
    pub(crate) hits: BTreeMap<u64, u64>,
    /// The jitdump file its process mapped (JIT code's bytes are there).
    pub(crate) jitdump: Option<PathBuf>,
}

/// Every sampled function, hottest first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct AddressProfile {
    pub(crate) functions: Vec<FunctionHits>,
    /// Samples of the event, named or not.
    pub(crate) samples: u64,
    /// Samples whose address no function covers (or that had none).
    pub(crate) unnamed: u64,
    /// Of those, the ones in a known binary, per binary (a binary rebuilt
    /// since the recording has its samples here: its symbols are not
    /// read, so annotate can say why).
    pub(crate) unnamed_in: BTreeMap<Arc<str>, u64>,
}

/// How many distinct addresses wait before they are named.
const BATCH: usize = 4096;

/// Feeds records in, gives an [`AddressProfile`] out.
pub(crate) struct AddressCollector {
    resolver: Resolver,
    /// Only this event's samples (index into the file's events); set by
    /// the first sample when not given.
    event: Option<usize>,
    /// (pid, address, kernel) → samples, not yet named.
    pending: FxHashMap<(i32, u64, bool), u64>,
    /// (function, start) → offset → samples.
    named: FxHashMap<(FrameId, u64), BTreeMap<u64, u64>>,
    /// (function, start) → the jitdump of the process it was sampled in.
    jitdumps: FxHashMap<(FrameId, u64), PathBuf>,
    samples: u64,
    unnamed: u64,
    unnamed_in: BTreeMap<Arc<str>, u64>,
}

impl AddressCollector {
    /// `event`: the samples to count (default: the first sample's event).
    pub(crate) fn new(options: &ResolveOptions, event: Option<usize>) -> Self {
        AddressCollector {
            resolver: Resolver::new(options),
            event,
            pending: FxHashMap::default(),
            named: FxHashMap::default(),
            jitdumps: FxHashMap::default(),
            samples: 0,
            unnamed: 0,
            unnamed_in: BTreeMap::new(),
        }
    }

    /// The file's recorded build ids, for the resolver's checks.
    pub(crate) fn set_header_build_ids(
        &mut self,
        ids: impl IntoIterator<Item = (Vec<u8>, Vec<u8>)>,
    ) {
        self.resolver.set_header_build_ids(ids);
    }

    /// One record, in time order.
    pub(crate) fn handle_record(&mut self, attr_index: usize, record: &EventRecord<'_>) {
        match record {
            EventRecord::Comm(c) if c.is_execve => self.flush(),
            EventRecord::Sample(s) if *self.event.get_or_insert(attr_index) == attr_index => {
                self.samples += 1;
                match (s.ip, s.pid) {
                    (Some(ip), Some(pid)) => {
                        let kernel = matches!(s.cpu_mode, CpuMode::Kernel | CpuMode::GuestKernel);
                        *self.pending.entry((pid, ip, kernel)).or_default() += 1;
                    }
                    _ => self.unnamed += 1,
                }
            }
            EventRecord::Sample(_) => return,
            _ => {}
        }
        self.resolver.handle_record(attr_index, record);
        if self.pending.len() >= BATCH {
            self.flush();
        }
    }

    /// Names the pending addresses.
    fn flush(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        drop(self.resolver.take_samples());
        for ((pid, ip, kernel), n) in self.pending.drain() {
            match self.resolver.address(pid, ip, kernel) {
                Some(name) if self.resolver.frames().get(name.frame).sym.is_some() => {
                    let symoff = name.symoff.unwrap_or(0);
                    let start = name.shown.saturating_sub(symoff);
                    if let Some(path) = self.resolver.jitdump(pid) {
                        self.jitdumps
                            .entry((name.frame, start))
                            .or_insert_with(|| path.to_path_buf());
                    }
                    *self
                        .named
                        .entry((name.frame, start))
                        .or_default()
                        .entry(symoff)
                        .or_default() += n;
                }
                Some(name) => {
                    self.unnamed += n;
                    let dso = &self.resolver.frames().get(name.frame).dso;
                    *self.unnamed_in.entry(Arc::clone(dso)).or_default() += n;
                }
                None => self.unnamed += n,
            }
        }
    }

    /// The event counted (none before the first sample).
    pub(crate) fn event(&self) -> Option<usize> {
        self.event
    }

    /// The functions, hottest first (ties by name).
    pub(crate) fn finish(mut self) -> AddressProfile {
        self.flush();
        let frames = self.resolver.frames();
        let mut functions: Vec<FunctionHits> = self
            .named
            .into_iter()
            .map(|((frame, start), hits)| FunctionHits {
                frame: frames.get(frame).clone(),
                start,
                samples: hits.values().sum(),
                hits,
                jitdump: self.jitdumps.remove(&(frame, start)),
            })
            .collect();
        functions.sort_by(|a, b| {
            b.samples
                .cmp(&a.samples)
                .then_with(|| a.frame.sym.cmp(&b.frame.sym))
                .then_with(|| a.start.cmp(&b.start))
        });
        AddressProfile {
            functions,
            samples: self.samples,
            unnamed: self.unnamed,
            unnamed_in: self.unnamed_in,
        }
    }
}
