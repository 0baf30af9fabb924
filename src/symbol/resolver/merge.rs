//! Sample merging (`ResolveOptions::merge_samples`): samples with the same
//! event, comm, task and location stack add up as they are fed (in
//! `Resolver::push_sample`); every `merge_batch` distinct ones are named
//! and folded by the frames they name, so memory follows the distinct
//! frame stacks, not the samples.
//!
//! The location-stack table (and the caches that map a chain or a
//! sample's addresses to its stacks) outlive a fold until they hold
//! `STACK_IDS_KEPT` location ids: starting them over at every fold (every
//! 4096 distinct samples) made a deep file look up and intern every stack
//! again each time, a tenth of the resolving thread's time.

use std::sync::Arc;

use super::Resolver;
use crate::model::sample::FrameId;
use crate::symbol::stacks::StackTable;

/// Location ids (4 bytes each, and ~80 bytes per stack besides) the
/// location-stack table may hold before a fold starts it over.
const STACK_IDS_KEPT: usize = 1 << 20;

impl Resolver {
    /// Names the pending samples and merges them into `folded`: samples
    /// whose locations differ but name the same frames become one, so
    /// memory follows the distinct frame stacks, not the samples.
    pub(super) fn fold_pending(&mut self) {
        let samples = self.take_samples();
        // No pending sample refers to a location stack any more: a big
        // table starts over, so it holds a bounded part of the file's
        // stacks, not all. The named frame stacks (`frame_stacks`) stay,
        // and keep merging.
        if self.stacks.ids_len() >= STACK_IDS_KEPT {
            self.stacks = StackTable::default();
            self.named_stacks.clear();
            self.chain_stacks.clear();
            self.addr_stacks.clear();
        }
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
}
