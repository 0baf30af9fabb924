//! "What is hot now" for live views (`scry top`): the samples of the last
//! few refresh intervals, older intervals weighing less.
//!
//! perf top decays each entry by 7/8 per refresh; we keep the samples of
//! the last `generations` intervals and scale each one's period by
//! `factor^age`, then build an ordinary `Profile` from them. A function that
//! stopped running fades out within a few refreshes, and the profile code
//! (self/children, sort keys) is the same one `report` uses.

use std::collections::VecDeque;

use super::sample::ResolvedSample;

/// Samples of the last few intervals.
#[derive(Debug)]
pub(crate) struct DecayWindow {
    generations: VecDeque<Vec<ResolvedSample>>,
    max_generations: usize,
    /// Weight of an interval relative to the next newer one, in 1/1000.
    factor_permille: u64,
}

impl DecayWindow {
    /// `factor` in (0, 1]: 0.875 is perf top's decay.
    pub(crate) fn new(max_generations: usize, factor: f64) -> Self {
        DecayWindow {
            generations: VecDeque::new(),
            max_generations: max_generations.max(1),
            factor_permille: (factor.clamp(0.001, 1.0) * 1000.0).round() as u64,
        }
    }

    /// Close an interval: its samples become the newest generation.
    pub(crate) fn push(&mut self, samples: Vec<ResolvedSample>) {
        self.generations.push_front(samples);
        self.generations.truncate(self.max_generations);
    }

    /// Samples of the newest interval only.
    #[cfg(test)]
    pub(crate) fn newest(&self) -> &[ResolvedSample] {
        self.generations.front().map_or(&[], Vec::as_slice)
    }

    /// Every kept sample with its period scaled by its interval's weight
    /// (the newest ×1000, one older ×1000·factor, ...).
    pub(crate) fn weighted(&self) -> Vec<ResolvedSample> {
        let mut weight = 1000u64;
        let mut out = Vec::with_capacity(self.generations.iter().map(Vec::len).sum());
        for generation in &self.generations {
            for sample in generation {
                let mut s = sample.clone();
                s.period = s.period.saturating_mul(weight) / 1000;
                out.push(s);
            }
            weight = weight * self.factor_permille / 1000;
            if weight == 0 {
                break;
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::sample::{FrameId, StackQuality};

    fn sample(period: u64) -> ResolvedSample {
        ResolvedSample {
            event: 0,
            comm: "x".into(),
            pid: 1,
            tid: 1,
            cpu: 0,
            time: 0,
            period,
            stack: vec![FrameId(0)].into(),
            quality: StackQuality::Complete,
            count: 1,
        }
    }

    #[test]
    fn older_generations_weigh_less_and_fall_out() {
        let mut w = DecayWindow::new(2, 0.5);
        w.push(vec![sample(1000)]);
        w.push(vec![sample(1000), sample(1000)]);
        let periods: Vec<u64> = w.weighted().iter().map(|s| s.period).collect();
        assert_eq!(periods, vec![1000, 1000, 500]);
        w.push(vec![sample(10)]);
        let periods: Vec<u64> = w.weighted().iter().map(|s| s.period).collect();
        assert_eq!(periods, vec![10, 500, 500]);
        assert_eq!(w.newest().len(), 1);
    }
}
