//! `scry top`'s live profile, without a screen: every refresh the
//! interval's resolved samples join a decaying window (`decay`) whose
//! `Profile` is built again, with the status numbers perf top prints
//! (samples per second, the kernel's share, losses). A terminal, `--stdio`
//! or a web viewer draws from [`LiveTop::profile`] and [`LiveTop::rates`].
//!
//! The samples are named either from streamed records (a `Resolver` fed
//! through `RecordHandler`) or from counts a BPF program took in the kernel
//! ([`KernelCounts`], loaded by the command); both feed the same window.
//! The rate is by the kernel's clock (the interval's first and last sample
//! time), not wall time: analysis may lag the capture.

use std::io;
use std::time::{Duration, Instant};

use linux_perf_event_reader::{CommonData, CpuMode, ForkOrExitRecord, SampleRecord};

use super::decay::DecayWindow;
use super::profile::{Profile, ProfileOptions};
use super::sample::{FrameTable, ResolvedSample};
use crate::data::handler::{Comm, Lost, LostKind, Mmap, RecordHandler};
use crate::symbol::Resolver;

/// What one interval counted in the kernel, for the status line.
#[derive(Debug, Default)]
pub(crate) struct Interval {
    /// Samples taken.
    pub(crate) samples: u64,
    /// Samples taken in the kernel.
    pub(crate) kernel: u64,
    /// Samples not counted so far (the counts map was full).
    pub(crate) dropped: u64,
}

/// Samples counted in the kernel and named at each refresh.
pub(crate) trait KernelCounts {
    /// Takes the interval's counts (and names them).
    fn take_interval(&mut self) -> io::Result<Interval>;
    /// The samples named since the last call.
    fn take_samples(&mut self) -> Vec<ResolvedSample>;
    /// The frames the samples point into.
    fn frames(&self) -> &FrameTable;
}

/// Where the samples are named: from streamed records, or from the
/// kernel's counts.
pub(crate) enum TopNames {
    /// Records streamed through the rings, named by the resolver.
    Stream(Box<Resolver>),
    /// Stacks counted in the kernel.
    Kernel(Box<dyn KernelCounts>),
}

impl TopNames {
    fn take_samples(&mut self) -> Vec<ResolvedSample> {
        match self {
            TopNames::Stream(resolver) => resolver.take_samples(),
            TopNames::Kernel(kernel) => kernel.take_samples(),
        }
    }

    fn frames(&self) -> &FrameTable {
        match self {
            TopNames::Stream(resolver) => resolver.frames(),
            TopNames::Kernel(kernel) => kernel.frames(),
        }
    }

    /// The resolver of streamed records.
    fn stream(&mut self) -> Option<&mut Resolver> {
        match self {
            TopNames::Stream(resolver) => Some(resolver),
            TopNames::Kernel(_) => None,
        }
    }
}

/// The status numbers of the last refresh.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct TopRates {
    /// Samples per second over the last interval.
    pub(crate) samples_per_sec: f64,
    /// Share of the last interval's samples taken in the kernel (percent).
    pub(crate) kernel_pct: f64,
    /// Records (or BPF samples) lost since the start.
    pub(crate) lost: u64,
}

/// The live profile: samples in, a decayed `Profile` out at each refresh.
pub(crate) struct LiveTop {
    names: TopNames,
    window: DecayWindow,
    options: ProfileOptions,
    interval: Duration,
    last_refresh: Instant,
    interval_samples: u64,
    interval_kernel: u64,
    /// Sample timestamps (ns) seen in the interval, to rate by the kernel's
    /// clock: analysis may lag the capture, so wall time would mislead.
    interval_times: Option<(u64, u64)>,
    lost: u64,
    rates: TopRates,
    /// The last refresh's profile.
    last: Option<Profile>,
}

impl LiveTop {
    /// perf top's window: 8 intervals, each weighing 7/8 of the next newer.
    pub(crate) fn new(names: TopNames, options: ProfileOptions, interval: Duration) -> Self {
        LiveTop {
            names,
            window: DecayWindow::new(8, 0.875),
            options,
            interval,
            last_refresh: Instant::now(),
            interval_samples: 0,
            interval_kernel: 0,
            interval_times: None,
            lost: 0,
            rates: TopRates::default(),
            last: None,
        }
    }

    /// Seconds between refreshes.
    pub(crate) fn interval(&self) -> Duration {
        self.interval
    }

    /// Whether an interval has passed since the last refresh.
    pub(crate) fn due(&self) -> bool {
        self.last_refresh.elapsed() >= self.interval
    }

    /// Closes the interval: its samples into the window, the profile built
    /// again, the rates of the interval.
    pub(crate) fn refresh(&mut self) -> io::Result<()> {
        if let TopNames::Kernel(kernel) = &mut self.names {
            let interval = kernel.take_interval()?;
            self.interval_samples += interval.samples;
            self.interval_kernel += interval.kernel;
            self.lost = interval.dropped;
        }
        let wall = self.last_refresh.elapsed().as_secs_f64().max(1e-3);
        self.last_refresh = Instant::now();
        let elapsed = match self.interval_times.take() {
            Some((first, last)) if last > first => {
                ((last - first) as f64 / 1e9).max(self.interval.as_secs_f64().min(wall))
            }
            _ => wall,
        };
        self.window.push(self.names.take_samples());
        let weighted = self.window.weighted();
        let profile = Profile::build(&weighted, self.names.frames(), &self.options);
        self.rates = TopRates {
            samples_per_sec: self.interval_samples as f64 / elapsed,
            kernel_pct: if self.interval_samples > 0 {
                self.interval_kernel as f64 * 100.0 / self.interval_samples as f64
            } else {
                0.0
            },
            lost: self.lost,
        };
        self.interval_samples = 0;
        self.interval_kernel = 0;
        self.last = Some(profile);
        Ok(())
    }

    /// The last refresh's profile (none before the first).
    pub(crate) fn profile(&self) -> Option<&Profile> {
        self.last.as_ref()
    }

    /// The last refresh's status numbers.
    pub(crate) fn rates(&self) -> TopRates {
        self.rates
    }

    /// The frames the profile's entries point into.
    pub(crate) fn frames(&self) -> &FrameTable {
        self.names.frames()
    }

    /// The profile's options (its sort keys are the view's columns).
    pub(crate) fn options(&self) -> &ProfileOptions {
        &self.options
    }
}

/// Samples counted for the status line, losses too; the records to the
/// resolver.
impl RecordHandler for LiveTop {
    fn handle_sample(&mut self, attr_index: usize, s: &SampleRecord<'_>) {
        self.interval_samples += 1;
        if let Some(t) = s.timestamp {
            let (first, last) = self.interval_times.get_or_insert((t, t));
            *first = (*first).min(t);
            *last = (*last).max(t);
        }
        if matches!(s.cpu_mode, CpuMode::Kernel | CpuMode::GuestKernel) {
            self.interval_kernel += 1;
        }
        if let Some(resolver) = self.names.stream() {
            resolver.handle_sample(attr_index, s);
        }
    }

    fn handle_mmap(&mut self, attr_index: usize, mmap: &Mmap<'_>, id: &CommonData) {
        if let Some(resolver) = self.names.stream() {
            resolver.handle_mmap(attr_index, mmap, id);
        }
    }

    fn handle_comm(&mut self, attr_index: usize, comm: &Comm<'_>, id: &CommonData) {
        if let Some(resolver) = self.names.stream() {
            resolver.handle_comm(attr_index, comm, id);
        }
    }

    fn handle_fork(&mut self, attr_index: usize, fork: &ForkOrExitRecord, id: &CommonData) {
        if let Some(resolver) = self.names.stream() {
            resolver.handle_fork(attr_index, fork, id);
        }
    }

    fn handle_lost(&mut self, lost: &Lost, id: &CommonData) {
        if lost.kind == LostKind::Records {
            self.lost += lost.count;
        }
        if let Some(resolver) = self.names.stream() {
            resolver.handle_lost(lost, id);
        }
    }
}
