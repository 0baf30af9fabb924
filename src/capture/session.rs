//! A capture session: counters opened for a target, their rings, and the
//! loop that drains them until the target is gone or a signal arrives.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};

use crate::event::name::{ResolvedEvent, group_leader};
use crate::sys::perf_event::{self as pe, PerfEventFd, perf_event_attr};
use crate::sys::process::{Child, ExitStatus, PendingChild};
use crate::sys::ring::RingBuffer;
use crate::sys::signal::{self, PollFd, RunStop, Stopped};
use crate::sys::{proc, process};

use super::CaptureError;
use super::synth::{self, SampleIdLayout};

pub(crate) use super::options::{
    CallGraph, CaptureOptions, DEFAULT_FP_STACK_SIZE, DEFAULT_FREQ, Sampling, Target,
    WORKLOAD_PRE_EXEC_COMM, default_mmap_pages, fall_back_from_cycles,
};

/// One opened counter.
#[derive(Debug)]
struct Counter {
    fd: PerfEventFd,
    event: usize,
}

/// One ring buffer with the CPU it belongs to.
#[derive(Debug)]
struct Ring {
    cpu: u32,
    fd_index: usize,
    buffer: RingBuffer,
}

/// Counters, rings and the workload of one capture.
#[derive(Debug)]
pub(crate) struct Session {
    pub(crate) events: Vec<ResolvedEvent>,
    /// The attribute each event was opened with.
    pub(crate) attrs: Vec<perf_event_attr>,
    counters: Vec<Counter>,
    rings: Vec<Ring>,
    pending: Option<PendingChild>,
    child: Option<Child>,
    child_pidfd: Option<OwnedFd>,
    watched_pids: Vec<i32>,
    layout: SampleIdLayout,
    /// Lines for the user ("frequency lowered to ...").
    pub(crate) notes: Vec<String>,
    started_by_exec: bool,
    /// The workload is one of the recorded tasks (no -p/-t: it is the
    /// target; -a/-C: everything is). With -p/-t it only times the capture.
    workload_recorded: bool,
}

/// Where drained records go: raw kernel bytes, whole records, per ring.
pub(crate) trait RecordSink {
    /// A drain of every ring begins (live tracers note the time here).
    fn drain_starting(&mut self) -> io::Result<()> {
        Ok(())
    }
    /// `bytes` holds whole records from the ring of `cpu`.
    fn records(&mut self, cpu: u32, bytes: &[u8]) -> io::Result<()>;
    /// Every ring was drained once ("finished round").
    fn round_done(&mut self) -> io::Result<()>;
    /// How often `tick` wants to run (live views refresh on it). Default never.
    fn tick_interval(&self) -> Option<std::time::Duration> {
        None
    }
    /// Called about every `tick_interval`, after a drain. Return false to
    /// stop the capture (a live view's user quit).
    fn tick(&mut self) -> io::Result<bool> {
        Ok(true)
    }
}

/// Why the capture stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StopReason {
    /// The workload (or every watched process) exited.
    TargetExited(Option<ExitStatus>),
    /// SIGINT or SIGTERM.
    Signal(i32),
    /// The sink asked to stop (a live view's user quit).
    Quit,
}

fn build_attr(event: &ResolvedEvent, opts: &CaptureOptions, index: usize) -> perf_event_attr {
    let tracking = index == 0;
    let mut attr = pe::new_attr();
    event.select_in(&mut attr);
    let mut sample_type = pe::PERF_SAMPLE_IDENTIFIER
        | pe::PERF_SAMPLE_IP
        | pe::PERF_SAMPLE_TID
        | pe::PERF_SAMPLE_TIME
        | pe::PERF_SAMPLE_CPU
        | pe::PERF_SAMPLE_PERIOD;
    if event.is_tracepoint() {
        sample_type |= pe::PERF_SAMPLE_RAW;
    }
    let call_graph = if opts.no_callchain.contains(&index) {
        CallGraph::None
    } else {
        opts.call_graph
    };
    match call_graph {
        CallGraph::None => {}
        CallGraph::FramePointer => sample_type |= pe::PERF_SAMPLE_CALLCHAIN,
        CallGraph::FramePointerStack { stack_size } => {
            sample_type |=
                pe::PERF_SAMPLE_CALLCHAIN | pe::PERF_SAMPLE_REGS_USER | pe::PERF_SAMPLE_STACK_USER;
            // The three registers an x86_64 unwinder starts from: 24 bytes
            // a sample, not the full set's 136.
            attr.sample_regs_user = pe::PERF_REGS_MASK_IP_SP_BP;
            attr.sample_stack_user = stack_size;
        }
        CallGraph::Dwarf { stack_size } => {
            sample_type |=
                pe::PERF_SAMPLE_CALLCHAIN | pe::PERF_SAMPLE_REGS_USER | pe::PERF_SAMPLE_STACK_USER;
            attr.sample_regs_user = pe::PERF_REGS_MASK_X86_64;
            attr.sample_stack_user = stack_size;
            attr.set_exclude_callchain_user(1);
            // Unwinders need the read-only segments too (.eh_frame lives
            // outside the executable one), and the stack's mapping.
            if tracking {
                attr.set_mmap_data(1);
            }
        }
    }
    attr.sample_type = sample_type;
    attr.read_format = pe::PERF_FORMAT_ID;
    let sampling = match opts.sampling {
        // A PMU event's `period=` term wins over -c/-F, as in perf.
        _ if event.period.is_some() => Sampling::Period(event.period.unwrap_or(1)),
        Some(s) => s,
        // Tracepoints and probes: every hit, as perf records them.
        None if event.is_tracepoint() || event.uprobe.is_some() => Sampling::Period(1),
        None => Sampling::Frequency(DEFAULT_FREQ),
    };
    match sampling {
        Sampling::Frequency(hz) => {
            attr.set_freq(1);
            attr.__bindgen_anon_1.sample_freq = hz;
        }
        Sampling::Period(n) => attr.__bindgen_anon_1.sample_period = n.max(1),
    }
    attr.set_disabled(1);
    attr.set_exclude_user(u64::from(event.modifiers.exclude_user));
    attr.set_exclude_kernel(u64::from(event.modifiers.exclude_kernel));
    attr.set_precise_ip(u64::from(event.modifiers.precise_ip));
    attr.set_sample_id_all(1);
    if let Some(clockid) = opts.clockid {
        attr.set_use_clockid(1);
        attr.clockid = clockid;
    }
    if tracking {
        attr.set_mmap(1);
        attr.set_mmap2(1);
        attr.set_comm(1);
        attr.set_comm_exec(1);
        attr.set_task(1);
        attr.set_context_switch(u64::from(opts.context_switch));
        // BPF programs loaded or unloaded while recording (JIT'd code has
        // no map): KSYMBOL names the code, BPF_EVENT the program, as perf.
        attr.set_ksymbol(1);
        attr.set_bpf_event(1);
    }
    // Wake the reader when a quarter of the ring is full, not per record.
    attr.set_watermark(1);
    attr.__bindgen_anon_2.wakeup_watermark =
        ((opts.mmap_pages * crate::sys::ring::page_size()) / 4) as u32;
    attr
}

fn open_error(event: &ResolvedEvent, pid: i32, err: io::Error) -> CaptureError {
    let code = err.raw_os_error().unwrap_or(0);
    match code {
        libc::EACCES | libc::EPERM => CaptureError::Permission {
            event: event.name.clone(),
            paranoid: pe::paranoid_level(),
        },
        libc::ESRCH => CaptureError::NoSuchProcess(pid),
        libc::ENOENT | libc::EOPNOTSUPP | libc::ENODEV
            if event.type_ == pe::PERF_TYPE_HARDWARE
                || event.type_ == pe::PERF_TYPE_HW_CACHE
                || event.type_ == pe::PERF_TYPE_RAW =>
        {
            CaptureError::NotSupported {
                event: event.name.clone(),
            }
        }
        _ => CaptureError::Open {
            event: event.name.clone(),
            err,
        },
    }
}

/// System-wide, scry's own threads are left out of the tracepoints and
/// probes it records, in the kernel (`common_pid != TID` in each filter):
/// else every allocation, write or poll of scry's drains is an event in
/// the rings it drains (`-e probe_libc:malloc -a` was 99.8% scry). Not the
/// `sched` events: a switch-out of scry is the switch-in of another task,
/// a wakeup by scry another task's wakeup, and those must stay (as perf
/// records them). Threads scry starts after the counters open are not
/// covered; a capture starts none.
fn exclude_self(events: &[ResolvedEvent], filters: &mut Vec<(usize, String)>) {
    let Ok(tids) = proc::threads(std::process::id() as i32) else {
        return;
    };
    let mine = tids
        .iter()
        .map(|tid| format!("common_pid != {tid}"))
        .collect::<Vec<_>>()
        .join(" && ");
    for (index, event) in events.iter().enumerate() {
        let tracing = event.uprobe.is_some()
            || event
                .tracepoint
                .as_ref()
                .is_some_and(|(system, _)| system != "sched");
        if !tracing || mine.is_empty() {
            continue;
        }
        match filters.iter_mut().find(|(i, _)| *i == index) {
            Some((_, filter)) => *filter = format!("({filter}) && ({mine})"),
            None => filters.push((index, mine.clone())),
        }
    }
}

/// Counters to open as given: one attribute per event, opened on every CPU
/// (and thread) of the target, the counters of a CPU sharing one ring.
/// `Session::open` makes one from `CaptureOptions`; `scry trace` makes its
/// own (per-event sample types, `capture::trace`). Either way the counters
/// are opened in one place, `Session::open_plan`.
#[derive(Clone, Debug)]
pub(crate) struct CounterPlan {
    pub(crate) events: Vec<ResolvedEvent>,
    /// One per event. `inherit` and `enable_on_exec` are set from the target.
    pub(crate) attrs: Vec<perf_event_attr>,
    /// Tracepoint filter per event index.
    pub(crate) filters: Vec<(usize, String)>,
    pub(crate) target: Target,
    /// Data pages per ring (a power of two).
    pub(crate) mmap_pages: usize,
}

impl Session {
    /// Open every counter and ring. A `-- COMMAND` is forked but not yet
    /// exec'd: `start` lets it run.
    pub(crate) fn open(opts: &CaptureOptions) -> Result<Session, CaptureError> {
        if opts.events.is_empty() {
            return Err(CaptureError::NoEvents);
        }
        let mut notes = Vec::new();
        let mut opts = opts.clone();
        if let (Some(Sampling::Frequency(hz)), Some(max)) = (opts.sampling, pe::max_sample_rate())
            && hz > max
        {
            notes.push(format!(
                "frequency {hz} Hz is above kernel.perf_event_max_sample_rate; using {max} Hz"
            ));
            opts.sampling = Some(Sampling::Frequency(max));
        }
        let attrs = opts
            .events
            .iter()
            .enumerate()
            .map(|(i, e)| build_attr(e, &opts, i))
            .collect();
        let mut session = Self::open_plan(CounterPlan {
            events: opts.events,
            attrs,
            filters: opts.filters,
            target: opts.target,
            mmap_pages: opts.mmap_pages,
        })?;
        notes.append(&mut session.notes);
        session.notes = notes;
        Ok(session)
    }

    /// Opens the counters of `plan` for its target.
    pub(crate) fn open_plan(mut plan: CounterPlan) -> Result<Session, CaptureError> {
        if plan.events.is_empty() || plan.attrs.len() != plan.events.len() {
            return Err(CaptureError::NoEvents);
        }
        process::raise_fd_limit();
        let system_wide = plan.target.system_wide || plan.target.cpus.is_some();
        if system_wide {
            exclude_self(&plan.events, &mut plan.filters);
        }
        let target = &plan.target;
        let mut notes = Vec::new();
        if plan.mmap_pages == 0 || !plan.mmap_pages.is_power_of_two() {
            return Err(CaptureError::BadMmapPages(plan.mmap_pages));
        }

        let cpus = target.online_cpus()?;

        // (pid, tid) list for per-task counting.
        let mut tasks: Vec<i32> = Vec::new();
        let mut watched_pids = Vec::new();
        if !system_wide {
            for &pid in &target.pids {
                let threads = proc::threads(pid).map_err(|_| CaptureError::NoSuchProcess(pid))?;
                tasks.extend(threads);
                watched_pids.push(pid);
            }
            for &tid in &target.tids {
                if !proc::exists(tid) {
                    return Err(CaptureError::NoSuchProcess(tid));
                }
                tasks.push(tid);
                watched_pids.push(tid);
            }
        }
        // perf's rule: with -p/-t/-a/-C the command only sets the duration.
        // It runs unrecorded (system-wide, it is recorded with the rest).
        let workload_recorded = !system_wide && watched_pids.is_empty();
        let mut pending = None;
        if !target.command.is_empty() {
            let child = process::fork_pending(&target.command).map_err(CaptureError::System)?;
            if workload_recorded {
                tasks.push(child.pid());
            }
            pending = Some(child);
        }
        let enable_on_exec = pending.is_some() && workload_recorded;
        let task_list: Vec<i32> = if system_wide { vec![-1] } else { tasks };

        let result = Self::open_counters(&plan, &cpus, &task_list, enable_on_exec, &mut notes);
        let (attrs, counters, rings) = match result {
            Ok(v) => v,
            Err(e) => {
                if let Some(child) = pending {
                    child.abort();
                }
                return Err(e);
            }
        };
        let first_id = counters
            .first()
            .map(|c| c.fd.id())
            .transpose()
            .map_err(CaptureError::System)?;
        let layout = SampleIdLayout {
            sample_type: attrs[0].sample_type,
            id: first_id.unwrap_or(0),
        };
        Ok(Session {
            events: plan.events,
            attrs,
            counters,
            rings,
            pending,
            child: None,
            child_pidfd: None,
            watched_pids,
            layout,
            notes,
            started_by_exec: enable_on_exec,
            workload_recorded: workload_recorded || system_wide,
        })
    }

    #[allow(clippy::type_complexity)]
    fn open_counters(
        plan: &CounterPlan,
        cpus: &[u32],
        tasks: &[i32],
        enable_on_exec: bool,
        notes: &mut Vec<String>,
    ) -> Result<(Vec<perf_event_attr>, Vec<Counter>, Vec<Ring>), CaptureError> {
        let target = &plan.target;
        let per_task = !target.system_wide && target.cpus.is_none();
        let mut attrs = plan.attrs.clone();
        // A group's members follow their leader (perf record opens them
        // the same way): enabled from the start, never on exec themselves.
        let leaders: Vec<Option<usize>> = (0..plan.events.len())
            .map(|i| group_leader(&plan.events, i))
            .collect();
        for (attr, leader) in attrs.iter_mut().zip(&leaders) {
            attr.set_inherit(u64::from(per_task && target.tids.is_empty()));
            attr.set_enable_on_exec(u64::from(enable_on_exec && leader.is_none()));
            if leader.is_some() {
                attr.set_disabled(0);
            }
        }
        let mut counters: Vec<Counter> = Vec::new();
        let mut rings: Vec<Ring> = Vec::new();
        let mut pages = plan.mmap_pages;
        for &cpu in cpus {
            let mut ring_owner: Option<usize> = None;
            for &task in tasks {
                // This CPU and task's counter of each event, for members to join.
                let mut opened_here: Vec<Option<usize>> = vec![None; plan.events.len()];
                for (event_index, event) in plan.events.iter().enumerate() {
                    let leader = match leaders[event_index] {
                        Some(l) => match opened_here[l] {
                            Some(c) => Some(&counters[c].fd),
                            // The leader's thread ended: so did the member's.
                            None => continue,
                        },
                        None => None,
                    };
                    let open = |attr: &perf_event_attr| {
                        super::open_counter(event, attr, task, cpu as i32, leader)
                    };
                    let mut opened = open(&attrs[event_index]);
                    if let Err(e) = &opened
                        && matches!(e.raw_os_error(), Some(libc::EACCES | libc::EPERM))
                        && attrs[event_index].exclude_kernel() == 0
                        && !event.modifiers.exclude_user
                        && pe::paranoid_level().is_some_and(|p| p >= 2)
                    {
                        // As perf does: an unprivileged user at paranoid 2
                        // may still sample user space.
                        attrs[event_index].set_exclude_kernel(1);
                        attrs[event_index].set_exclude_hv(1);
                        notes.push(format!(
                            "kernel.perf_event_paranoid={} hides the kernel from unprivileged users: \
                             recording '{}' in user space only (run as root or grant CAP_PERFMON for kernel samples)",
                            pe::paranoid_level().unwrap_or(2),
                            event.name
                        ));
                        opened = open(&attrs[event_index]);
                    }
                    let fd = match opened {
                        Ok(fd) => fd,
                        // A thread of a -p target that exited meanwhile.
                        Err(e)
                            if e.raw_os_error() == Some(libc::ESRCH) && !target.pids.is_empty() =>
                        {
                            continue;
                        }
                        Err(e) => return Err(open_error(event, task, e)),
                    };
                    if let Some((_, filter)) = plan.filters.iter().find(|(i, _)| *i == event_index)
                    {
                        fd.set_filter(filter).map_err(|err| CaptureError::Filter {
                            event: event.name.clone(),
                            filter: filter.clone(),
                            // The ioctl says only EINVAL; tracefs's error_log says why.
                            err: crate::sys::tracefs_instance::explain_filter_error(
                                event.tracepoint.as_ref(),
                                filter,
                                err,
                            ),
                        })?;
                    }
                    match ring_owner {
                        Some(owner) => fd
                            .set_output(&counters[owner].fd)
                            .map_err(CaptureError::System)?,
                        None => {
                            let buffer = loop {
                                match RingBuffer::map(fd.raw_fd(), pages) {
                                    Ok(b) => break b,
                                    // Over the unprivileged mlock budget: halve.
                                    Err(e)
                                        if e.raw_os_error() == Some(libc::EPERM) && pages > 1 =>
                                    {
                                        pages /= 2
                                    }
                                    Err(e) => return Err(CaptureError::Mmap(e)),
                                }
                            };
                            ring_owner = Some(counters.len());
                            rings.push(Ring {
                                cpu,
                                fd_index: counters.len(),
                                buffer,
                            });
                        }
                    }
                    opened_here[event_index] = Some(counters.len());
                    counters.push(Counter {
                        fd,
                        event: event_index,
                    });
                }
            }
        }
        if counters.is_empty() {
            return Err(CaptureError::NothingToWatch);
        }
        Ok((attrs, counters, rings))
    }

    /// Sample ids of each event's counters, in event order.
    pub(crate) fn ids(&self) -> io::Result<Vec<Vec<u64>>> {
        let mut ids = vec![Vec::new(); self.events.len()];
        for c in &self.counters {
            ids[c.event].push(c.fd.id()?);
        }
        Ok(ids)
    }

    /// Each ring's CPU and the counter it is mapped from: other counters
    /// of that CPU can send their records there (`set_output`).
    pub(crate) fn ring_counters(&self) -> impl Iterator<Item = (u32, &PerfEventFd)> {
        self.rings
            .iter()
            .map(|r| (r.cpu, &self.counters[r.fd_index].fd))
    }

    /// The pid of the workload, once forked.
    pub(crate) fn workload_pid(&self) -> Option<i32> {
        self.pending
            .as_ref()
            .map(|p| p.pid())
            .or(self.child.as_ref().map(|c| c.pid))
    }

    /// Records describing what existed before the counters: the kernel map
    /// always, and every watched (or, system-wide, every) process.
    pub(crate) fn synthesize(&self, system_wide: bool, out: &mut Vec<u8>) {
        // The processes first: they may exit while kallsyms is read (~90 ms
        // of kernel time, far more when the targets keep every CPU busy);
        // the kernel map still goes first in `out`.
        let mut processes = Vec::new();
        if system_wide {
            for pid in proc::pids().unwrap_or_default() {
                synth::process(&self.layout, pid, &mut processes);
            }
        } else {
            for &pid in &self.watched_pids {
                let pid = proc::tgid(pid).unwrap_or(pid);
                synth::process(&self.layout, pid, &mut processes);
            }
        }
        synth::kernel_mmap(&self.layout, out);
        synth::bpf_programs(&self.layout, out);
        out.extend_from_slice(&processes);
        if let Some(pid) = self.workload_pid().filter(|_| self.workload_recorded)
            && let Some(first) = self.workload_comm()
        {
            synth::comm(&self.layout, pid, pid, &first, out);
        }
    }

    fn workload_comm(&self) -> Option<String> {
        // The comm the child has before exec: perf names it after itself
        // ("perf-exec"); we do the same, the exec's COMM record follows.
        self.pending
            .as_ref()
            .map(|_| WORKLOAD_PRE_EXEC_COMM.to_string())
    }

    /// Enable the counters and let the workload exec.
    pub(crate) fn start(&mut self) -> Result<(), CaptureError> {
        if !self.started_by_exec {
            for c in &self.counters {
                c.fd.enable().map_err(CaptureError::System)?;
            }
        }
        if let Some(pending) = self.pending.take() {
            let pid = pending.pid();
            let pidfd = signal::pidfd_open(pid).ok();
            match pending.start() {
                Ok(child) => {
                    self.child = Some(child);
                    self.child_pidfd = pidfd;
                }
                Err((program, err)) => return Err(CaptureError::CannotRun { program, err }),
            }
        }
        Ok(())
    }

    fn drain(&mut self, sink: &mut dyn RecordSink, buf: &mut Vec<u8>) -> io::Result<usize> {
        sink.drain_starting()?;
        let mut total = 0;
        for ring in &mut self.rings {
            buf.clear();
            let n = ring.buffer.read_into(buf);
            if n > 0 {
                sink.records(ring.cpu, buf)?;
                total += n;
            }
        }
        if total > 0 {
            sink.round_done()?;
        }
        Ok(total)
    }

    fn targets_gone(&self) -> bool {
        !self.watched_pids.is_empty() && self.watched_pids.iter().all(|&p| !proc::exists(p))
    }

    /// Drain rings into `sink` until the workload exits, every watched
    /// process is gone, or a stop signal arrives (caught by `stop`).
    /// Then disable the counters, drain what is left, and reap the workload
    /// (sending it SIGTERM first if it still runs).
    ///
    /// Unlike the BPF tools' loop, the workload's exit is this loop's own
    /// (the session forked it and reaps it, keeping its status; `-p`'s
    /// processes are looked for now and then): `stop` gives the signals
    /// only, and none of this loop's callers sets it a duration.
    pub(crate) fn run(
        &mut self,
        sink: &mut dyn RecordSink,
        stop: &RunStop,
    ) -> Result<StopReason, CaptureError> {
        let mut buf = Vec::with_capacity(self.rings.first().map_or(0, |r| r.buffer.data_size()));
        let mut poll_set: Vec<PollFd> = self
            .rings
            .iter()
            .map(|r| PollFd {
                fd: self.counters[r.fd_index].fd.raw_fd(),
                revents: 0,
            })
            .collect();
        let pidfd_slot = self.child_pidfd.as_ref().map(|fd| {
            poll_set.push(PollFd {
                fd: fd.as_raw_fd(),
                revents: 0,
            });
            poll_set.len() - 1
        });
        // Without a pidfd (or with -p), look at the targets now and then.
        let mut timeout =
            if self.child.is_some() && pidfd_slot.is_some() && self.watched_pids.is_empty() {
                -1
            } else {
                200
            };
        let tick = sink.tick_interval();
        if let Some(tick) = tick {
            let ms = tick.as_millis().clamp(1, i32::MAX as u128) as i32;
            timeout = if timeout < 0 { ms } else { timeout.min(ms) };
        }
        let mut last_tick = std::time::Instant::now();
        let reason = loop {
            let stopped = stop
                .wait(&mut poll_set, timeout)
                .map_err(CaptureError::System)?;
            self.drain(sink, &mut buf).map_err(CaptureError::Write)?;
            if let Some(Stopped::Signal(sig)) = stopped {
                break StopReason::Signal(sig);
            }
            if let Some(child) = &mut self.child
                && let Some(status) = child.try_wait().map_err(CaptureError::System)?
            {
                break StopReason::TargetExited(Some(status));
            }
            if self.targets_gone() {
                break StopReason::TargetExited(None);
            }
            if let Some(tick) = tick
                && last_tick.elapsed() >= tick
            {
                last_tick = std::time::Instant::now();
                if !sink.tick().map_err(CaptureError::Write)? {
                    break StopReason::Quit;
                }
            }
        };
        for c in &self.counters {
            let _ = c.fd.disable();
        }
        self.drain(sink, &mut buf).map_err(CaptureError::Write)?;
        let mut stopped_workload = false;
        if let Some(child) = &mut self.child
            && child.try_wait().ok().flatten().is_none()
        {
            let _ = signal::kill(child.pid, libc::SIGTERM);
            let _ = child.wait();
            stopped_workload = true;
        }
        // The watched processes ended first: the workload we stopped only
        // timed the capture, its SIGTERM is not its failure.
        let reason = match (reason, self.child.as_mut()) {
            (StopReason::TargetExited(None), Some(child)) if !stopped_workload => {
                StopReason::TargetExited(child.wait().ok())
            }
            (reason, _) => reason,
        };
        Ok(reason)
    }
}
