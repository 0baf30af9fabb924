//! Heat maps, as counts in a grid: the sub-second offset heat map of
//! samples (FlameScope's: a column per second, a row per slice of the
//! second, each cell holding the samples taken then and their stacks) and
//! the latency heat map of event pairs (a column per stretch of time, a row
//! per log2 latency bucket).
//!
//! The decisions that aren't obvious: time counts from the first sample
//! (the first pair's end for latencies), as FlameScope counts it, so a
//! workload that wakes on whole seconds of its own clock draws one band
//! whatever the perf clock's origin; a cell of the offset map keeps its
//! stacks as `(stack index, samples)` into one table of distinct
//! `(comm, stack)` pairs, so the page can draw the flame graph of any
//! range of cells without a server; a pair is placed at its end (when the
//! latency was known), in bucket `k` for `2^k <= ns < 2^(k+1)` (0 and 1 in
//! bucket 0, as `sched::Log2Hist`). The grid is bounded ([`MAX_COLUMNS`]) so
//! that a file with a wild timestamp cannot make it allocate without end.

use std::sync::Arc;

use crate::model::hash::FxHashMap;
use crate::model::sample::{FrameId, ResolvedSample};

/// The most columns a heat map may have (10 hours of seconds).
pub(crate) const MAX_COLUMNS: u64 = 36_000;

/// Errors of building a heat map: the input does not fit one.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub(crate) enum HeatmapError {
    #[error("no samples to draw")]
    NoSamples,
    #[error("the samples span {seconds} s, more than a heat map's {MAX_COLUMNS} columns")]
    TooLong { seconds: u64 },
    #[error("{rows} rows: a second splits into 1 to 1000 rows")]
    BadRows { rows: u32 },
}

/// How to build the offset heat map.
#[derive(Clone, Copy, Debug)]
pub(crate) struct OffsetOptions {
    /// Rows a second is split into. Default 50 (20 ms each).
    pub(crate) rows: u32,
    /// Only samples of this event (index into the file's events). Default
    /// all.
    pub(crate) event: Option<usize>,
}

impl Default for OffsetOptions {
    fn default() -> Self {
        OffsetOptions {
            rows: 50,
            event: None,
        }
    }
}

/// A distinct stack of the offset map: the task's name and its frames,
/// leaf first (as `ResolvedSample::stack`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct CellStack {
    pub(crate) comm: Arc<str>,
    pub(crate) frames: Arc<[FrameId]>,
}

/// The sub-second offset heat map.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct OffsetHeatmap {
    /// The first sample's time (ns): column 0, row 0 starts there.
    pub(crate) start: u64,
    pub(crate) columns: u32,
    pub(crate) rows: u32,
    /// Nanoseconds a row spans (1 s / rows).
    pub(crate) row_ns: u64,
    /// Samples per cell, column-major: `counts[col * rows + row]`.
    pub(crate) counts: Vec<u64>,
    /// The distinct stacks the cells point into.
    pub(crate) stacks: Vec<CellStack>,
    /// Per cell (as `counts`): `(index into stacks, samples)`.
    pub(crate) cells: Vec<Vec<(u32, u64)>>,
}

impl OffsetHeatmap {
    /// Bins `samples` (each weighs its `count`).
    pub(crate) fn build(
        samples: &[ResolvedSample],
        options: &OffsetOptions,
    ) -> Result<OffsetHeatmap, HeatmapError> {
        let window = OffsetWindow::of(samples, options)?;
        let OffsetWindow {
            start,
            columns,
            rows,
            row_ns,
        } = window;
        let size = columns as usize * rows as usize;
        let mut counts = vec![0u64; size];
        let mut per_cell: Vec<FxHashMap<u32, u64>> = vec![FxHashMap::default(); size];
        let mut index: FxHashMap<CellStack, u32> = FxHashMap::default();
        let mut stacks = Vec::new();
        for sample in samples.iter().filter(|s| window.wants(s, options)) {
            let Some(cell) = window.cell_of(sample.time) else {
                continue;
            };
            let key = CellStack {
                comm: Arc::clone(&sample.comm),
                frames: Arc::clone(&sample.stack),
            };
            let next = stacks.len() as u32;
            let id = *index.entry(key).or_insert_with_key(|k| {
                stacks.push(k.clone());
                next
            });
            counts[cell] += sample.count;
            *per_cell[cell].entry(id).or_default() += sample.count;
        }
        let cells = per_cell
            .into_iter()
            .map(|m| {
                let mut v: Vec<(u32, u64)> = m.into_iter().collect();
                v.sort_unstable();
                v
            })
            .collect();
        Ok(OffsetHeatmap {
            start,
            columns,
            rows,
            row_ns,
            counts,
            stacks,
            cells,
        })
    }

    /// Samples in cell (`col`, `row`).
    #[cfg(test)]
    pub(crate) fn count(&self, col: u32, row: u32) -> u64 {
        self.counts[(col * self.rows + row) as usize]
    }

    pub(crate) fn total(&self) -> u64 {
        self.counts.iter().sum()
    }
}

/// Where the offset map's cells lie in time: the first sample's time, the
/// grid's size. The map's cells and the samples of a range of them (`scry
/// serve`'s selection) are both found with [`OffsetWindow::cell_of`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct OffsetWindow {
    /// The first wanted sample's time (ns).
    pub(crate) start: u64,
    pub(crate) columns: u32,
    pub(crate) rows: u32,
    /// Nanoseconds a row spans (1 s / rows).
    pub(crate) row_ns: u64,
}

impl OffsetWindow {
    /// The window of the samples `options` wants (rows checked, the span
    /// bounded by [`MAX_COLUMNS`]).
    pub(crate) fn of(
        samples: &[ResolvedSample],
        options: &OffsetOptions,
    ) -> Result<OffsetWindow, HeatmapError> {
        if !(1..=1000).contains(&options.rows) {
            return Err(HeatmapError::BadRows { rows: options.rows });
        }
        let mut times = samples
            .iter()
            .filter(|s| options.event.is_none_or(|e| s.event == e))
            .map(|s| s.time);
        let first = times.next().ok_or(HeatmapError::NoSamples)?;
        let (start, end) = times.fold((first, first), |(lo, hi), t| (lo.min(t), hi.max(t)));
        let seconds = (end - start) / 1_000_000_000;
        if seconds >= MAX_COLUMNS {
            return Err(HeatmapError::TooLong { seconds });
        }
        Ok(OffsetWindow {
            start,
            columns: seconds as u32 + 1,
            rows: options.rows,
            row_ns: 1_000_000_000 / u64::from(options.rows),
        })
    }

    fn wants(&self, sample: &ResolvedSample, options: &OffsetOptions) -> bool {
        options.event.is_none_or(|e| sample.event == e)
    }

    /// The cell (`col * rows + row`) a time falls in; `None` outside the
    /// window.
    pub(crate) fn cell_of(&self, time: u64) -> Option<usize> {
        let since = time.checked_sub(self.start)?;
        let col = since / 1_000_000_000;
        if col >= u64::from(self.columns) {
            return None;
        }
        let row = ((since % 1_000_000_000) / self.row_ns).min(u64::from(self.rows) - 1);
        Some((col * u64::from(self.rows) + row) as usize)
    }

    /// The samples `options` wants whose cells lie in `first..=last` (cell
    /// indices as [`OffsetWindow::cell_of`]'s): FlameScope's selection.
    pub(crate) fn samples_in(
        &self,
        samples: &[ResolvedSample],
        options: &OffsetOptions,
        first: usize,
        last: usize,
    ) -> Vec<ResolvedSample> {
        samples
            .iter()
            .filter(|s| {
                self.wants(s, options)
                    && self
                        .cell_of(s.time)
                        .is_some_and(|c| (first..=last).contains(&c))
            })
            .cloned()
            .collect()
    }
}

/// One finished pair for the latency heat map: when it ended and how long
/// it took (ns).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LatencyPoint {
    pub(crate) end: u64,
    pub(crate) duration: u64,
}

/// The log2 bucket of a latency (bucket 0 holds 0 and 1).
pub(crate) fn log2_bucket(ns: u64) -> u32 {
    if ns <= 1 { 0 } else { 63 - ns.leading_zeros() }
}

/// The latency heat map.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct LatencyHeatmap {
    /// The first pair's end (ns): column 0 starts there.
    pub(crate) start: u64,
    /// Nanoseconds a column spans.
    pub(crate) column_ns: u64,
    pub(crate) columns: u32,
    /// The lowest bucket drawn (row 0) and how many there are.
    pub(crate) min_bucket: u32,
    pub(crate) buckets: u32,
    /// Pairs per cell, column-major: `counts[col * buckets + bucket - min_bucket]`.
    pub(crate) counts: Vec<u64>,
}

/// Column widths the latency map picks from (ns): 1-2-5 steps.
const COLUMN_STEPS: &[u64] = &[
    1_000_000,
    2_000_000,
    5_000_000,
    10_000_000,
    20_000_000,
    50_000_000,
    100_000_000,
    200_000_000,
    500_000_000,
    1_000_000_000,
    2_000_000_000,
    5_000_000_000,
    10_000_000_000,
    30_000_000_000,
    60_000_000_000,
];

/// About this many columns when the width is left to the map.
const TARGET_COLUMNS: u64 = 100;

impl LatencyHeatmap {
    /// Bins `points`; `column_ns`: the width of a column (default: the
    /// smallest 1-2-5 step that draws the span in about 100 columns).
    pub(crate) fn build(
        points: &[LatencyPoint],
        column_ns: Option<u64>,
    ) -> Result<LatencyHeatmap, HeatmapError> {
        let first = points.first().ok_or(HeatmapError::NoSamples)?;
        let (mut start, mut end) = (first.end, first.end);
        let (mut lo, mut hi) = (u32::MAX, 0);
        for p in points {
            start = start.min(p.end);
            end = end.max(p.end);
            let b = log2_bucket(p.duration);
            lo = lo.min(b);
            hi = hi.max(b);
        }
        let span = end - start;
        let column_ns = column_ns.filter(|&n| n > 0).unwrap_or_else(|| {
            COLUMN_STEPS
                .iter()
                .copied()
                .find(|step| span / step < TARGET_COLUMNS)
                .unwrap_or(60_000_000_000)
        });
        let columns = span / column_ns + 1;
        if columns > MAX_COLUMNS {
            return Err(HeatmapError::TooLong {
                seconds: span / 1_000_000_000,
            });
        }
        let buckets = hi - lo + 1;
        let mut counts = vec![0u64; columns as usize * buckets as usize];
        for p in points {
            let col = (p.end - start) / column_ns;
            let row = log2_bucket(p.duration) - lo;
            counts[col as usize * buckets as usize + row as usize] += 1;
        }
        Ok(LatencyHeatmap {
            start,
            column_ns,
            columns: columns as u32,
            min_bucket: lo,
            buckets,
            counts,
        })
    }

    pub(crate) fn total(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// Pairs per bucket over all columns (bucket number → count).
    #[cfg(test)]
    pub(crate) fn by_bucket(&self) -> std::collections::BTreeMap<u32, u64> {
        let mut out = std::collections::BTreeMap::new();
        for (i, n) in self.counts.iter().enumerate() {
            if *n > 0 {
                *out.entry(self.min_bucket + (i as u32 % self.buckets))
                    .or_default() += n;
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::sample::StackQuality;

    fn sample(time: u64, frames: &[u32], comm: &str) -> ResolvedSample {
        ResolvedSample {
            event: 0,
            comm: comm.into(),
            pid: 1,
            tid: 1,
            cpu: 0,
            time,
            period: 1,
            stack: frames.iter().map(|&f| FrameId(f)).collect(),
            quality: StackQuality::Complete,
            count: 1,
        }
    }

    #[test]
    fn offset_cells_count_samples_and_share_stacks() {
        let t0 = 5_000_000_000;
        let samples = vec![
            sample(t0 + 10_000_000, &[1, 0], "a"),
            sample(t0 + 15_000_000, &[1, 0], "a"),
            sample(t0 + 1_030_000_000, &[2, 0], "a"),
            sample(t0 + 2_999_000_000, &[1, 0], "b"),
            // Earliest sample: the map starts here, not at the first in order.
            sample(t0, &[1, 0], "a"),
        ];
        let map = OffsetHeatmap::build(&samples, &OffsetOptions::default()).unwrap();
        assert_eq!((map.start, map.columns, map.rows), (t0, 3, 50));
        assert_eq!(map.count(0, 0), 3);
        assert_eq!(map.count(1, 1), 1);
        assert_eq!(map.count(2, 49), 1);
        assert_eq!(map.total(), 5);
        // (a, [1,0]) once in the table, three samples in cell (0, 0).
        assert_eq!(map.stacks.len(), 3);
        assert_eq!(map.cells[0], vec![(0, 3)]);
        let bad = OffsetOptions {
            rows: 0,
            ..OffsetOptions::default()
        };
        assert_eq!(
            OffsetHeatmap::build(&samples, &bad),
            Err(HeatmapError::BadRows { rows: 0 })
        );
        assert_eq!(
            OffsetHeatmap::build(&[], &OffsetOptions::default()),
            Err(HeatmapError::NoSamples)
        );
        let wild = vec![sample(0, &[0], "a"), sample(u64::MAX / 2, &[0], "a")];
        assert!(matches!(
            OffsetHeatmap::build(&wild, &OffsetOptions::default()),
            Err(HeatmapError::TooLong { .. })
        ));
    }

    #[test]
    fn a_range_of_cells_holds_the_samples_the_map_put_there() {
        let t0 = 7_000_000_000;
        let samples = vec![
            sample(t0, &[1], "a"),
            sample(t0 + 1_010_000_000, &[2], "a"),
            sample(t0 + 1_050_000_000, &[3], "a"),
            sample(t0 + 2_500_000_000, &[4], "a"),
        ];
        let options = OffsetOptions::default();
        let window = OffsetWindow::of(&samples, &options).unwrap();
        let map = OffsetHeatmap::build(&samples, &options).unwrap();
        assert_eq!(window.cell_of(t0 + 1_010_000_000), Some(50));
        assert_eq!(window.cell_of(t0 - 1), None);
        assert_eq!(window.cell_of(t0 + 3_000_000_000), None);
        // Second 1, rows 0-2 (0-60 ms): the two samples cells 50 and 52 hold.
        let picked = window.samples_in(&samples, &options, 50, 52);
        let frames: Vec<u32> = picked.iter().map(|s| s.stack[0].0).collect();
        assert_eq!(frames, vec![2, 3]);
        assert_eq!(map.counts[50] + map.counts[52], 2);
    }

    #[test]
    fn latency_buckets_are_log2_and_columns_cover_the_span() {
        assert_eq!(log2_bucket(0), 0);
        assert_eq!(log2_bucket(1), 0);
        assert_eq!(log2_bucket(2), 1);
        assert_eq!(log2_bucket(5_000_000), 22);
        let points = [
            LatencyPoint {
                end: 1_000_000_000,
                duration: 5_000_000,
            },
            LatencyPoint {
                end: 1_000_000_000 + 4_000_000_000,
                duration: 1000,
            },
            LatencyPoint {
                end: 1_000_000_000 + 4_000_000_000,
                duration: 1023,
            },
        ];
        let map = LatencyHeatmap::build(&points, None).unwrap();
        // 4 s in ~100 columns: 50 ms steps, 81 columns.
        assert_eq!((map.column_ns, map.columns), (50_000_000, 81));
        assert_eq!((map.min_bucket, map.buckets), (9, 14));
        assert_eq!(
            map.by_bucket(),
            std::collections::BTreeMap::from([(9, 2), (22, 1)])
        );
        assert_eq!(map.counts[80 * 14], 2);
        let wide = LatencyHeatmap::build(&points, Some(1_000_000_000)).unwrap();
        assert_eq!(wide.columns, 5);
        assert_eq!(
            LatencyHeatmap::build(&[], None),
            Err(HeatmapError::NoSamples)
        );
    }
}
