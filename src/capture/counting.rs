//! Counting (non-sampling) counters for `scry stat`: one counter per event
//! × CPU for system-wide targets (`-a`, `-C`, `-G`), or one per event ×
//! thread with `inherit` for a command, `-p` or `-t`; read with
//! `time_enabled`/`time_running` so `analysis::stat` can scale
//! multiplexed counts.
//!
//! Decisions worth knowing:
//! - An event the kernel cannot count here (EOPNOTSUPP, ENOENT, ENODEV,
//!   EINVAL, ENOSYS, ENXIO at open, as perf treats them) is not an error:
//!   it is marked unsupported and prints as `<not supported>`. Permission
//!   errors are errors, naming perf_event_paranoid.
//! - A command's counters are opened before it execs, with
//!   `enable_on_exec`, so scry's own fork never counts (perf does the same).
//! - No rings, no records: counting costs the target nothing but the
//!   in-kernel increments.
//! - Closing the last counter of a tracepoint waits for an RCU grace
//!   period under the kernel's `event_mutex` (~33 ms on our VMs), so 360
//!   `syscalls:sys_enter_*` counters take ~12 s to close, for perf too.
//!   Closing from many threads does not help (the mutex serializes them);
//!   it is the kernel's cost, paid after the counts are read.
//!
//! - Cgroup counters (`-G`) on 6.18 can come back with `time_enabled` and
//!   `time_running` both 0 while the value is not, or both near the
//!   machine's uptime: the cgroup's perf clock was never started when its
//!   only task runs on a CPU without switching. The value is right; the
//!   times are not. `read` replaces such times with the counting window
//!   scry measured itself (so nothing is scaled), as perf's numbers show.
//!
//! Invariants: `supported[e]` is false exactly when event `e` has no open
//! counter; readings come back in the order counters were opened.

use std::ffi::OsString;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::event::name::{self, ResolvedEvent};
use crate::model::counter::{CounterReading, Reading};
use crate::sys::perf_event::{self as pe, PerfEventFd, perf_event_attr};
use crate::sys::process::{Child, ExitStatus, PendingChild};
use crate::sys::signal::{self, PollFd, RunStop, Stopped};
use crate::sys::{proc, process};

use super::CaptureError;
use super::counter_group::{GroupPlace, group_place, grouped_attr, read_counter};
use super::session::Target;

/// What to count, and where.
#[derive(Clone, Debug)]
pub(crate) struct CountingOptions {
    pub(crate) events: Vec<ResolvedEvent>,
    pub(crate) target: Target,
    /// `-G`: count only tasks in this cgroup (a path under the cgroup
    /// mount, or a name relative to it). Needs a system-wide target.
    pub(crate) cgroup: Option<String>,
    /// Counters follow children the target forks (default true, as perf;
    /// `--no-inherit` turns it off).
    pub(crate) inherit: bool,
}

/// One opened counter.
#[derive(Debug)]
struct Counter {
    fd: PerfEventFd,
    event: usize,
    cpu: Option<u32>,
    /// Which CPU (system-wide) or thread (per task) of the target, by
    /// position: a group member opens with its leader of the same slot.
    slot: usize,
    /// For a counter in a group of `len` events: its id, to find its value
    /// in the group's read (`PERF_FORMAT_GROUP`).
    group: Option<(u64, usize)>,
}

/// What the tool events (`duration_time`, `user_time`, `system_time`)
/// read: scry's own measurements of the run, in ns. `None` reads as
/// `<not counted>`, as perf shows a time it has not got.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct ToolTimes {
    pub(crate) duration_ns: u64,
    pub(crate) user_ns: Option<u64>,
    pub(crate) system_ns: Option<u64>,
}

/// What woke `CounterSet::wait`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Wake {
    /// The timeout passed.
    Timeout,
    /// The command exited (with its status), or every watched process did.
    TargetExited(Option<ExitStatus>),
    /// SIGINT or SIGTERM reached scry.
    Signal(i32),
}

/// The counters of one `stat` run and the workload they watch.
#[derive(Debug)]
pub(crate) struct CounterSet {
    pub(crate) events: Vec<ResolvedEvent>,
    /// Per event: false when the kernel cannot count it here.
    pub(crate) supported: Vec<bool>,
    /// Per event: why it is unsupported (the errno in words).
    pub(crate) unsupported_reason: Vec<Option<String>>,
    /// The CPUs counted on (system-wide), or the online CPUs.
    pub(crate) cpus: Vec<u32>,
    pub(crate) system_wide: bool,
    counters: Vec<Counter>,
    pending: Option<PendingChild>,
    child: Option<Child>,
    child_pidfd: Option<OwnedFd>,
    watched: Vec<OwnedFd>,
    /// Threads without a pidfd, checked in /proc on every wake-up.
    polled: Vec<i32>,
    enable_on_exec: bool,
    /// Counting only a cgroup's tasks (`-G`): readings are checked (see the
    /// module doc).
    cgroup: bool,
    started: Option<Instant>,
}

/// How often threads without a pidfd are looked for in /proc.
const POLL_INTERVAL: Duration = Duration::from_millis(100);

/// The attribute for a counting counter.
pub(crate) fn counting_attr(
    event: &ResolvedEvent,
    inherit: bool,
    enable_on_exec: bool,
) -> perf_event_attr {
    let mut attr = pe::new_attr();
    event.select_in(&mut attr);
    attr.read_format = pe::PERF_FORMAT_TOTAL_TIME_ENABLED | pe::PERF_FORMAT_TOTAL_TIME_RUNNING;
    attr.set_disabled(1);
    attr.set_inherit(u64::from(inherit));
    attr.set_enable_on_exec(u64::from(enable_on_exec));
    attr.set_exclude_user(u64::from(event.modifiers.exclude_user));
    attr.set_exclude_kernel(u64::from(event.modifiers.exclude_kernel));
    attr
}

/// A cgroup counter's reading with impossible times (the value counted but
/// no time ran, or more time than the `window` scry counted for) given the
/// window as both times instead: the value stands, unscaled.
fn cgroup_times_checked(reading: Reading, window: u64) -> Reading {
    // Slack for the kernel enabling a little before scry's clock started.
    let limit = window
        .saturating_add(window / 10)
        .saturating_add(50_000_000);
    let ran_without_time = reading.value > 0 && reading.running == 0;
    if ran_without_time || reading.enabled > limit || reading.running > limit {
        Reading {
            value: reading.value,
            enabled: window,
            running: window,
        }
    } else {
        reading
    }
}

/// errnos perf reports as `<not supported>` rather than failing.
pub(crate) fn is_unsupported_errno(code: i32) -> bool {
    matches!(
        code,
        libc::EOPNOTSUPP | libc::ENOENT | libc::ENODEV | libc::EINVAL | libc::ENOSYS | libc::ENXIO
    )
}

/// `Operation not supported (os error 95)` → `Operation not supported`.
pub(crate) fn errno_words(err: &io::Error) -> String {
    let text = err.to_string();
    match text.find(" (os error") {
        Some(i) => text[..i].to_string(),
        None => text,
    }
}

/// Can this machine count `event` at all? Opens it on this process for a
/// moment. `Ok(())`, or the kernel's refusal (`errno_words` says it for
/// `scry list`).
pub(crate) fn probe(event: &ResolvedEvent) -> io::Result<()> {
    let attr = counting_attr(event, false, false);
    super::open_counter(event, &attr, 0, -1, None).map(drop)
}

/// The directory of cgroup `name` in the hierarchy perf events use: the
/// cgroup-v1 `perf_event` controller if mounted, else the cgroup2 mount.
pub(crate) fn cgroup_dir(name: &str) -> Result<PathBuf, CaptureError> {
    let direct = Path::new(name);
    if direct.is_absolute() && direct.is_dir() && name.starts_with("/sys/fs/cgroup") {
        return Ok(direct.to_path_buf());
    }
    let mounts = std::fs::read_to_string("/proc/self/mounts").map_err(CaptureError::System)?;
    let mut v1 = None;
    let mut v2 = None;
    for line in mounts.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let (Some(mount), Some(fstype), Some(opts)) = (fields.get(1), fields.get(2), fields.get(3))
        else {
            continue;
        };
        if *fstype == "cgroup" && opts.split(',').any(|o| o == "perf_event") {
            v1 = Some(PathBuf::from(mount));
        } else if *fstype == "cgroup2" && v2.is_none() {
            v2 = Some(PathBuf::from(mount));
        }
    }
    let Some(base) = v1.or(v2) else {
        return Err(CaptureError::System(io::Error::new(
            io::ErrorKind::NotFound,
            format!(
                "-G {name}: no perf_event cgroup hierarchy is mounted (cgroup2 or cgroup v1 perf_event)"
            ),
        )));
    };
    let dir = base.join(name.trim_start_matches('/'));
    if dir.is_dir() {
        Ok(dir)
    } else {
        Err(CaptureError::System(io::Error::new(
            io::ErrorKind::NotFound,
            format!(
                "-G {name}: no such cgroup ({} does not exist)",
                dir.display()
            ),
        )))
    }
}

impl CounterSet {
    /// Opens every counter. A `-- COMMAND` is forked but not yet exec'd:
    /// `start` lets it run.
    pub(crate) fn open(opts: &CountingOptions) -> Result<CounterSet, CaptureError> {
        if opts.events.is_empty() {
            return Err(CaptureError::NoEvents);
        }
        process::raise_fd_limit();
        let target = &opts.target;
        let system_wide = target.system_wide || target.cpus.is_some() || opts.cgroup.is_some();
        let cpus = target.online_cpus()?;
        let cgroup = match &opts.cgroup {
            Some(name) => {
                let dir = cgroup_dir(name)?;
                Some(File::open(&dir).map_err(|e| {
                    CaptureError::System(io::Error::new(
                        e.kind(),
                        format!("-G: cannot open {}: {}", dir.display(), errno_words(&e)),
                    ))
                })?)
            }
            None => None,
        };

        let mut tasks: Vec<i32> = Vec::new();
        let mut watched = Vec::new();
        let mut polled = Vec::new();
        if !target.command.is_empty() || !system_wide {
            for &pid in &target.pids {
                let threads = proc::threads(pid).map_err(|_| CaptureError::NoSuchProcess(pid))?;
                if !system_wide {
                    tasks.extend(threads);
                }
                if target.command.is_empty() {
                    watched.push(
                        signal::pidfd_open(pid).map_err(|_| CaptureError::NoSuchProcess(pid))?,
                    );
                }
            }
            for &tid in &target.tids {
                if !proc::exists(tid) {
                    return Err(CaptureError::NoSuchProcess(tid));
                }
                if !system_wide {
                    tasks.push(tid);
                }
                if target.command.is_empty() {
                    // A pidfd needs a thread-group leader on older kernels;
                    // other threads are looked for in /proc instead.
                    match signal::pidfd_open(tid) {
                        Ok(fd) => watched.push(fd),
                        Err(_) => polled.push(tid),
                    }
                }
            }
        }
        let mut pending = None;
        if !target.command.is_empty() {
            let child = fork(&target.command)?;
            if !system_wide && target.pids.is_empty() && target.tids.is_empty() {
                tasks.push(child.pid());
            }
            pending = Some(child);
        }
        let enable_on_exec =
            pending.is_some() && !system_wide && target.pids.is_empty() && target.tids.is_empty();
        let mut set = CounterSet {
            events: opts.events.clone(),
            supported: vec![true; opts.events.len()],
            unsupported_reason: vec![None; opts.events.len()],
            cpus: cpus.clone(),
            system_wide,
            counters: Vec::new(),
            pending,
            child: None,
            child_pidfd: None,
            watched,
            polled,
            enable_on_exec,
            cgroup: cgroup.is_some(),
            started: None,
        };
        let result = if system_wide {
            set.open_per_cpu(&cpus, cgroup.as_ref().map(|f| f.as_raw_fd()))
        } else {
            set.open_per_task(&tasks, opts.inherit)
        };
        if let Err(e) = result {
            if let Some(child) = set.pending.take() {
                child.abort();
            }
            return Err(e);
        }
        Ok(set)
    }

    fn open_per_cpu(&mut self, cpus: &[u32], cgroup: Option<i32>) -> Result<(), CaptureError> {
        let events = self.events.clone();
        for (index, event) in events.iter().enumerate() {
            if event.tool.is_some() {
                continue;
            }
            let place = group_place(&events, index);
            let attr = grouped_attr(counting_attr(event, false, false), place);
            let mut opened = Vec::new();
            let mut unsupported = None;
            for (slot, &cpu) in cpus.iter().enumerate() {
                let Some(leader) = self.group_fd_for(place, slot) else {
                    continue;
                };
                let result = match cgroup {
                    Some(fd) => super::open_cgroup_counter(event, &attr, fd, cpu as i32, leader),
                    None => super::open_counter(event, &attr, -1, cpu as i32, leader),
                };
                match result {
                    Ok(fd) => opened.push(Counter {
                        fd,
                        event: index,
                        cpu: Some(cpu),
                        slot,
                        group: None,
                    }),
                    Err(e) if is_unsupported_errno(e.raw_os_error().unwrap_or(0)) => {
                        unsupported = Some(errno_words(&e));
                        break;
                    }
                    Err(e) => return Err(open_error(event, -1, e)),
                }
            }
            self.record_opened(index, place, opened, unsupported)?;
        }
        Ok(())
    }

    /// The group a counter at `place` joins for `slot`: `Some(None)` for
    /// none (alone, or leading); None when its leader did not open there.
    fn group_fd_for(&self, place: GroupPlace, slot: usize) -> Option<Option<&PerfEventFd>> {
        let GroupPlace::Member { leader, .. } = place else {
            return Some(None);
        };
        self.counters
            .iter()
            .find(|c| c.event == leader && c.slot == slot)
            .map(|c| Some(&c.fd))
    }

    fn open_per_task(&mut self, tasks: &[i32], inherit: bool) -> Result<(), CaptureError> {
        let events = self.events.clone();
        for (index, event) in events.iter().enumerate() {
            if event.tool.is_some() {
                continue;
            }
            let place = group_place(&events, index);
            let mut attr = grouped_attr(counting_attr(event, inherit, self.enable_on_exec), place);
            let mut opened = Vec::new();
            let mut unsupported = None;
            for (n, &tid) in tasks.iter().enumerate() {
                // The leader's thread ended before it was counted.
                let Some(leader) = self.group_fd_for(place, n) else {
                    continue;
                };
                let mut result = super::open_counter(event, &attr, tid, -1, leader);
                // perf_event_paranoid >= 2 keeps users out of the kernel:
                // count user space only, as perf does, and say so in the name.
                if let Err(e) = &result
                    && matches!(e.raw_os_error(), Some(libc::EACCES | libc::EPERM))
                    && attr.exclude_kernel() == 0
                    && attr.exclude_user() == 0
                    && pe::paranoid_level().is_some_and(|p| p >= 2)
                {
                    attr.set_exclude_kernel(1);
                    attr.set_exclude_hv(1);
                    result = super::open_counter(event, &attr, tid, -1, leader);
                    if result.is_ok()
                        && let Some(e) = self.events.get_mut(index)
                        && !e.name.contains(':')
                    {
                        e.name.push_str(":u");
                        e.modifiers.exclude_kernel = true;
                    }
                }
                match result {
                    Ok(fd) => opened.push(Counter {
                        fd,
                        event: index,
                        cpu: None,
                        slot: n,
                        group: None,
                    }),
                    // A thread (not the first) that ended since we listed it.
                    Err(e) if e.raw_os_error() == Some(libc::ESRCH) && n > 0 => {}
                    Err(e) if is_unsupported_errno(e.raw_os_error().unwrap_or(0)) => {
                        unsupported = Some(errno_words(&e));
                        break;
                    }
                    Err(e) => return Err(open_error(event, tid, e)),
                }
            }
            self.record_opened(index, place, opened, unsupported)?;
        }
        Ok(())
    }

    /// Keeps event `index`'s counters, or marks it unsupported. A group
    /// whose leader cannot open cannot be counted at all (perf stops
    /// there too); a member that cannot is `<not supported>` alone.
    fn record_opened(
        &mut self,
        index: usize,
        place: GroupPlace,
        mut opened: Vec<Counter>,
        unsupported: Option<String>,
    ) -> Result<(), CaptureError> {
        match unsupported {
            Some(reason) => {
                if let GroupPlace::Leader { .. } = place {
                    return Err(CaptureError::GroupLeaderUnsupported {
                        event: self
                            .events
                            .get(index)
                            .map(|e| e.name.clone())
                            .unwrap_or_default(),
                        reason,
                    });
                }
                if let Some(s) = self.supported.get_mut(index) {
                    *s = false;
                }
                if let Some(r) = self.unsupported_reason.get_mut(index) {
                    *r = Some(reason);
                }
            }
            None => {
                if let GroupPlace::Leader { len } | GroupPlace::Member { len, .. } = place {
                    for c in &mut opened {
                        c.group = Some((c.fd.id().map_err(CaptureError::System)?, len));
                    }
                }
                self.counters.extend(opened);
            }
        }
        Ok(())
    }

    /// Starts counting: lets the command exec (its counters enable on
    /// exec), or enables the counters now.
    pub(crate) fn start(&mut self) -> Result<(), CaptureError> {
        if !self.enable_on_exec {
            for c in &self.counters {
                c.fd.enable().map_err(CaptureError::System)?;
            }
        }
        self.started = Some(Instant::now());
        if let Some(pending) = self.pending.take() {
            let pid = pending.pid();
            let pidfd = signal::pidfd_open(pid).map_err(CaptureError::System)?;
            match pending.start() {
                Ok(child) => {
                    self.child = Some(child);
                    self.child_pidfd = Some(pidfd);
                }
                Err((program, err)) => return Err(CaptureError::CannotRun { program, err }),
            }
        }
        Ok(())
    }

    /// When `start` ran.
    pub(crate) fn started(&self) -> Option<Instant> {
        self.started
    }

    /// Reads every counter: cumulative values since `start`; tool events
    /// read the time since `start` and no CPU times.
    pub(crate) fn read(&self) -> Result<Vec<CounterReading>, CaptureError> {
        let duration_ns = self.started.map_or(0, |t| {
            u64::try_from(t.elapsed().as_nanos()).unwrap_or(u64::MAX)
        });
        self.read_with(ToolTimes {
            duration_ns,
            ..ToolTimes::default()
        })
    }

    /// As `read`, with the tool events reading `tools`.
    pub(crate) fn read_with(&self, tools: ToolTimes) -> Result<Vec<CounterReading>, CaptureError> {
        let mut out = Vec::with_capacity(self.counters.len());
        let mut buf = Vec::new();
        let window = self
            .started
            .map(|t| u64::try_from(t.elapsed().as_nanos()).unwrap_or(u64::MAX));
        for c in &self.counters {
            let mut reading = read_counter(&c.fd, c.group, &mut buf)?;
            if self.cgroup
                && let Some(window) = window
            {
                reading = cgroup_times_checked(reading, window);
            }
            out.push(CounterReading {
                event: c.event,
                cpu: c.cpu,
                reading,
            });
        }
        for (index, event) in self.events.iter().enumerate() {
            let value = match event.tool {
                None => continue,
                Some(name::ToolEvent::Duration) => Some(tools.duration_ns),
                Some(name::ToolEvent::User) => tools.user_ns,
                Some(name::ToolEvent::System) => tools.system_ns,
            };
            // perf reads a tool event as value = enabled = running, so a
            // zero time is `<not counted>`.
            let value = value.unwrap_or(0);
            out.push(CounterReading {
                event: index,
                // System-wide, perf reads tool events on the first CPU.
                cpu: self
                    .system_wide
                    .then(|| self.cpus.first().copied())
                    .flatten(),
                reading: Reading {
                    value,
                    enabled: value,
                    running: value,
                },
            });
        }
        Ok(out)
    }

    /// Stops every counter (the values stay readable).
    pub(crate) fn disable(&self) {
        for c in &self.counters {
            let _ = c.fd.disable();
        }
    }

    /// Waits up to `timeout` (forever if None) for the command or the
    /// watched processes to exit, or for a stop signal (through `stop`).
    /// The exits are this loop's own, as in the capture session's: the
    /// command is reaped for its status, `-p`'s processes are pidfds or
    /// looked for now and then, and stop when none is left.
    pub(crate) fn wait(
        &mut self,
        stop: &RunStop,
        timeout: Option<Duration>,
    ) -> Result<Wake, CaptureError> {
        if let Some(sig) = stop.caught() {
            return Ok(Wake::Signal(sig));
        }
        if let Some(child) = self.child.as_mut()
            && let Some(status) = child.try_wait().map_err(CaptureError::System)?
        {
            return Ok(Wake::TargetExited(Some(status)));
        }
        let mut set = Vec::new();
        if let Some(fd) = &self.child_pidfd {
            set.push(PollFd {
                fd: fd.as_raw_fd(),
                revents: 0,
            });
        }
        for fd in &self.watched {
            set.push(PollFd {
                fd: fd.as_raw_fd(),
                revents: 0,
            });
        }
        let timeout = if self.polled.is_empty() {
            timeout
        } else {
            Some(timeout.map_or(POLL_INTERVAL, |t| t.min(POLL_INTERVAL)))
        };
        let timeout_ms = match timeout {
            // Round up so we never wake a little early and spin.
            Some(d) => i32::try_from(d.as_micros().div_ceil(1000)).unwrap_or(i32::MAX),
            None => -1,
        };
        if let Some(Stopped::Signal(sig)) = stop
            .wait(&mut set, timeout_ms)
            .map_err(CaptureError::System)?
        {
            return Ok(Wake::Signal(sig));
        }
        if let Some(child) = self.child.as_mut() {
            if let Some(status) = child.try_wait().map_err(CaptureError::System)? {
                return Ok(Wake::TargetExited(Some(status)));
            }
        } else if !self.watched.is_empty() || !self.polled.is_empty() {
            // Forget processes that ended; stop when none is left.
            self.polled.retain(|&tid| proc::exists(tid));
            let ended: Vec<bool> = set
                .iter()
                .map(|p| p.revents & (signal::POLLIN | signal::POLLHUP | signal::POLLERR) != 0)
                .collect();
            let mut i = 0;
            self.watched.retain(|_| {
                let keep = !ended.get(i).copied().unwrap_or(false);
                i += 1;
                keep
            });
            if self.watched.is_empty() && self.polled.is_empty() {
                return Ok(Wake::TargetExited(None));
            }
        }
        Ok(Wake::Timeout)
    }

    /// Sends `sig` to the command we started (Ctrl-C reaches a terminal's
    /// whole process group anyway; a `kill` aimed at scry alone must too).
    pub(crate) fn signal_child(&self, sig: i32) {
        if let Some(child) = &self.child {
            let _ = signal::kill(child.pid, sig);
        }
    }

    /// Reaps the command we started, if any.
    pub(crate) fn wait_child(&mut self) -> Result<Option<ExitStatus>, CaptureError> {
        match self.child.as_mut() {
            Some(child) => child.wait().map(Some).map_err(CaptureError::System),
            None => Ok(None),
        }
    }
}

fn fork(command: &[OsString]) -> Result<PendingChild, CaptureError> {
    process::fork_pending(command).map_err(CaptureError::System)
}

fn open_error(event: &ResolvedEvent, pid: i32, err: io::Error) -> CaptureError {
    match err.raw_os_error().unwrap_or(0) {
        libc::EACCES | libc::EPERM => CaptureError::Permission {
            event: event.name.clone(),
            paranoid: pe::paranoid_level(),
        },
        libc::ESRCH => CaptureError::NoSuchProcess(pid),
        _ => CaptureError::Open {
            event: event.name.clone(),
            err: io::Error::new(err.kind(), errno_words(&err)),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn impossible_cgroup_times_become_the_window() {
        let ms = 1_000_000;
        let window = 300 * ms;
        let r = |value, enabled, running| Reading {
            value,
            enabled,
            running,
        };
        // Counted with no time: the window, unscaled.
        assert_eq!(
            cgroup_times_checked(r(290 * ms, 0, 0), window),
            r(290 * ms, window, window)
        );
        // Times near the uptime.
        assert_eq!(
            cgroup_times_checked(r(290 * ms, 21_000_000 * ms, 21_000_000 * ms), window),
            r(290 * ms, window, window)
        );
        // Sane times, multiplexed or not, and a cgroup that never ran, stay.
        for sane in [
            r(290 * ms, 300 * ms, 150 * ms),
            r(0, 300 * ms, 0),
            r(0, 0, 0),
        ] {
            assert_eq!(cgroup_times_checked(sane, window), sane);
        }
    }

    #[test]
    fn unsupported_errnos_are_perfs() {
        assert!(is_unsupported_errno(libc::EOPNOTSUPP));
        assert!(is_unsupported_errno(libc::ENOENT));
        assert!(!is_unsupported_errno(libc::EACCES));
        assert!(!is_unsupported_errno(libc::EMFILE));
    }

    #[test]
    fn errno_in_words() {
        let e = io::Error::from_raw_os_error(libc::EOPNOTSUPP);
        assert_eq!(errno_words(&e), "Operation not supported");
    }

    #[test]
    fn attr_reads_enabled_and_running() {
        let event =
            crate::event::name::resolve(&crate::event::name::parse_list("page-faults:u").unwrap())
                .unwrap()
                .remove(0);
        let attr = counting_attr(&event, true, true);
        assert_eq!(
            attr.read_format,
            pe::PERF_FORMAT_TOTAL_TIME_ENABLED | pe::PERF_FORMAT_TOTAL_TIME_RUNNING
        );
        assert_eq!(attr.inherit(), 1);
        assert_eq!(attr.enable_on_exec(), 1);
        assert_eq!(attr.exclude_kernel(), 1);
        assert_eq!(attr.sample_type, 0);
    }
}
