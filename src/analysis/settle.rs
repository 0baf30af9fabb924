//! Lost events must never stretch a latency. A pair (start, end) is only
//! sound if nothing between its start and its end was lost; the kernel says
//! a ring lost records with a LOST record that arrives *after* the loss, and
//! other CPUs' records of that time may already have been paired. So
//! finished pairs wait here until no loss can reach them any more.
//!
//! The rule: records arrive in time order. A LOST record of CPU `c` covers
//! the window from the newest record seen from `c` before it (`w`, the CPU's
//! watermark) to its own time; every pair that ended after `w` may have lost
//! events in between and is dropped (counted in `dropped`). A pair whose end
//! is at or below every CPU's watermark is beyond any future loss window
//! and settles. Open starts are the engines' business: they drop all of
//! them on a loss (an end might have been among the lost records).

use std::collections::VecDeque;

/// Finished pairs waiting to settle; see the module doc.
#[derive(Debug)]
pub(crate) struct Settle<T> {
    /// Per CPU: the time of its newest record (`None`: none seen yet).
    watermark: Vec<Option<u64>>,
    /// (end time, item), ends non-decreasing.
    pending: VecDeque<(u64, T)>,
    /// Records since the last settling pass.
    since_pass: u32,
    /// Finished pairs dropped because a loss window reached them.
    pub(crate) dropped: u64,
}

impl<T> Default for Settle<T> {
    fn default() -> Self {
        Settle {
            watermark: Vec::new(),
            pending: VecDeque::new(),
            since_pass: 0,
            dropped: 0,
        }
    }
}

/// Settling passes run every this many records (they cost a scan of the CPUs).
const PASS_EVERY: u32 = 256;

impl<T> Settle<T> {
    /// A record of `cpu` at `time` was seen. Returns the items that settled,
    /// if a settling pass ran.
    pub(crate) fn seen(&mut self, cpu: u32, time: u64, settled: impl FnMut(T)) {
        let cpu = cpu as usize;
        if cpu >= self.watermark.len() {
            if cpu > 4096 {
                return; // not a CPU number: ignore rather than allocate
            }
            self.watermark.resize(cpu + 1, None);
        }
        let mark = &mut self.watermark[cpu];
        *mark = Some(mark.map_or(time, |m| m.max(time)));
        self.since_pass += 1;
        if self.since_pass >= PASS_EVERY {
            self.since_pass = 0;
            self.pass(settled);
        }
    }

    /// A pair that ended at `end`.
    pub(crate) fn push(&mut self, end: u64, item: T) {
        self.pending.push_back((end, item));
    }

    fn pass(&mut self, mut settled: impl FnMut(T)) {
        let Some(low) = self.watermark.iter().flatten().min().copied() else {
            return;
        };
        while self.pending.front().is_some_and(|(end, _)| *end <= low) {
            if let Some((_, item)) = self.pending.pop_front() {
                settled(item);
            }
        }
    }

    /// A LOST record of `cpu` (`None`: unknown CPU, every window). Drops the
    /// pending pairs it may have reached and returns them.
    pub(crate) fn lost(&mut self, cpu: Option<u32>) -> Vec<T> {
        let from = match cpu.and_then(|c| self.watermark.get(c as usize).copied()) {
            Some(Some(mark)) => mark,
            _ => 0,
        };
        let keep = self.pending.partition_point(|(end, _)| *end <= from);
        let gone: Vec<T> = self.pending.drain(keep..).map(|(_, item)| item).collect();
        self.dropped += gone.len() as u64;
        gone
    }

    /// The end of the input: everything pending settles.
    pub(crate) fn finish(&mut self, mut settled: impl FnMut(T)) {
        for (_, item) in self.pending.drain(..) {
            settled(item);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_settle_below_every_watermark() {
        let mut s = Settle::default();
        let mut out = Vec::new();
        s.seen(0, 10, |x| out.push(x));
        s.seen(1, 12, |x| out.push(x));
        s.push(12, "a");
        s.pass(|x| out.push(x));
        assert!(out.is_empty(), "cpu 0 is only at 10");
        s.seen(0, 20, |x| out.push(x));
        s.pass(|x| out.push(x));
        assert_eq!(out, vec!["a"]);
    }

    #[test]
    fn a_loss_drops_pairs_ending_after_its_window_start() {
        let mut s = Settle::default();
        let mut out = Vec::new();
        s.seen(0, 10, |x| out.push(x));
        s.seen(1, 15, |x| out.push(x));
        s.push(9, "before");
        s.push(15, "after");
        // CPU 0 lost records after 10: "after" (ended at 15) may span them.
        assert_eq!(s.lost(Some(0)), vec!["after"]);
        assert_eq!(s.dropped, 1);
        s.finish(|x| out.push(x));
        assert_eq!(out, vec!["before"]);
        // Unknown CPU: everything pending goes.
        s.push(20, "x");
        assert_eq!(s.lost(None), vec!["x"]);
    }
}
