//! Live capture: drives `sys` for the commands that watch the kernel now
//! (`record`, later `top`, `trace`): opens one counter per event × CPU (×
//! thread), points every counter of a CPU at one ring, drains the rings on
//! poll wake-ups, and synthesizes from /proc what already ran before we
//! started. Records leave as raw kernel bytes to a `RecordSink`; nothing is
//! parsed here beyond the 8-byte header.

pub(crate) mod bpf_run;
mod counter_group;
pub(crate) mod counting;
pub(crate) mod hidden_binaries;
pub(crate) mod inventory;
pub(crate) mod live;
pub(crate) mod options;
pub(crate) mod profile_events;
pub(crate) mod profile_kernel;
pub(crate) mod session;
pub(crate) mod synth;
pub(crate) mod to_file;
pub(crate) mod trace;
pub(crate) mod trace_sink;

pub(crate) use session::{
    CallGraph, CaptureOptions, DEFAULT_FP_STACK_SIZE, Sampling, Session, StopReason, Target,
};

use std::io;

use crate::event::name::ResolvedEvent;
use crate::sys::perf_event::{PerfEventFd, perf_event_attr};

/// Opens one counter of `event` (`attr` made from it) for `pid` on `cpu`,
/// in `leader`'s group when given: the one place counters are opened, so
/// that a `uprobe` PMU event gets its path (`config1`) wherever it is
/// opened.
pub(crate) fn open_counter(
    event: &ResolvedEvent,
    attr: &perf_event_attr,
    pid: i32,
    cpu: i32,
    leader: Option<&PerfEventFd>,
) -> io::Result<PerfEventFd> {
    let open = |a: &perf_event_attr| PerfEventFd::open_in_group(a, pid, cpu, leader);
    match &event.uprobe {
        Some(site) => crate::sys::uprobe::open_at(attr, &site.path, open),
        None => open(attr),
    }
}

/// As `open_counter`, for the tasks of a cgroup (`cgroup_dir` an open
/// directory of the perf_event hierarchy).
pub(crate) fn open_cgroup_counter(
    event: &ResolvedEvent,
    attr: &perf_event_attr,
    cgroup_dir: i32,
    cpu: i32,
    leader: Option<&PerfEventFd>,
) -> io::Result<PerfEventFd> {
    let open = |a: &perf_event_attr| PerfEventFd::open_cgroup(a, cgroup_dir, cpu, leader);
    match &event.uprobe {
        Some(site) => crate::sys::uprobe::open_at(attr, &site.path, open),
        None => open(attr),
    }
}

/// Why a capture could not start or went wrong.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum CaptureError {
    #[error(
        "permission denied opening event '{event}': perf_event_paranoid is {} (/proc/sys/kernel/perf_event_paranoid); \
         run as root, grant CAP_PERFMON, or lower it with 'sysctl kernel.perf_event_paranoid=1'",
        paranoid.map_or("unknown".to_string(), |p| p.to_string())
    )]
    Permission {
        event: String,
        paranoid: Option<i32>,
    },
    #[error(
        "event '{event}' is not supported on this machine (no hardware PMU, as in most virtual machines); try cpu-clock"
    )]
    NotSupported { event: String },
    #[error("no such process: {0}")]
    NoSuchProcess(i32),
    #[error("no such CPU: {0} (see /sys/devices/system/cpu/online)")]
    NoSuchCpu(u32),
    #[error("cannot open event '{event}': {err}")]
    Open { event: String, err: io::Error },
    #[error("event '{event}': the kernel refused filter '{filter}': {err}")]
    Filter {
        event: String,
        filter: String,
        err: io::Error,
    },
    #[error("cannot map the ring buffer: {0}")]
    Mmap(io::Error),
    #[error("-m: ring buffer pages must be a power of two, got {0}")]
    BadMmapPages(usize),
    #[error("cannot run '{program}': {}", strip_os_error(err))]
    CannotRun { program: String, err: io::Error },
    #[error(
        "event group led by '{event}': the leader is not supported here ({reason}), so the group cannot be counted"
    )]
    GroupLeaderUnsupported { event: String, reason: String },
    #[error("no events to record")]
    NoEvents,
    #[error("nothing to watch: every target thread is gone")]
    NothingToWatch,
    #[error("writing records: {0}")]
    Write(io::Error),
    #[error("{0}")]
    System(io::Error),
}

/// `No such file or directory (os error 2)` → `No such file or directory`.
fn strip_os_error(err: &io::Error) -> String {
    let text = err.to_string();
    match text.find(" (os error") {
        Some(i) => text[..i].to_string(),
        None => text,
    }
}
