//! Folded (collapsed) stacks: every distinct `comm;root;...;leaf` path with
//! the sum of its samples' periods, the input of flame graphs.
//!
//! Decision: stacks are aggregated as interned integer slices
//! (`[comm id, frame ids root→leaf...]`) in one hash map with a fast hasher;
//! strings are made once per *distinct* stack by the renderer, not once per
//! sample. Two frames of one function share a `FrameId`, so stacks that
//! differ only in return addresses merge here, exactly as they do once
//! `inferno-collapse-perf` has turned addresses into names.
//!
//! Like `inferno-collapse-perf`, only one event is folded (mixing cycles and
//! page faults in one graph would be meaningless): the one asked for, or the
//! event of the first sample.

use std::sync::Arc;

use super::hash::FxHashMap;
use super::sample::{FrameId, ResolvedSample};

/// Settings for folding.
#[derive(Clone, Debug, Default)]
pub(crate) struct FoldOptions {
    /// Fold only this event index; default: the event of the first sample.
    pub(crate) event: Option<usize>,
}

/// The folded stacks of one event.
#[derive(Clone, Debug, Default)]
pub(crate) struct FoldedStacks {
    /// The event that was folded.
    pub(crate) event: usize,
    /// Command names, indexed by the comm id of a stack.
    pub(crate) comms: Vec<Arc<str>>,
    /// Distinct stacks: (comm id, frames root first, summed period, samples).
    pub(crate) stacks: Vec<FoldedStack>,
}

#[derive(Clone, Debug)]
pub(crate) struct FoldedStack {
    pub(crate) comm: u32,
    /// Root first, leaf last.
    pub(crate) frames: Vec<FrameId>,
    pub(crate) period: u64,
    pub(crate) samples: u64,
}

impl FoldedStacks {
    /// Folds the samples of one event. Samples without any frame are left
    /// out, as `inferno-collapse-perf` leaves out events without a stack.
    pub(crate) fn build(samples: &[ResolvedSample], options: &FoldOptions) -> FoldedStacks {
        let event = options
            .event
            .or_else(|| samples.first().map(|s| s.event))
            .unwrap_or(0);
        let mut comm_ids: FxHashMap<Arc<str>, u32> = FxHashMap::default();
        let mut comms: Vec<Arc<str>> = Vec::new();
        // Key: [comm, frame ids root→leaf]; value: index into `stacks`.
        let mut index: FxHashMap<Box<[u32]>, usize> = FxHashMap::default();
        let mut stacks: Vec<FoldedStack> = Vec::new();
        let mut scratch: Vec<u32> = Vec::with_capacity(128);
        // The resolver shares one `Arc` among samples with the same stack
        // and thread name: by address, most samples find their slot without
        // hashing their frames. The content index keeps slots unique.
        let mut by_ptr: FxHashMap<(usize, usize), usize> = FxHashMap::default();
        for sample in samples {
            if sample.event != event || sample.stack.is_empty() {
                continue;
            }
            let ptrs = (
                Arc::as_ptr(&sample.comm) as *const u8 as usize,
                Arc::as_ptr(&sample.stack) as *const FrameId as usize,
            );
            if let Some(stack) = by_ptr.get(&ptrs).and_then(|&slot| stacks.get_mut(slot)) {
                stack.period = stack.period.saturating_add(sample.period);
                stack.samples += sample.count;
                continue;
            }
            let comm = match comm_ids.get(&sample.comm) {
                Some(&id) => id,
                None => {
                    let id = comms.len() as u32;
                    comms.push(sample.comm.clone());
                    comm_ids.insert(sample.comm.clone(), id);
                    id
                }
            };
            scratch.clear();
            scratch.push(comm);
            scratch.extend(sample.stack.iter().rev().map(|f| f.0));
            let slot = match index.get(scratch.as_slice()) {
                Some(&slot) => slot,
                None => {
                    let slot = stacks.len();
                    stacks.push(FoldedStack {
                        comm,
                        frames: sample.stack.iter().rev().copied().collect(),
                        period: 0,
                        samples: 0,
                    });
                    index.insert(scratch.as_slice().into(), slot);
                    slot
                }
            };
            by_ptr.insert(ptrs, slot);
            if let Some(stack) = stacks.get_mut(slot) {
                stack.period = stack.period.saturating_add(sample.period);
                stack.samples += sample.count;
            }
        }
        FoldedStacks {
            event,
            comms,
            stacks,
        }
    }

    /// Sum of all stacks' periods.
    #[cfg(test)]
    pub(crate) fn total_period(&self) -> u64 {
        self.stacks
            .iter()
            .fold(0, |sum, s| sum.saturating_add(s.period))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::testing::Builder;

    #[test]
    fn equal_stacks_merge_and_frames_come_root_first() {
        let mut b = Builder::default();
        b.sample("app", 1, &["leaf", "main"], 2);
        b.sample("app", 2, &["leaf", "main"], 1);
        b.sample("other", 3, &["leaf", "main"], 1);
        b.sample("app", 1, &["main"], 1);
        let folded = FoldedStacks::build(&b.samples, &FoldOptions::default());
        assert_eq!(folded.stacks.len(), 3, "pid does not split, comm does");
        let first = &folded.stacks[0];
        assert_eq!(first.frames, vec![b.id("main"), b.id("leaf")]);
        assert_eq!((first.period, first.samples), (3000, 3));
        assert_eq!(folded.comms.len(), 2);
        assert_eq!(folded.total_period(), 5000);
    }

    #[test]
    fn only_one_event_is_folded() {
        let mut b = Builder {
            event: 1,
            ..Builder::default()
        };
        b.sample("app", 1, &["f"], 2);
        b.event = 0;
        b.sample("app", 1, &["g"], 5);
        b.sample("app", 1, &[], 5);
        let folded = FoldedStacks::build(&b.samples, &FoldOptions::default());
        assert_eq!(folded.event, 1, "the first sample's event");
        assert_eq!(folded.total_period(), 2000);
        let folded = FoldedStacks::build(&b.samples, &FoldOptions { event: Some(0) });
        assert_eq!(folded.total_period(), 5000, "empty stacks are left out");
    }
}
