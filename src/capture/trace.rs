//! The live tracer behind `scry trace`: counters for tracepoints and
//! uprobes on a target, their per-CPU rings, the loop that drains them,
//! and the parse of what comes out into `TraceRecord`s for a `TraceSink`.
//!
//! Why not `Session`: a syscall tracer needs per-event attributes that a
//! sampling session does not. The entries of system calls that take a path
//! copy the caller's stack with the sample (`PERF_SAMPLE_STACK_USER` plus
//! the stack pointer) so that a path on the stack, as argv strings and
//! local buffers are, is read from the sample itself, without racing the
//! process (which may have exited by the time we read its memory); other
//! strings are read with process_vm_readv as soon as the record is parsed.
//! Uprobes come from the uprobe PMU (`config1`/`config2`), so a probe made
//! for one run dies with its file descriptors, even after SIGKILL.
//!
//! Ordering: per-CPU rings are not ordered between each other. Counters
//! use CLOCK_MONOTONIC (`use_clockid`), the loop notes the clock before
//! each drain, and `round_done` passes that time: every record older than
//! it has been drained, so a sink may release (sorted) what precedes it.
//!
//! Invariant: parsing never panics on ring bytes; a malformed record is
//! counted and skipped.

use std::collections::HashMap;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::PathBuf;

use crate::sys::perf_event::{self as pe, PerfEventFd, perf_event_attr};
use crate::sys::process::{Child, PendingChild};
use crate::sys::ring::RingBuffer;
use crate::sys::signal::{self, PollFd, SignalPipe};
use crate::sys::uprobe::UprobePmu;
use crate::sys::{proc, process};

use super::CaptureError;
use super::session::{StopReason, Target};

/// What one event counts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TraceSource {
    /// A tracepoint id (`events/<sys>/<name>/id`).
    Tracepoint { id: u64 },
    /// A uprobe through the PMU: removed when scry's descriptors close.
    Uprobe {
        path: PathBuf,
        file_offset: u64,
        retprobe: bool,
    },
}

/// One event to open on every CPU (and thread) of the target.
#[derive(Clone, Debug)]
pub struct TraceEvent {
    /// As printed (`raw_syscalls:sys_enter`, `probe_libc:malloc`).
    pub name: String,
    pub source: TraceSource,
    /// A tracepoint filter (ftrace syntax), set with the SET_FILTER ioctl.
    pub filter: Option<String>,
    /// `PERF_SAMPLE_REGS_USER` mask (x86 perf register bits); 0 for none.
    pub regs_user: u64,
    /// Bytes of user stack copied with each sample; 0 for none.
    pub stack_user: u32,
}

/// x86 perf register numbers (arch/x86/include/uapi/asm/perf_regs.h).
pub mod regs {
    pub const AX: u32 = 0;
    pub const CX: u32 = 2;
    pub const DX: u32 = 3;
    pub const SI: u32 = 4;
    pub const DI: u32 = 5;
    pub const SP: u32 = 7;
    pub const IP: u32 = 8;
    pub const R8: u32 = 16;
    pub const R9: u32 = 17;
    /// The integer argument registers of the System V ABI, in order.
    pub const ARGS: [u32; 6] = [DI, SI, DX, CX, R8, R9];
}

/// One parsed record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TraceRecord<'a> {
    Sample(TraceSample<'a>),
    /// A thread's name (set at exec when `exec`).
    Comm {
        pid: i32,
        tid: i32,
        comm: String,
        exec: bool,
    },
    Exit {
        pid: i32,
        tid: i32,
        time: u64,
    },
    /// The kernel dropped `count` records of the ring of `cpu`.
    Lost {
        cpu: u32,
        count: u64,
    },
}

/// A sample, borrowing from the drained bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceSample<'a> {
    /// Index into the events given to `TraceCapture::open`.
    pub event: usize,
    pub pid: i32,
    pub tid: i32,
    /// CLOCK_MONOTONIC nanoseconds.
    pub time: u64,
    pub cpu: u32,
    /// The tracepoint record (`common_type` first); empty for uprobes.
    pub raw: &'a [u8],
    /// Sampled user registers, in ascending register-number order.
    pub regs: Vec<u64>,
    /// The copied user stack, starting at the sampled stack pointer.
    pub stack: &'a [u8],
}

/// Where parsed records go.
pub trait TraceSink {
    fn record(&mut self, record: TraceRecord<'_>) -> io::Result<()>;
    /// Every ring was drained; all records with `time < drained_before`
    /// have been delivered.
    fn round_done(&mut self, drained_before: u64) -> io::Result<()>;
}

#[derive(Debug)]
struct Ring {
    owner: usize,
    cpu: u32,
    buffer: RingBuffer,
}

/// Counters, rings and the workload of one trace.
#[derive(Debug)]
pub struct TraceCapture {
    events: Vec<TraceEvent>,
    attrs: Vec<perf_event_attr>,
    counters: Vec<PerfEventFd>,
    rings: Vec<Ring>,
    ids: HashMap<u64, usize>,
    pending: Option<PendingChild>,
    child: Option<Child>,
    child_pidfd: Option<OwnedFd>,
    watched_pids: Vec<i32>,
    started_by_exec: bool,
    /// Records that did not parse.
    pub malformed: u64,
}

const SAMPLE_BASE: u64 =
    pe::PERF_SAMPLE_IDENTIFIER | pe::PERF_SAMPLE_TID | pe::PERF_SAMPLE_TIME | pe::PERF_SAMPLE_CPU;

fn build_attr(
    event: &TraceEvent,
    first: bool,
    inherit: bool,
    enable_on_exec: bool,
    ring_bytes: usize,
) -> perf_event_attr {
    let mut attr = pe::new_attr();
    let mut sample_type = SAMPLE_BASE;
    if let TraceSource::Tracepoint { id } = event.source {
        attr.type_ = pe::PERF_TYPE_TRACEPOINT;
        attr.config = id;
        sample_type |= pe::PERF_SAMPLE_RAW;
    }
    if event.regs_user != 0 {
        sample_type |= pe::PERF_SAMPLE_REGS_USER;
        attr.sample_regs_user = event.regs_user;
    }
    if event.stack_user != 0 {
        sample_type |= pe::PERF_SAMPLE_STACK_USER;
        attr.sample_stack_user = event.stack_user;
    }
    attr.sample_type = sample_type;
    attr.__bindgen_anon_1.sample_period = 1;
    attr.set_disabled(1);
    attr.set_inherit(u64::from(inherit));
    attr.set_enable_on_exec(u64::from(enable_on_exec));
    attr.set_sample_id_all(1);
    attr.set_use_clockid(1);
    attr.clockid = libc::CLOCK_MONOTONIC;
    if first {
        attr.set_comm(1);
        attr.set_comm_exec(1);
        attr.set_task(1);
    }
    if event.stack_user != 0 {
        // Entries that carry strings wake the reader at once: a string
        // outside the stack copy is read from the live process, the sooner
        // the likelier it still exists. (Where the kernel's irq_work waits
        // for the next tick, as in VMs without self-IPIs, the wake-up comes
        // up to a tick later: a process that lives ~1 ms is then gone.)
        attr.__bindgen_anon_2.wakeup_events = 1;
    } else {
        attr.set_watermark(1);
        attr.__bindgen_anon_2.wakeup_watermark = (ring_bytes / 4) as u32;
    }
    attr
}

impl TraceCapture {
    /// Opens every event on every CPU for the target. A `-- COMMAND` is
    /// forked but waits for `start` to exec.
    pub fn open(
        events: Vec<TraceEvent>,
        target: &Target,
        mmap_pages: usize,
    ) -> Result<TraceCapture, CaptureError> {
        if events.is_empty() {
            return Err(CaptureError::NoEvents);
        }
        if mmap_pages == 0 || !mmap_pages.is_power_of_two() {
            return Err(CaptureError::BadMmapPages(mmap_pages));
        }
        process::raise_fd_limit();
        let pmu = if events
            .iter()
            .any(|e| matches!(e.source, TraceSource::Uprobe { .. }))
        {
            Some(UprobePmu::detect().map_err(|err| CaptureError::Open {
                event: "uprobe (/sys/bus/event_source/devices/uprobe)".into(),
                err,
            })?)
        } else {
            None
        };
        let system_wide = target.system_wide || target.cpus.is_some();
        let online = proc::online_cpus().map_err(CaptureError::System)?;
        let cpus = match &target.cpus {
            Some(list) => {
                if let Some(bad) = list.iter().find(|c| !online.contains(c)) {
                    return Err(CaptureError::NoSuchCpu(*bad));
                }
                list.clone()
            }
            None => online,
        };
        let mut tasks = Vec::new();
        let mut watched_pids = Vec::new();
        let mut pending = None;
        if !target.command.is_empty() {
            let child = process::fork_pending(&target.command).map_err(CaptureError::System)?;
            if !system_wide {
                tasks.push(child.pid());
            }
            pending = Some(child);
        }
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
        let enable_on_exec = pending.is_some() && !system_wide;
        let inherit = !system_wide && target.tids.is_empty();
        let tasks = if system_wide { vec![-1] } else { tasks };
        let ring_bytes = mmap_pages * crate::sys::ring::page_size();
        let attrs: Vec<perf_event_attr> = events
            .iter()
            .enumerate()
            .map(|(i, e)| build_attr(e, i == 0, inherit, enable_on_exec, ring_bytes))
            .collect();
        let mut capture = TraceCapture {
            events,
            attrs,
            counters: Vec::new(),
            rings: Vec::new(),
            ids: HashMap::new(),
            pending,
            child: None,
            child_pidfd: None,
            watched_pids,
            started_by_exec: enable_on_exec,
            malformed: 0,
        };
        if let Err(e) = capture.open_counters(pmu, &cpus, &tasks, mmap_pages, target) {
            if let Some(child) = capture.pending.take() {
                child.abort();
            }
            return Err(e);
        }
        Ok(capture)
    }

    fn open_counters(
        &mut self,
        pmu: Option<UprobePmu>,
        cpus: &[u32],
        tasks: &[i32],
        mmap_pages: usize,
        target: &Target,
    ) -> Result<(), CaptureError> {
        for &cpu in cpus {
            let mut owner: Option<usize> = None;
            for &task in tasks {
                for (index, event) in self.events.iter().enumerate() {
                    let attr = &self.attrs[index];
                    let opened = match (&event.source, pmu) {
                        (
                            TraceSource::Uprobe {
                                path,
                                file_offset,
                                retprobe,
                            },
                            Some(pmu),
                        ) => pmu.open(attr, path, *file_offset, *retprobe, task, cpu as i32),
                        _ => PerfEventFd::open(attr, task, cpu as i32),
                    };
                    let fd = match opened {
                        Ok(fd) => fd,
                        Err(e)
                            if e.raw_os_error() == Some(libc::ESRCH) && !target.pids.is_empty() =>
                        {
                            continue;
                        }
                        Err(err) => return Err(open_error(&event.name, task, err)),
                    };
                    if let Some(filter) = &event.filter {
                        fd.set_filter(filter).map_err(|err| CaptureError::Filter {
                            event: event.name.clone(),
                            filter: filter.clone(),
                            err,
                        })?;
                    }
                    self.ids
                        .insert(fd.id().map_err(CaptureError::System)?, index);
                    match owner {
                        Some(o) => fd
                            .set_output(&self.counters[o])
                            .map_err(CaptureError::System)?,
                        None => {
                            let buffer = RingBuffer::map(fd.raw_fd(), mmap_pages)
                                .map_err(CaptureError::Mmap)?;
                            owner = Some(self.counters.len());
                            self.rings.push(Ring {
                                owner: self.counters.len(),
                                cpu,
                                buffer,
                            });
                        }
                    }
                    self.counters.push(fd);
                }
            }
        }
        if self.counters.is_empty() {
            return Err(CaptureError::NothingToWatch);
        }
        Ok(())
    }

    /// The pid of the workload, once forked.
    pub fn workload_pid(&self) -> Option<i32> {
        self.pending
            .as_ref()
            .map(|p| p.pid())
            .or(self.child.as_ref().map(|c| c.pid))
    }

    /// Enables the counters and lets the workload exec.
    pub fn start(&mut self) -> Result<(), CaptureError> {
        if !self.started_by_exec {
            for c in &self.counters {
                c.enable().map_err(CaptureError::System)?;
            }
        }
        if let Some(pending) = self.pending.take() {
            let pidfd = signal::pidfd_open(pending.pid()).ok();
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

    fn drain(&mut self, sink: &mut dyn TraceSink, buf: &mut Vec<u8>) -> io::Result<()> {
        let before = crate::sys::uprobe::monotonic_ns();
        for i in 0..self.rings.len() {
            buf.clear();
            if self.rings[i].buffer.read_into(buf) > 0 {
                let cpu = self.rings[i].cpu;
                self.parse(buf, cpu, sink)?;
            }
        }
        sink.round_done(before)
    }

    /// Drains into `sink` until the workload exits, every watched process
    /// is gone, or SIGINT/SIGTERM arrives; then drains what is left and
    /// reaps the workload (SIGTERM first if it still runs).
    pub fn run(
        &mut self,
        sink: &mut dyn TraceSink,
        signals: &SignalPipe,
    ) -> Result<StopReason, CaptureError> {
        let mut buf = Vec::new();
        let mut poll_set: Vec<PollFd> = self
            .rings
            .iter()
            .map(|r| PollFd {
                fd: self.counters[r.owner].raw_fd(),
                revents: 0,
            })
            .collect();
        poll_set.push(PollFd {
            fd: signals.fd(),
            revents: 0,
        });
        if let Some(fd) = &self.child_pidfd {
            poll_set.push(PollFd {
                fd: fd.as_raw_fd(),
                revents: 0,
            });
        }
        // Live output: drain at least every 100 ms.
        let reason = loop {
            signal::poll(&mut poll_set, 100).map_err(CaptureError::System)?;
            self.drain(sink, &mut buf).map_err(CaptureError::Write)?;
            if let Some(sig) = signals.received() {
                signals.drain();
                break StopReason::Signal(sig);
            }
            if let Some(child) = &mut self.child
                && let Some(status) = child.try_wait().map_err(CaptureError::System)?
            {
                break StopReason::TargetExited(Some(status));
            }
            if !self.watched_pids.is_empty() && self.watched_pids.iter().all(|&p| !proc::exists(p))
            {
                break StopReason::TargetExited(None);
            }
        };
        for c in &self.counters {
            let _ = c.disable();
        }
        self.drain(sink, &mut buf).map_err(CaptureError::Write)?;
        if let Some(child) = &mut self.child
            && child.try_wait().ok().flatten().is_none()
        {
            let _ = signal::kill(child.pid, libc::SIGTERM);
            let _ = child.wait();
        }
        Ok(reason)
    }

    fn parse(&mut self, bytes: &[u8], cpu: u32, sink: &mut dyn TraceSink) -> io::Result<()> {
        let mut at = 0usize;
        while let Some(header) = bytes.get(at..at + 8) {
            let kind = u32::from_ne_bytes([header[0], header[1], header[2], header[3]]);
            let misc = u16::from_ne_bytes([header[4], header[5]]);
            let size = u16::from_ne_bytes([header[6], header[7]]) as usize;
            let Some(body) = (size >= 8).then(|| bytes.get(at + 8..at + size)).flatten() else {
                self.malformed += 1;
                break;
            };
            at += size;
            let parsed = match kind {
                pe::PERF_RECORD_SAMPLE => self.parse_sample(body).map(TraceRecord::Sample),
                pe::PERF_RECORD_COMM => parse_comm(body, misc),
                pe::PERF_RECORD_EXIT => {
                    let mut r = Reader(body);
                    (|| {
                        let pid = r.u32()? as i32;
                        let _ppid = r.u32()?;
                        let tid = r.u32()? as i32;
                        let _ptid = r.u32()?;
                        let time = r.u64()?;
                        Some(TraceRecord::Exit { pid, tid, time })
                    })()
                }
                pe::PERF_RECORD_LOST => {
                    let mut r = Reader(body);
                    r.u64()
                        .and_then(|_id| r.u64())
                        .map(|count| TraceRecord::Lost { cpu, count })
                }
                _ => continue,
            };
            match parsed {
                Some(record) => sink.record(record)?,
                None => self.malformed += 1,
            }
        }
        Ok(())
    }

    fn parse_sample<'a>(&self, body: &'a [u8]) -> Option<TraceSample<'a>> {
        let mut r = Reader(body);
        let id = r.u64()?;
        let event = *self.ids.get(&id)?;
        let attr = self.attrs.get(event)?;
        let pid = r.u32()? as i32;
        let tid = r.u32()? as i32;
        let time = r.u64()?;
        let cpu = r.u32()?;
        let _res = r.u32()?;
        let mut raw: &[u8] = &[];
        if attr.sample_type & pe::PERF_SAMPLE_RAW != 0 {
            let len = r.u32()? as usize;
            raw = r.take(len)?;
        }
        let mut regs = Vec::new();
        if attr.sample_type & pe::PERF_SAMPLE_REGS_USER != 0 {
            let abi = r.u64()?;
            if abi != 0 {
                for _ in 0..attr.sample_regs_user.count_ones() {
                    regs.push(r.u64()?);
                }
            }
        }
        let mut stack: &[u8] = &[];
        if attr.sample_type & pe::PERF_SAMPLE_STACK_USER != 0 {
            let len = r.u64()? as usize;
            if len > 0 {
                let data = r.take(len)?;
                let dyn_size = r.u64()? as usize;
                stack = data.get(..dyn_size.min(len))?;
            }
        }
        Some(TraceSample {
            event,
            pid,
            tid,
            time,
            cpu,
            raw,
            regs,
            stack,
        })
    }
}

fn parse_comm(body: &[u8], misc: u16) -> Option<TraceRecord<'_>> {
    let mut r = Reader(body);
    let pid = r.u32()? as i32;
    let tid = r.u32()? as i32;
    let rest = r.0;
    let end = rest.iter().position(|&b| b == 0)?;
    Some(TraceRecord::Comm {
        pid,
        tid,
        comm: String::from_utf8_lossy(&rest[..end]).into_owned(),
        exec: misc & pe::PERF_RECORD_MISC_COMM_EXEC != 0,
    })
}

fn open_error(event: &str, pid: i32, err: io::Error) -> CaptureError {
    match err.raw_os_error() {
        Some(libc::EACCES | libc::EPERM) => CaptureError::Permission {
            event: event.to_string(),
            paranoid: pe::paranoid_level(),
        },
        Some(libc::ESRCH) => CaptureError::NoSuchProcess(pid),
        _ => CaptureError::Open {
            event: event.to_string(),
            err,
        },
    }
}

/// A bounds-checked cursor over native-endian record bytes.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, tail) = (self.0.get(..n)?, self.0.get(n..)?);
        self.0 = tail;
        Some(head)
    }
    fn u32(&mut self) -> Option<u32> {
        let b = self.take(4)?;
        Some(u32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn u64(&mut self) -> Option<u64> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Some(u64::from_ne_bytes(a))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reader_is_bounds_checked() {
        let mut r = Reader(&[1, 0, 0, 0, 2]);
        assert_eq!(r.u32(), Some(1));
        assert_eq!(r.u32(), None);
        assert_eq!(r.take(1), Some(&[2u8][..]));
        assert!(parse_comm(&[1, 0, 0, 0], 0).is_none());
        let comm = [5, 0, 0, 0, 6, 0, 0, 0, b'c', b'a', b't', 0, 0, 0, 0, 0];
        assert_eq!(
            parse_comm(&comm, pe::PERF_RECORD_MISC_COMM_EXEC),
            Some(TraceRecord::Comm {
                pid: 5,
                tid: 6,
                comm: "cat".into(),
                exec: true
            })
        );
    }
}
