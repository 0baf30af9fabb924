//! The live tracer behind `scry trace`: counters for tracepoints and
//! uprobes on a target, and the parse of what their rings hold into
//! `TraceRecord`s for a `TraceSink`.
//!
//! The counters are opened, drained and stopped by `Session` (one place
//! opens counters: `Session::open_plan`); this module adds what a syscall
//! tracer needs beyond a sampling session: per-event attributes, and the
//! copies of string and buffer arguments. Those are made in the kernel at
//! the system call's entry by a BPF program (`sys::bpf_trace`), which writes
//! them through a bpf-output event per CPU redirected into that CPU's ring
//! (PERF_EVENT_IOC_SET_OUTPUT): they come in time order with the entries,
//! and what a process writes into its buffer after the call cannot change
//! them. Where the program does not load, `notes` says so and strings show
//! as pointers; nothing is read from the process later (that raced: a
//! reused buffer showed its new content). Uprobes come from the uprobe PMU
//! (`config1`/`config2`), so a probe made for one run dies with its file
//! descriptors, even after SIGKILL.
//!
//! Ordering: per-CPU rings are not ordered between each other. Counters
//! use CLOCK_MONOTONIC (`use_clockid`), the clock is noted as each drain
//! starts, and `round_done` passes the time noted before the previous
//! drain: every record older than it has been drained, so a sink may
//! release (sorted) what precedes it.
//!
//! Invariant: parsing never panics on ring bytes; a malformed record is
//! counted and skipped.

use std::collections::HashMap;
use std::io;
use std::time::Duration;

use crate::event::name::ResolvedEvent;
use crate::sys::bpf_trace::{ArgCopies, ArgCopy, TraceArgsBpf};
use crate::sys::perf_event::{self as pe, PerfEventFd, perf_event_attr};
use crate::sys::signal::SignalPipe;

use super::CaptureError;
use super::session::{CounterPlan, RecordSink, Session, StopReason, Target};

/// One event to open on every CPU (and thread) of the target.
#[derive(Clone, Debug)]
pub struct TraceEvent {
    /// A tracepoint or a uprobe PMU event (`event::name::resolve_with`);
    /// its name is printed (`raw_syscalls:sys_enter`, `probe_libc:malloc`).
    pub event: ResolvedEvent,
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
    /// A thread's name (set at exec when `exec`, else by prctl), from
    /// `time` on (0 when the record carried no time).
    Comm {
        pid: i32,
        tid: i32,
        comm: String,
        exec: bool,
        time: u64,
    },
    /// A new thread or process `tid` of process `pid`, made by thread
    /// `ptid` of `ppid`: it carries its maker's name until it sets its own.
    Fork {
        pid: i32,
        ppid: i32,
        tid: i32,
        ptid: i32,
        time: u64,
    },
    Exit {
        pid: i32,
        tid: i32,
        time: u64,
    },
    /// Arguments copied at a system call's entry (`sys::bpf_trace`); the
    /// entry itself is a separate `raw_syscalls:sys_enter` sample.
    ArgCopies {
        pid: i32,
        tid: i32,
        time: u64,
        copies: ArgCopies<'a>,
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

/// Counters, rings and the workload of one trace.
#[derive(Debug)]
pub struct TraceCapture {
    session: Session,
    /// The attributes as opened (the session's), by event.
    attrs: Vec<perf_event_attr>,
    ids: HashMap<u64, usize>,
    /// The copying program and its bpf-output events, when loaded.
    arg_copier: Option<ArgCopier>,
    /// Records that did not parse.
    pub malformed: u64,
    /// Lines for the user (the argument copies could not be set up...).
    pub notes: Vec<String>,
}

/// The BPF program copying arguments and the bpf-output counter of each
/// CPU it writes to.
#[derive(Debug)]
struct ArgCopier {
    bpf: TraceArgsBpf,
    _outputs: Vec<PerfEventFd>,
}

/// The event index `ArgCopies` samples are parsed under (after the
/// caller's events).
const ARG_COPIES: usize = usize::MAX;

const SAMPLE_BASE: u64 =
    pe::PERF_SAMPLE_IDENTIFIER | pe::PERF_SAMPLE_TID | pe::PERF_SAMPLE_TIME | pe::PERF_SAMPLE_CPU;

fn build_attr(event: &TraceEvent, first: bool, ring_bytes: usize) -> perf_event_attr {
    let mut attr = pe::new_attr();
    event.event.select_in(&mut attr);
    let mut sample_type = SAMPLE_BASE;
    if event.event.is_tracepoint() {
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
    attr.set_sample_id_all(1);
    attr.set_use_clockid(1);
    attr.clockid = libc::CLOCK_MONOTONIC;
    if first {
        attr.set_comm(1);
        attr.set_comm_exec(1);
        attr.set_task(1);
    }
    attr.set_watermark(1);
    attr.__bindgen_anon_2.wakeup_watermark = (ring_bytes / 4) as u32;
    attr
}

/// What the parser needs of the bpf-output counters' attribute.
static ARG_COPIES_ATTR: std::sync::LazyLock<perf_event_attr> = std::sync::LazyLock::new(|| {
    let mut attr = pe::new_attr();
    attr.sample_type = SAMPLE_BASE | pe::PERF_SAMPLE_RAW;
    attr
});

/// Live output: drain at least this often.
const DRAIN_INTERVAL: Duration = Duration::from_millis(100);

impl TraceCapture {
    /// Opens every event on every CPU (and thread) of the target. A `--
    /// COMMAND` is forked but waits for `start` to exec. `copy` lists the
    /// system calls whose arguments are copied at entry, and which ones;
    /// when that cannot be set up, `notes` says why and tracing goes on.
    pub fn open(
        events: Vec<TraceEvent>,
        target: &Target,
        mmap_pages: usize,
        copy: &[(u64, [ArgCopy; 6])],
    ) -> Result<TraceCapture, CaptureError> {
        if events.is_empty() {
            return Err(CaptureError::NoEvents);
        }
        let ring_bytes = mmap_pages.saturating_mul(crate::sys::ring::page_size());
        let attrs = events
            .iter()
            .enumerate()
            .map(|(i, e)| build_attr(e, i == 0, ring_bytes))
            .collect();
        let filters = events
            .iter()
            .enumerate()
            .filter_map(|(i, e)| Some((i, e.filter.clone()?)))
            .collect();
        let session = Session::open_plan(CounterPlan {
            events: events.into_iter().map(|e| e.event).collect(),
            attrs,
            filters,
            target: target.clone(),
            mmap_pages,
        })?;
        let mut ids = HashMap::new();
        for (event, list) in session
            .ids()
            .map_err(CaptureError::System)?
            .iter()
            .enumerate()
        {
            for &id in list {
                ids.insert(id, event);
            }
        }
        let mut capture = TraceCapture {
            attrs: session.attrs.clone(),
            session,
            ids,
            arg_copier: None,
            malformed: 0,
            notes: Vec::new(),
        };
        if !copy.is_empty() {
            match capture.open_arg_copier(target, copy, ring_bytes) {
                Ok(copier) => capture.arg_copier = Some(copier),
                Err(err) => capture.notes.push(format!(
                    "string arguments are not copied ({err}): they show as pointers"
                )),
            }
        }
        Ok(capture)
    }

    /// Loads the copying program, points it at a bpf-output counter per
    /// CPU whose records go to that CPU's ring, and attaches it.
    fn open_arg_copier(
        &mut self,
        target: &Target,
        copy: &[(u64, [ArgCopy; 6])],
        ring_bytes: usize,
    ) -> io::Result<ArgCopier> {
        let system_wide = target.system_wide || target.cpus.is_some();
        let mut bpf = TraceArgsBpf::load(system_wide, std::process::id())?;
        for &(nr, kinds) in copy {
            bpf.copy_args(nr, kinds)?;
        }
        if !system_wide {
            if let Some(pid) = self.session.workload_pid() {
                bpf.watch(pid, true)?;
            }
            for &pid in &target.pids {
                bpf.watch(crate::sys::proc::tgid(pid).unwrap_or(pid), false)?;
            }
        }
        let mut attr = pe::new_attr();
        attr.type_ = pe::PERF_TYPE_SOFTWARE;
        attr.config = pe::PERF_COUNT_SW_BPF_OUTPUT;
        attr.sample_type = SAMPLE_BASE | pe::PERF_SAMPLE_RAW;
        attr.__bindgen_anon_1.sample_period = 1;
        attr.set_use_clockid(1);
        attr.clockid = libc::CLOCK_MONOTONIC;
        attr.set_watermark(1);
        attr.__bindgen_anon_2.wakeup_watermark = (ring_bytes / 4) as u32;
        let mut outputs = Vec::new();
        for (cpu, ring) in self.session.ring_counters() {
            let fd = PerfEventFd::open(&attr, -1, cpu as i32)?;
            fd.set_output(ring)?;
            bpf.set_output(cpu, fd.raw_fd())?;
            self.ids.insert(fd.id()?, ARG_COPIES);
            outputs.push(fd);
        }
        bpf.attach()?;
        Ok(ArgCopier {
            bpf,
            _outputs: outputs,
        })
    }

    /// The pid of the workload, once forked.
    pub fn workload_pid(&self) -> Option<i32> {
        self.session.workload_pid()
    }

    /// Enables the counters and lets the workload exec.
    pub fn start(&mut self) -> Result<(), CaptureError> {
        self.session.start()
    }

    /// Drains into `sink` until the workload exits, every watched process
    /// is gone, or SIGINT/SIGTERM arrives; then drains what is left and
    /// reaps the workload (SIGTERM first if it still runs).
    pub fn run(
        &mut self,
        sink: &mut dyn TraceSink,
        signals: &SignalPipe,
    ) -> Result<StopReason, CaptureError> {
        let mut parser = Parser {
            ids: &self.ids,
            attrs: &self.attrs,
            malformed: 0,
            sink,
            drain_started: 0,
        };
        let reason = self.session.run(&mut parser, signals);
        self.malformed += parser.malformed;
        if let Some(copier) = &mut self.arg_copier {
            copier.bpf.detach();
        }
        reason
    }
}

/// Parses drained bytes into `TraceRecord`s for a `TraceSink`.
struct Parser<'a> {
    ids: &'a HashMap<u64, usize>,
    attrs: &'a [perf_event_attr],
    malformed: u64,
    sink: &'a mut dyn TraceSink,
    /// CLOCK_MONOTONIC when the last drain started.
    drain_started: u64,
}

impl RecordSink for Parser<'_> {
    fn drain_starting(&mut self) -> io::Result<()> {
        // The previous drain emptied every ring after `drain_started`.
        self.sink.round_done(self.drain_started)?;
        self.drain_started = crate::sys::uprobe::monotonic_ns();
        Ok(())
    }

    fn records(&mut self, cpu: u32, bytes: &[u8]) -> io::Result<()> {
        self.parse(bytes, cpu)
    }

    fn round_done(&mut self) -> io::Result<()> {
        Ok(())
    }

    fn tick_interval(&self) -> Option<Duration> {
        Some(DRAIN_INTERVAL)
    }
}

impl Parser<'_> {
    fn parse(&mut self, bytes: &[u8], cpu: u32) -> io::Result<()> {
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
                pe::PERF_RECORD_SAMPLE => match self.parse_sample(body) {
                    Some(s) if s.event == ARG_COPIES => {
                        ArgCopies::parse(s.raw).map(|copies| TraceRecord::ArgCopies {
                            pid: s.pid,
                            tid: s.tid,
                            time: s.time,
                            copies,
                        })
                    }
                    other => other.map(TraceRecord::Sample),
                },
                pe::PERF_RECORD_COMM => parse_comm(body, misc),
                pe::PERF_RECORD_FORK => {
                    let mut r = Reader(body);
                    (|| {
                        let pid = r.u32()? as i32;
                        let ppid = r.u32()? as i32;
                        let tid = r.u32()? as i32;
                        let ptid = r.u32()? as i32;
                        let time = r.u64()?;
                        Some(TraceRecord::Fork {
                            pid,
                            ppid,
                            tid,
                            ptid,
                            time,
                        })
                    })()
                }
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
                Some(record) => self.sink.record(record)?,
                None => self.malformed += 1,
            }
        }
        Ok(())
    }

    fn parse_sample<'b>(&self, body: &'b [u8]) -> Option<TraceSample<'b>> {
        let mut r = Reader(body);
        let id = r.u64()?;
        let event = *self.ids.get(&id)?;
        let attr = match event {
            ARG_COPIES => &*ARG_COPIES_ATTR,
            _ => self.attrs.get(event)?,
        };
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

/// Bytes of the `sample_id_all` trailer of the tracking event's records
/// (SAMPLE_BASE: pid/tid, time, cpu/res, identifier) and where its time is.
const TRAILER: usize = 32;
const TRAILER_TIME: usize = 8;

fn parse_comm(body: &[u8], misc: u16) -> Option<TraceRecord<'_>> {
    let mut r = Reader(body);
    let pid = r.u32()? as i32;
    let tid = r.u32()? as i32;
    let rest = r.0;
    let end = rest.iter().position(|&b| b == 0)?;
    let time = body
        .len()
        .checked_sub(TRAILER)
        .filter(|&at| at >= 8 + end)
        .and_then(|at| Reader(&body[at + TRAILER_TIME..]).u64())
        .unwrap_or(0);
    Some(TraceRecord::Comm {
        pid,
        tid,
        comm: String::from_utf8_lossy(&rest[..end]).into_owned(),
        exec: misc & pe::PERF_RECORD_MISC_COMM_EXEC != 0,
        time,
    })
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
        let mut comm = vec![5, 0, 0, 0, 6, 0, 0, 0, b'c', b'a', b't', 0, 0, 0, 0, 0];
        assert_eq!(
            parse_comm(&comm, pe::PERF_RECORD_MISC_COMM_EXEC),
            Some(TraceRecord::Comm {
                pid: 5,
                tid: 6,
                comm: "cat".into(),
                exec: true,
                time: 0,
            })
        );
        // With the sample_id_all trailer: pid/tid, time, cpu/res, id.
        comm.extend_from_slice(&[5, 0, 0, 0, 6, 0, 0, 0]);
        comm.extend_from_slice(&77u64.to_ne_bytes());
        comm.extend_from_slice(&[0; 16]);
        assert!(matches!(
            parse_comm(&comm, 0),
            Some(TraceRecord::Comm {
                time: 77,
                exec: false,
                ..
            })
        ));
    }
}
