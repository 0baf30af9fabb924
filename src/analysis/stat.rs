//! `scry stat` arithmetic: counter readings → scaled counts per event (or per
//! event × CPU), means and standard deviations over `-r` runs, interval
//! deltas, and the derived metrics perf prints after `#` (CPUs utilized,
//! rates, GHz, insn per cycle, miss ratios).
//!
//! Decisions worth knowing:
//! - Scaling follows perf: readings are summed first (over CPUs and threads,
//!   or over threads only per CPU with `-A`), then a multiplexed count is
//!   scaled by `time_enabled / time_running`. `time_running == 0` means the
//!   counter never ran: `<not counted>`, not zero; but a count with both
//!   times 0 ran while the kernel's clock stood still (seen in a TCG
//!   guest): the count, unscaled.
//! - The "± x%" perf prints is the standard deviation *of the mean*
//!   (`sqrt(var / n)`) relative to the mean, from Welford's running
//!   variance (`update_stats` in perf's `util/stat.c`). We print the same.
//! - Metrics are computed from numbers only; `render::stat` formats them.
//!
//! Invariants: `Row`s come out in event order (then CPU order), one per
//! event (per CPU with `-A`), including events the machine cannot count.

use crate::sys::perf_event::{PERF_TYPE_HARDWARE, PERF_TYPE_HW_CACHE, PERF_TYPE_SOFTWARE};

pub(crate) use crate::model::counter::{CounterReading, Reading};

/// What kind of counter an event is, for the derived metrics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct EventClass {
    pub(crate) type_: u32,
    pub(crate) config: u64,
}

impl EventClass {
    /// task-clock or cpu-clock: counts nanoseconds, shown as msec.
    pub(crate) fn is_clock(self) -> bool {
        self.type_ == PERF_TYPE_SOFTWARE && (self.config == 0 || self.config == 1)
    }

    fn is(self, type_: u32, config: u64) -> bool {
        self.type_ == type_ && self.config == config
    }
}

/// Whether a line has a number or one of perf's placeholders.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CountState {
    Counted,
    /// The counter never ran (`time_running == 0`): `<not counted>`.
    NotCounted,
    /// The kernel cannot count this event here: `<not supported>`.
    NotSupported,
}

/// One output line's numbers.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Row {
    pub(crate) event: usize,
    pub(crate) cpu: Option<u32>,
    pub(crate) state: CountState,
    /// The scaled count (mean over runs), in the event's own unit (ns for clocks).
    pub(crate) count: f64,
    /// Relative standard deviation of the mean over runs, in percent.
    pub(crate) noise_pct: f64,
    /// Time running and enabled (ns; mean over runs).
    pub(crate) running: f64,
    pub(crate) enabled: f64,
    pub(crate) metric: Option<Metric>,
}

/// A derived number printed after `#`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Metric {
    /// Clock nanoseconds over wall-clock nanoseconds.
    CpusUtilized(f64),
    /// Events per second of task-clock (or cpu-clock).
    PerSecond(f64),
    /// Cycles per nanosecond of clock.
    Ghz(f64),
    InsnPerCycle(f64),
    /// `value`% of `of` (e.g. "all branches").
    Percent {
        value: f64,
        of: &'static str,
    },
}

/// perf's `struct stats`: Welford's running mean and variance.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Stats {
    n: u64,
    mean: f64,
    m2: f64,
}

impl Stats {
    pub(crate) fn push(&mut self, x: f64) {
        self.n += 1;
        let delta = x - self.mean;
        self.mean += delta / self.n as f64;
        self.m2 += delta * (x - self.mean);
    }

    pub(crate) fn count(&self) -> u64 {
        self.n
    }

    pub(crate) fn mean(&self) -> f64 {
        self.mean
    }

    /// Standard deviation of the mean: `sqrt(M2 / (n - 1) / n)`; 0 below two values.
    pub(crate) fn stddev_of_mean(&self) -> f64 {
        if self.n < 2 {
            return 0.0;
        }
        let n = self.n as f64;
        (self.m2 / (n - 1.0) / n).sqrt()
    }

    /// `stddev_of_mean` as a percentage of the mean (0 for a zero mean).
    pub(crate) fn rel_stddev_pct(&self) -> f64 {
        relative_pct(self.stddev_of_mean(), self.mean)
    }
}

/// `100 * stddev / mean`, 0 when the mean is 0 (perf's `rel_stddev_stats`).
pub(crate) fn relative_pct(stddev: f64, mean: f64) -> f64 {
    if mean == 0.0 {
        0.0
    } else {
        100.0 * stddev / mean
    }
}

/// How readings are grouped into lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) enum Aggregation {
    /// One line per event (perf's default).
    #[default]
    Global,
    /// One line per event × CPU (`-A` / `--no-aggr`).
    PerCpu,
}

/// Sums one run's (or one interval's) readings into one `Reading` per
/// line key, in event order then CPU order. `supported[e]` false gives a
/// key with no reading.
pub(crate) fn sum_readings(
    readings: &[CounterReading],
    supported: &[bool],
    cpus: &[u32],
    aggregation: Aggregation,
) -> Vec<(usize, Option<u32>, Option<Reading>)> {
    let mut out = Vec::new();
    for (event, &ok) in supported.iter().enumerate() {
        let keys: Vec<Option<u32>> = match aggregation {
            Aggregation::Global => vec![None],
            Aggregation::PerCpu => cpus.iter().map(|&c| Some(c)).collect(),
        };
        for key in keys {
            if !ok {
                out.push((event, key, None));
                continue;
            }
            let mut matching = readings
                .iter()
                .filter(|r| r.event == event && (key.is_none() || r.cpu == key))
                .peekable();
            // Per CPU, an event read on some CPUs only (perf's tool events
            // read on the first) has lines for those CPUs only.
            if key.is_some() && matching.peek().is_none() {
                continue;
            }
            let sum = matching.fold(Reading::default(), |acc, r| acc.add(r.reading));
            out.push((event, key, Some(sum)));
        }
    }
    out
}

/// perf's scaling: `None` if the counter never ran, else the count scaled
/// by enabled/running. A count with no time at all, neither enabled nor
/// running, ran all the same: the kernel's clock did not move while it
/// counted (a TCG guest's `local_clock` held at its tick's end by a late
/// tick: cat's one open counted in 0 ns on Debian's 6.1): its value,
/// unscaled (perf says `<not counted>` there, of a counter that counted).
pub(crate) fn scale(reading: Reading) -> Option<f64> {
    if reading.running == 0 || reading.enabled == 0 {
        let clock_stood_still = reading.enabled == 0 && reading.running == 0;
        return (clock_stood_still && reading.value > 0).then_some(reading.value as f64);
    }
    if reading.running >= reading.enabled {
        return Some(reading.value as f64);
    }
    Some((reading.value as f64 * reading.enabled as f64 / reading.running as f64).round())
}

/// Accumulates runs (`-r N`) of the same event list into mean lines.
#[derive(Clone, Debug, Default)]
pub(crate) struct RunAccumulator {
    /// One per line key (event, CPU), in the order first seen.
    lines: Vec<Line>,
    walltime: Stats,
}

#[derive(Clone, Debug)]
struct Line {
    event: usize,
    cpu: Option<u32>,
    supported: bool,
    counts: Stats,
    running: Stats,
    enabled: Stats,
}

impl RunAccumulator {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Adds one run: its summed readings (from `sum_readings`) and its wall time.
    pub(crate) fn add_run(
        &mut self,
        sums: &[(usize, Option<u32>, Option<Reading>)],
        walltime_ns: f64,
    ) {
        self.walltime.push(walltime_ns);
        for &(event, cpu, reading) in sums {
            let index = match self
                .lines
                .iter()
                .position(|l| l.event == event && l.cpu == cpu)
            {
                Some(i) => i,
                None => {
                    self.lines.push(Line {
                        event,
                        cpu,
                        supported: reading.is_some(),
                        counts: Stats::default(),
                        running: Stats::default(),
                        enabled: Stats::default(),
                    });
                    self.lines.len() - 1
                }
            };
            let Some(line) = self.lines.get_mut(index) else {
                continue;
            };
            let Some(reading) = reading else {
                line.supported = false;
                continue;
            };
            line.running.push(reading.running as f64);
            line.enabled.push(reading.enabled as f64);
            // A run where the counter never ran adds no count (perf skips it too).
            if let Some(count) = scale(reading) {
                line.counts.push(count);
            }
        }
    }

    pub(crate) fn walltime(&self) -> Stats {
        self.walltime
    }

    /// The lines with means, noise and metrics.
    pub(crate) fn rows(&self, classes: &[EventClass]) -> Vec<Row> {
        let rows: Vec<Row> = self
            .lines
            .iter()
            .map(|l| {
                let state = if !l.supported {
                    CountState::NotSupported
                } else if l.counts.count() == 0 {
                    CountState::NotCounted
                } else {
                    CountState::Counted
                };
                Row {
                    event: l.event,
                    cpu: l.cpu,
                    state,
                    count: l.counts.mean(),
                    noise_pct: l.counts.rel_stddev_pct(),
                    running: l.running.mean(),
                    enabled: l.enabled.mean(),
                    metric: None,
                }
            })
            .collect();
        with_metrics(rows, classes, self.walltime.mean())
    }
}

/// Rows of a single reading set (one interval, or one run): no noise.
pub(crate) fn rows_of(
    sums: &[(usize, Option<u32>, Option<Reading>)],
    classes: &[EventClass],
    walltime_ns: f64,
) -> Vec<Row> {
    let mut acc = RunAccumulator::new();
    acc.add_run(sums, walltime_ns);
    acc.rows(classes)
}

/// Fills in the `#` metric of each row. Metrics relate rows of the same
/// CPU key (all rows when aggregated), as perf's shadow stats do.
pub(crate) fn with_metrics(
    mut rows: Vec<Row>,
    classes: &[EventClass],
    walltime_ns: f64,
) -> Vec<Row> {
    let find = |rows: &[Row], cpu: Option<u32>, want: &dyn Fn(EventClass) -> bool| -> Option<f64> {
        rows.iter()
            .find(|r| {
                r.cpu == cpu
                    && r.state == CountState::Counted
                    && classes.get(r.event).is_some_and(|c| want(*c))
            })
            .map(|r| r.count)
    };
    let metrics: Vec<Option<Metric>> = rows
        .iter()
        .map(|row| {
            let class = classes.get(row.event).copied()?;
            if row.state != CountState::Counted {
                return None;
            }
            let nsecs = find(&rows, row.cpu, &|c| c.is_clock()).filter(|&n| n > 0.0);
            let hw = |config: u64| find(&rows, row.cpu, &|c| c.is(PERF_TYPE_HARDWARE, config));
            let cache = |config: u64| find(&rows, row.cpu, &|c| c.is(PERF_TYPE_HW_CACHE, config));
            let percent = |base: Option<f64>, of: &'static str| {
                base.filter(|&b| b > 0.0).map(|b| Metric::Percent {
                    value: 100.0 * row.count / b,
                    of,
                })
            };
            if class.is_clock() {
                return (walltime_ns > 0.0).then(|| Metric::CpusUtilized(row.count / walltime_ns));
            }
            if class.type_ == PERF_TYPE_HARDWARE {
                match class.config {
                    0 => return nsecs.map(|n| Metric::Ghz(row.count / n)),
                    1 => {
                        return hw(0)
                            .filter(|&c| c > 0.0)
                            .map(|c| Metric::InsnPerCycle(row.count / c));
                    }
                    3 => return percent(hw(2), "of all cache refs"),
                    5 => return percent(hw(4), "of all branches"),
                    _ => {}
                }
            }
            if class.type_ == PERF_TYPE_HW_CACHE {
                // L1-dcache-load-misses over L1-dcache-loads, and the same for LLC.
                if class.config == 1 << 16 {
                    return percent(cache(0), "of all L1-dcache accesses");
                }
                if class.config == (2 | 1 << 16) {
                    return percent(cache(2), "of all LL-cache accesses");
                }
            }
            nsecs.map(|n| Metric::PerSecond(row.count * 1e9 / n))
        })
        .collect();
    for (row, metric) in rows.iter_mut().zip(metrics) {
        row.metric = metric;
    }
    rows
}

/// perf's `convert_unit_double`: scales a rate to K, M or G.
pub(crate) fn unit_prefix(value: f64) -> (f64, &'static str) {
    let mut v = value;
    let mut unit = "";
    for prefix in ["K", "M", "G"] {
        if v > 1000.0 {
            v /= 1000.0;
            unit = prefix;
        }
    }
    (v, unit)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TASK_CLOCK: EventClass = EventClass {
        type_: PERF_TYPE_SOFTWARE,
        config: 1,
    };
    const FAULTS: EventClass = EventClass {
        type_: PERF_TYPE_SOFTWARE,
        config: 2,
    };

    fn reading(value: u64, enabled: u64, running: u64) -> Reading {
        Reading {
            value,
            enabled,
            running,
        }
    }

    #[test]
    fn stats_match_perf_formula() {
        let mut s = Stats::default();
        for x in [10.0, 12.0, 14.0] {
            s.push(x);
        }
        assert_eq!(s.mean(), 12.0);
        // variance 4, of the mean 4/3.
        assert!((s.stddev_of_mean() - (4.0f64 / 3.0).sqrt()).abs() < 1e-12);
        assert!((s.rel_stddev_pct() - 100.0 * (4.0f64 / 3.0).sqrt() / 12.0).abs() < 1e-9);
        let mut one = Stats::default();
        one.push(5.0);
        assert_eq!(one.stddev_of_mean(), 0.0);
    }

    #[test]
    fn scaling_by_enabled_over_running() {
        assert_eq!(scale(reading(100, 1000, 500)), Some(200.0));
        assert_eq!(scale(reading(100, 1000, 1000)), Some(100.0));
        assert_eq!(scale(reading(100, 1000, 0)), None);
        let sums = vec![(0, None, Some(reading(100, 1000, 250)))];
        let rows = rows_of(&sums, &[FAULTS], 1e9);
        assert_eq!(rows[0].count, 400.0);
        assert_eq!(100.0 * rows[0].running / rows[0].enabled, 25.0);
    }

    #[test]
    fn sums_per_cpu_and_global() {
        let readings = [
            CounterReading {
                event: 0,
                cpu: Some(0),
                reading: reading(3, 10, 10),
            },
            CounterReading {
                event: 0,
                cpu: Some(1),
                reading: reading(4, 10, 10),
            },
        ];
        let global = sum_readings(&readings, &[true, false], &[0, 1], Aggregation::Global);
        assert_eq!(global[0], (0, None, Some(reading(7, 20, 20))));
        assert_eq!(global[1], (1, None, None));
        let per_cpu = sum_readings(&readings, &[true], &[0, 1], Aggregation::PerCpu);
        assert_eq!(per_cpu.len(), 2);
        assert_eq!(per_cpu[1], (0, Some(1), Some(reading(4, 10, 10))));
        // An event read on CPU 0 only (a tool event) has CPU 0's line only.
        let mut with_tool = readings.to_vec();
        with_tool.push(CounterReading {
            event: 1,
            cpu: Some(0),
            reading: reading(9, 9, 9),
        });
        let per_cpu = sum_readings(&with_tool, &[true, true], &[0, 1], Aggregation::PerCpu);
        assert_eq!(per_cpu.len(), 3);
        assert_eq!(per_cpu[2], (1, Some(0), Some(reading(9, 9, 9))));
    }

    #[test]
    fn metrics_cpus_utilized_and_rates() {
        // 500 ms of task-clock in 1 s of wall time; 2000 faults.
        let sums = vec![
            (0, None, Some(reading(500_000_000, 1, 1))),
            (1, None, Some(reading(2000, 1, 1))),
            (2, None, None),
        ];
        let rows = rows_of(
            &sums,
            &[
                TASK_CLOCK,
                FAULTS,
                EventClass {
                    type_: PERF_TYPE_HARDWARE,
                    config: 0,
                },
            ],
            1e9,
        );
        assert_eq!(rows[0].metric, Some(Metric::CpusUtilized(0.5)));
        assert_eq!(rows[1].metric, Some(Metric::PerSecond(4000.0)));
        assert_eq!(rows[2].state, CountState::NotSupported);
        assert_eq!(rows[2].metric, None);
        assert_eq!(unit_prefix(4000.0), (4.0, "K"));
        assert_eq!(unit_prefix(999.0), (999.0, ""));
        assert_eq!(unit_prefix(2.5e6), (2.5, "M"));
    }

    #[test]
    fn hardware_ratios_when_both_counters_exist() {
        let hw = |config| EventClass {
            type_: PERF_TYPE_HARDWARE,
            config,
        };
        let sums = vec![
            (0, None, Some(reading(1_000_000_000, 1, 1))),
            (1, None, Some(reading(2_000_000_000, 1, 1))),
            (2, None, Some(reading(3_000_000_000, 1, 1))),
            (3, None, Some(reading(1000, 1, 1))),
            (4, None, Some(reading(10, 1, 1))),
        ];
        let rows = rows_of(&sums, &[TASK_CLOCK, hw(0), hw(1), hw(4), hw(5)], 1e9);
        assert_eq!(rows[1].metric, Some(Metric::Ghz(2.0)));
        assert_eq!(rows[2].metric, Some(Metric::InsnPerCycle(1.5)));
        assert_eq!(
            rows[4].metric,
            Some(Metric::Percent {
                value: 1.0,
                of: "of all branches"
            })
        );
    }

    #[test]
    fn runs_give_mean_and_noise_and_not_counted() {
        let mut acc = RunAccumulator::new();
        for (v, run) in [(10, 5), (20, 5), (30, 0)] {
            acc.add_run(&[(0, None, Some(reading(v, 5, run)))], 1e6);
        }
        let rows = acc.rows(&[FAULTS]);
        assert_eq!(rows[0].count, 15.0);
        assert!((rows[0].noise_pct - 100.0 * 5.0 / 15.0).abs() < 1e-9);
        let mut never = RunAccumulator::new();
        never.add_run(&[(0, None, Some(reading(0, 5, 0)))], 1e6);
        assert_eq!(never.rows(&[FAULTS])[0].state, CountState::NotCounted);
    }

    #[test]
    fn a_count_without_time_is_counted_unscaled() {
        assert_eq!(scale(reading(1, 0, 0)), Some(1.0));
        assert_eq!(scale(reading(7, 5, 0)), None);
        assert_eq!(scale(reading(0, 0, 0)), None);
        assert_eq!(scale(reading(0, 5, 0)), None);
    }

    #[test]
    fn interval_delta() {
        let a = reading(10, 100, 100);
        let b = reading(25, 200, 150);
        assert_eq!(b.since(a), reading(15, 100, 50));
    }
}
