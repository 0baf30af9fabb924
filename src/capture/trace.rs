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
//! Ordering: per-CPU rings are not ordered between each other. Records
//! go through the record pipeline every live command uses: walked with
//! `data::raw`, put in time order by the one sorter (`data::order`, a
//! round being one drain of every ring, ended as the next drain starts, so
//! a quiet target's lines still come within two drains), parsed by
//! linux-perf-event-reader with their event's attribute, and handed to the
//! `TraceSink` through the one dispatcher (`data::handler`) in time order.
//! Losses are counted per ring as they arrive.
//!
//! Invariant: parsing never panics on ring bytes; a malformed record is
//! counted and skipped.

use std::io;
use std::time::Duration;

use linux_perf_event_reader::{CommonData, ForkOrExitRecord, RawData, SampleRecord};

use crate::data::handler::{Comm, RecordHandler};
use crate::data::order::RingOrder;
use crate::data::raw::EventIds;
use crate::event::name::ResolvedEvent;
use crate::sys::bpf_trace::{ArgCopies, ArgCopy, TraceArgsBpf};
use crate::sys::perf_event::{self as pe, PerfEventFd, perf_event_attr};
use crate::sys::signal::RunStop;

use super::CaptureError;
use super::session::{CounterPlan, RecordSink, Session, StopReason, Target};

/// One event to open on every CPU (and thread) of the target.
#[derive(Clone, Debug)]
pub(crate) struct TraceEvent {
    /// A tracepoint or a uprobe PMU event (`event::name::resolve_with`);
    /// its name is printed (`raw_syscalls:sys_enter`, `probe_libc:malloc`).
    pub(crate) event: ResolvedEvent,
    /// A tracepoint filter (ftrace syntax), set with the SET_FILTER ioctl.
    pub(crate) filter: Option<String>,
    /// `PERF_SAMPLE_REGS_USER` mask (x86 perf register bits); 0 for none.
    pub(crate) regs_user: u64,
    /// Bytes of user stack copied with each sample; 0 for none.
    pub(crate) stack_user: u32,
}

/// x86 perf register numbers (arch/x86/include/uapi/asm/perf_regs.h).
pub(crate) mod regs {
    pub(crate) const AX: u32 = 0;
    pub(crate) const CX: u32 = 2;
    pub(crate) const DX: u32 = 3;
    pub(crate) const SI: u32 = 4;
    pub(crate) const DI: u32 = 5;
    pub(crate) const IP: u32 = 8;
    pub(crate) const R8: u32 = 16;
    pub(crate) const R9: u32 = 17;
}

/// One parsed record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum TraceRecord<'a> {
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
pub(crate) struct TraceSample<'a> {
    /// Index into the events given to `TraceCapture::open`.
    pub(crate) event: usize,
    pub(crate) pid: i32,
    pub(crate) tid: i32,
    /// CLOCK_MONOTONIC nanoseconds.
    pub(crate) time: u64,
    pub(crate) cpu: u32,
    /// The tracepoint record (`common_type` first); empty for uprobes.
    pub(crate) raw: &'a [u8],
    /// Sampled user registers, in ascending register-number order.
    pub(crate) regs: Vec<u64>,
    /// The copied user stack, starting at the sampled stack pointer.
    pub(crate) stack: &'a [u8],
}

/// Where parsed records go, in time order (losses as they arrive).
pub(crate) trait TraceSink {
    fn record(&mut self, record: TraceRecord<'_>) -> io::Result<()>;
    /// A drain ended: the records it took were all handed to `record`.
    fn drained(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Counters, rings and the workload of one trace.
#[derive(Debug)]
pub(crate) struct TraceCapture {
    session: Session,
    /// Each event's parse info and sample ids, the argument copies' last.
    ids: EventIds,
    /// The event index of the argument copies.
    arg_copies: usize,
    /// The copying program and its bpf-output events, when loaded.
    arg_copier: Option<ArgCopier>,
    /// Records that did not parse.
    pub(crate) malformed: u64,
    /// Lines for the user (the argument copies could not be set up...).
    pub(crate) notes: Vec<String>,
}

/// The BPF program copying arguments and the bpf-output counter of each
/// CPU it writes to.
#[derive(Debug)]
struct ArgCopier {
    bpf: TraceArgsBpf,
    _outputs: Vec<PerfEventFd>,
}

const SAMPLE_BASE: u64 =
    pe::PERF_SAMPLE_IDENTIFIER | pe::PERF_SAMPLE_TID | pe::PERF_SAMPLE_TIME | pe::PERF_SAMPLE_CPU;

fn build_attr(event: &TraceEvent, first: bool, ring_bytes: usize) -> perf_event_attr {
    let mut attr = pe::new_attr();
    event.event.select_in(&mut attr);
    let mut sample_type = SAMPLE_BASE;
    if event.event.is_tracepoint() || event.event.uprobe.as_ref().is_some_and(|u| u.kernel) {
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

/// Live output: drain at least this often.
const DRAIN_INTERVAL: Duration = Duration::from_millis(100);

impl TraceCapture {
    /// Opens every event on every CPU (and thread) of the target. A `--
    /// COMMAND` is forked but waits for `start` to exec. `copy` lists the
    /// system calls whose arguments are copied at entry, and which ones;
    /// when that cannot be set up, `notes` says why and tracing goes on.
    pub(crate) fn open(
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
        let sample_ids = session.ids().map_err(CaptureError::System)?;
        let events: Vec<(Vec<u8>, Vec<u64>)> = session
            .attrs
            .iter()
            .map(pe::attr_bytes)
            .zip(sample_ids)
            .collect();
        let mut ids = EventIds::new(&events).map_err(CaptureError::System)?;
        // The bpf-output counters' records: what the parser needs of their
        // attribute.
        let mut copies_attr = pe::new_attr();
        copies_attr.sample_type = SAMPLE_BASE | pe::PERF_SAMPLE_RAW;
        let arg_copies = ids
            .add(&pe::attr_bytes(&copies_attr))
            .map_err(CaptureError::System)?;
        let mut capture = TraceCapture {
            session,
            ids,
            arg_copies,
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
            self.ids.insert(fd.id()?, self.arg_copies);
            outputs.push(fd);
        }
        bpf.attach()?;
        Ok(ArgCopier {
            bpf,
            _outputs: outputs,
        })
    }

    /// The pid of the workload, once forked.
    pub(crate) fn workload_pid(&self) -> Option<i32> {
        self.session.workload_pid()
    }

    /// Enables the counters and lets the workload exec.
    pub(crate) fn start(&mut self) -> Result<(), CaptureError> {
        self.session.start()
    }

    /// Drains into `sink` until the workload exits, every watched process
    /// is gone, or SIGINT/SIGTERM arrives; then drains what is left and
    /// reaps the workload (SIGTERM first if it still runs).
    pub(crate) fn run(
        &mut self,
        sink: &mut dyn TraceSink,
        stop: &RunStop,
    ) -> Result<StopReason, CaptureError> {
        let mut parser = Parser {
            ring: RingOrder::new(self.ids.clone()),
            out: Emit {
                arg_copies: self.arg_copies,
                malformed: 0,
                sink,
                failed: None,
            },
        };
        let reason = self.session.run(&mut parser, stop);
        let flushed = parser.finish();
        self.malformed += parser.ring.malformed + parser.out.malformed;
        if let Some(copier) = &mut self.arg_copier {
            copier.bpf.detach();
        }
        let reason = reason?;
        flushed.map_err(CaptureError::Write)?;
        Ok(reason)
    }
}

/// Drained records through the record pipeline (`RingOrder`: walked, put
/// in time order, parsed by linux-perf-event-reader, dispatched) into
/// `Emit`, which makes them `TraceRecord`s.
struct Parser<'a> {
    ring: RingOrder,
    out: Emit<'a>,
}

/// The `RecordHandler` that turns records into `TraceRecord`s for a
/// `TraceSink`.
struct Emit<'a> {
    /// The event index of the argument copies (after the caller's events).
    arg_copies: usize,
    /// Records that parsed but lacked a field a `TraceRecord` needs.
    malformed: u64,
    sink: &'a mut dyn TraceSink,
    /// The sink's first error: the records after it are dropped.
    failed: Option<io::Error>,
}

impl RecordSink for Parser<'_> {
    /// A drain starts: every record of the drains before it has arrived,
    /// so the previous round ends here, whether or not it held records
    /// (lines are printed within two drains, however quiet the target).
    fn drain_starting(&mut self) -> io::Result<()> {
        self.ring.finish_round(&mut self.out);
        if let Some(e) = self.out.failed.take() {
            return Err(e);
        }
        self.out.sink.drained()
    }

    fn records(&mut self, cpu: u32, bytes: &[u8]) -> io::Result<()> {
        let out = &mut self.out;
        // Losses are per ring and need no order.
        self.ring.take(bytes, |raw| {
            if raw.record_type != pe::PERF_RECORD_LOST {
                return false;
            }
            let count = raw.lost_count().unwrap_or(0);
            out.deliver(Some(TraceRecord::Lost { cpu, count }));
            true
        });
        self.out.failed.take().map_or(Ok(()), Err)
    }

    fn round_done(&mut self) -> io::Result<()> {
        Ok(())
    }

    fn tick_interval(&self) -> Option<Duration> {
        Some(DRAIN_INTERVAL)
    }
}

impl Parser<'_> {
    /// The end of the capture: every record still held, in order.
    fn finish(&mut self) -> io::Result<()> {
        self.ring.finish(&mut self.out);
        self.out.failed.take().map_or(Ok(()), Err)
    }
}

impl Emit<'_> {
    fn deliver(&mut self, record: Option<TraceRecord<'_>>) {
        match record {
            _ if self.failed.is_some() => {}
            Some(record) => {
                if let Err(e) = self.sink.record(record) {
                    self.failed = Some(e);
                }
            }
            None => self.malformed += 1,
        }
    }
}

/// The bytes of a parsed field, as they lie in the drained record.
fn bytes<'a>(data: Option<RawData<'a>>) -> Option<&'a [u8]> {
    match data? {
        RawData::Single(bytes) => Some(bytes),
        RawData::Split(..) => None,
    }
}

impl RecordHandler for Emit<'_> {
    fn handle_sample(&mut self, attr_index: usize, s: &SampleRecord<'_>) {
        let record = (|| {
            let (pid, tid, time) = (s.pid?, s.tid?, s.timestamp?);
            let raw = match s.raw {
                Some(_) => bytes(s.raw)?,
                None => &[],
            };
            if attr_index == self.arg_copies {
                let copies = ArgCopies::parse(raw)?;
                return Some(TraceRecord::ArgCopies {
                    pid,
                    tid,
                    time,
                    copies,
                });
            }
            // Ascending register numbers, as sampled.
            let regs = s.user_regs.as_ref().map_or_else(Vec::new, |regs| {
                (0..64).filter_map(|r| regs.get(r)).collect()
            });
            let stack = match &s.user_stack {
                Some((data, dyn_size)) => {
                    let data = bytes(Some(*data))?;
                    data.get(..(*dyn_size as usize).min(data.len()))?
                }
                None => &[],
            };
            Some(TraceRecord::Sample(TraceSample {
                event: attr_index,
                pid,
                tid,
                time,
                cpu: s.cpu?,
                raw,
                regs,
                stack,
            }))
        })();
        self.deliver(record);
    }

    fn handle_comm(&mut self, _attr_index: usize, c: &Comm<'_>, id: &CommonData) {
        let end = c.name.iter().position(|&b| b == 0).unwrap_or(c.name.len());
        self.deliver(Some(TraceRecord::Comm {
            pid: c.pid,
            tid: c.tid,
            comm: String::from_utf8_lossy(&c.name[..end]).into_owned(),
            exec: c.exec,
            time: id.timestamp.unwrap_or(0),
        }));
    }

    fn handle_fork(&mut self, _attr_index: usize, f: &ForkOrExitRecord, _id: &CommonData) {
        self.deliver(Some(TraceRecord::Fork {
            pid: f.pid,
            ppid: f.ppid,
            tid: f.tid,
            ptid: f.ptid,
            time: f.timestamp,
        }));
    }

    fn handle_exit(&mut self, _attr_index: usize, e: &ForkOrExitRecord, _id: &CommonData) {
        self.deliver(Some(TraceRecord::Exit {
            pid: e.pid,
            tid: e.tid,
            time: e.timestamp,
        }));
    }
}
