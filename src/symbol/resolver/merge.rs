//! Sample merging (`ResolveOptions::merge_samples`): samples with the same
//! event, comm, task and location stack add up as they are fed (in
//! `Resolver::push_sample`); every `merge_batch` distinct ones are named
//! and folded by the frames they name, and the location-stack table starts
//! over, so memory follows the distinct frame stacks, not the samples.
//!
//! Keeping the location-stack table and its caches across folds (until
//! 2^20 location ids) was tried and measured: no CPU gained on the bench's
//! deep file (a stack rarely repeats address for address: the leaf's
//! differs), 7 MB more peak memory; so the table starts over.

use std::sync::Arc;

use super::Resolver;
use crate::model::sample::FrameId;

impl Resolver {
    /// Names the pending samples and merges them into `folded`: samples
    /// whose locations differ but name the same frames become one, so
    /// memory follows the distinct frame stacks, not the samples.
    pub(super) fn fold_pending(&mut self) {
        let mut samples = self.take_samples();
        // No pending sample refers to a location stack any more: start the
        // table over, so it holds one batch's stacks, not the file's. The
        // named frame stacks (`frame_stacks`) stay, and keep merging.
        self.stacks.clear();
        self.fold_epoch = self.fold_epoch.wrapping_add(1);
        self.named_stacks.clear();
        self.chain_stacks.clear();
        self.addr_stacks.clear();
        for sample in samples.drain(..) {
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
                    into.period = into.period.saturating_add(sample.period);
                    into.count += sample.count;
                }
                None => {
                    self.folded_index.insert(key, self.folded.len());
                    self.folded.push(sample);
                }
            }
        }
        // The next batch fills the same memory (pending is empty here).
        if self.pending.is_empty() {
            self.pending = samples;
        }
    }
}
