//! The BPF tools' run loop: the programs count in the kernel while this
//! waits, and wakes the tool to print at each interval and once at the
//! end. The end comes on SIGINT, SIGTERM or SIGHUP (caught, so the last
//! counts still print), when the duration has elapsed, after the
//! interval count, or when the watched process exits (a pidfd): all but
//! the count through `sys::signal::RunStop`, the one stop of every run.
//!
//! Nothing here touches BPF: the programs and links belong to the tool's
//! loader, and are released (detached) when it drops, on every path. A
//! tool that runs a command (`-- COMMAND`) forks it with [`Workload`].

use std::ffi::OsString;
use std::io;
use std::os::fd::RawFd;
use std::time::{Duration, Instant};

use super::CaptureError;
use crate::sys::process::{self, Child, ExitStatus, PendingChild};
use crate::sys::signal::{PollFd, RunStop, Stopped};

/// When to print and when to end.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct RunOptions {
    /// Print every interval (default: once, at the end).
    pub(crate) interval: Option<Duration>,
    /// End after this many intervals.
    pub(crate) count: Option<u64>,
    /// End after this long.
    pub(crate) duration: Option<Duration>,
    /// End when this process exits.
    pub(crate) pid: Option<i32>,
}

/// Why the run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EndReason {
    Signal(i32),
    Duration,
    Count,
    TargetExited,
}

/// What woke the loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Wake {
    /// A descriptor given to `run_events` is readable (a ring buffer).
    Ready,
    /// An interval ended.
    Tick,
    /// The run ends: the last call.
    Last,
}

/// Waits, calling `tick(last)` at each interval and once at the end with
/// `last` true. The target's pidfd is opened first, so a process that
/// already exited ends the run at once.
pub(crate) fn run(
    opts: &RunOptions,
    tick: impl FnMut(bool) -> io::Result<()>,
) -> io::Result<EndReason> {
    run_with(opts, RunStop::install()?, tick)
}

/// As [`run`], with the stop signals already caught by `stop`: a tool
/// that starts a [`Workload`] installs them first, so that a signal that
/// comes as the workload starts ends the run instead of killing scry.
pub(crate) fn run_with(
    opts: &RunOptions,
    stop: RunStop,
    mut tick: impl FnMut(bool) -> io::Result<()>,
) -> io::Result<EndReason> {
    run_events_with(opts, stop, &[], |wake| match wake {
        Wake::Ready => Ok(()),
        Wake::Tick => tick(false),
        Wake::Last => tick(true),
    })
}

/// As [`run`], also waking (`Wake::Ready`) when one of `fds` (ring
/// buffers) is readable.
pub(crate) fn run_events(
    opts: &RunOptions,
    fds: &[RawFd],
    wake: impl FnMut(Wake) -> io::Result<()>,
) -> io::Result<EndReason> {
    run_events_with(opts, RunStop::install()?, fds, wake)
}

/// As [`run_events`], with the stop signals already caught by `stop`.
/// The duration and the `-p` process's exit end the run through `stop`;
/// the intervals and their count are this loop's own.
pub(crate) fn run_events_with(
    opts: &RunOptions,
    stop: RunStop,
    fds: &[RawFd],
    mut wake: impl FnMut(Wake) -> io::Result<()>,
) -> io::Result<EndReason> {
    let stop = stop.until_exit(opts.pid)?;
    let start = Instant::now();
    let stop = stop.until(opts.duration);
    let mut next_tick = opts.interval.map(|i| start + i);
    let mut ticks = 0u64;
    // The rings: built once, reset per wait.
    let mut polled: Vec<PollFd> = fds.iter().map(|&fd| PollFd { fd, revents: 0 }).collect();
    loop {
        let timeout_ms = next_tick.map_or(-1, |d| {
            d.saturating_duration_since(Instant::now())
                .as_millis()
                .min(i32::MAX as u128) as i32
        });
        polled.iter_mut().for_each(|p| p.revents = 0);
        let stopped = stop.wait(&mut polled, timeout_ms)?;
        if polled.iter().any(|p| p.revents != 0) {
            wake(Wake::Ready)?;
        }
        if let Some(stopped) = stopped {
            wake(Wake::Last)?;
            return Ok(match stopped {
                Stopped::Signal(sig) => EndReason::Signal(sig),
                Stopped::TargetExited => EndReason::TargetExited,
                Stopped::Duration => EndReason::Duration,
            });
        }
        let now = Instant::now();
        if let (Some(at), Some(interval)) = (next_tick, opts.interval)
            && now >= at
        {
            ticks += 1;
            if opts.count.is_some_and(|count| ticks >= count) {
                wake(Wake::Last)?;
                return Ok(EndReason::Count);
            }
            wake(Wake::Tick)?;
            next_tick = Some(at + interval);
        }
    }
}

/// A command a BPF tool follows (`-- COMMAND`): forked first, so that its
/// pid can go into the programs' filter before it runs; started (exec'd)
/// once they are attached, so they see it from its first instruction.
/// The run ends when it exits (`RunOptions::pid`); its status is the
/// tool's. Dropped before it ends, it is killed and reaped.
#[derive(Debug)]
pub(crate) struct Workload {
    pid: i32,
    pending: Option<PendingChild>,
    child: Option<Child>,
}

impl Workload {
    pub(crate) fn fork(command: &[OsString]) -> Result<Workload, CaptureError> {
        let pending = process::fork_pending(command).map_err(CaptureError::System)?;
        Ok(Workload {
            pid: pending.pid(),
            pending: Some(pending),
            child: None,
        })
    }

    pub(crate) fn pid(&self) -> i32 {
        self.pid
    }

    /// Lets it exec; an exec failure (no such program) is the error.
    pub(crate) fn start(&mut self) -> Result<(), CaptureError> {
        if let Some(pending) = self.pending.take() {
            let child = pending
                .start()
                .map_err(|(program, err)| CaptureError::CannotRun { program, err })?;
            self.child = Some(child);
        }
        Ok(())
    }

    /// Its exit status, waiting for it (call once the run ended with
    /// [`EndReason::TargetExited`]); `None` if it never started.
    pub(crate) fn wait(&mut self) -> io::Result<Option<ExitStatus>> {
        self.child.as_mut().map(Child::wait).transpose()
    }
}
