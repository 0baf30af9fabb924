//! `record`'s pipeline: a capture session streamed into a perf.data file,
//! or with `-o -` into perf's pipe format on standard output.
//!
//! Records go from the rings to the file untouched (perf's approach: no
//! parsing on the hot path). While they pass, a walk of their headers
//! (`data::raw`) counts samples and lost events per CPU, reads the first
//! and last sample times (where each event's layout puts them), and notes
//! every mapped binary, so
//! that `finish` can add build-ids without a second pass over the data
//! (a binary the host cannot see by its path is opened through its process
//! when first met, and copied by build-id at the end: `hidden_binaries`).
//! Every 250 ms the rings are drained (whether or not they woke the
//! reader), the data written out and the header re-written (checkpointed)
//! for it, so a SIGKILLed recording leaves a file that is whole up to a
//! quarter second before the kill; the reader recovers records written after
//! the last checkpoint too.
//!
//! `record --profile` runs the kernel's function tracer beside the
//! recording (`capture::profile_kernel`, as `scry profile` does) and keeps
//! its rows in scry's own feature section (`data::function_rows`).

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::data::build_id;
use crate::data::features::{BuildIdEntry, ClockData, Features, len_u32};
use crate::data::function_rows::FunctionRows;
use crate::data::pipe_writer::PerfPipeWriter;
use crate::data::raw::{EventIds, RawRecords};
use crate::data::writer::{EventDesc, PerfDataWriter};
use crate::event::name::group_size;
use crate::sys::perf_event::{
    self as pe, PERF_RECORD_LOST, PERF_RECORD_LOST_SAMPLES, PERF_RECORD_MISC_KERNEL,
    PERF_RECORD_MISC_USER, PERF_RECORD_MMAP, PERF_RECORD_MMAP2, PERF_RECORD_SAMPLE,
};
use crate::sys::signal::RunStop;

use super::CaptureError;
use super::hidden_binaries::HiddenBinaries;
use super::profile_kernel::{ProfileKernel, RecordFunctions, TracerRefused};
use super::session::{CaptureOptions, RecordSink, Session, StopReason};

/// What `record_to_file` did.
#[derive(Debug)]
pub(crate) struct RecordSummary {
    pub(crate) path: PathBuf,
    pub(crate) samples: u64,
    /// Lost records per CPU (only CPUs that lost any).
    pub(crate) lost_per_cpu: BTreeMap<u32, u64>,
    pub(crate) bytes: u64,
    pub(crate) stop: StopReason,
    pub(crate) notes: Vec<String>,
}

impl RecordSummary {
    pub(crate) fn lost(&self) -> u64 {
        self.lost_per_cpu.values().sum()
    }
}

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum RecordError {
    #[error(transparent)]
    Capture(#[from] CaptureError),
    #[error("{path}: {source}")]
    File { path: PathBuf, source: io::Error },
}

/// Where the records go: a perf.data file, or the pipe format on standard
/// output (`-o -`), which cannot seek: its metadata goes first, and features
/// known only at the end (build-ids, the sample time range) are left out,
/// as perf does in pipe mode.
enum Output {
    File(PerfDataWriter<File>),
    Pipe(PerfPipeWriter<io::Stdout>),
}

impl Output {
    fn write_records(&mut self, raw: &[u8]) -> io::Result<()> {
        match self {
            Output::File(w) => w.write_records(raw),
            Output::Pipe(w) => w.write_records(raw),
        }
    }

    fn write_finished_round(&mut self) -> io::Result<()> {
        match self {
            Output::File(w) => w.write_finished_round(),
            Output::Pipe(w) => w.write_finished_round(),
        }
    }

    fn data_size(&self) -> u64 {
        match self {
            Output::File(w) => w.data_size(),
            Output::Pipe(w) => w.data_size(),
        }
    }

    /// The file: data written out and the header for it. The pipe: flushed.
    fn checkpoint(&mut self) -> io::Result<()> {
        match self {
            Output::File(w) => w.checkpoint(),
            Output::Pipe(w) => w.flush(),
        }
    }
}

/// The writer plus the header scan described in the module doc.
struct FileSink {
    writer: Output,
    samples: u64,
    lost_per_cpu: BTreeMap<u32, u64>,
    /// `(misc cpumode, filename)` of every mapped binary.
    mapped: BTreeSet<(u16, String)>,
    /// Those the host cannot see by their path, opened through their
    /// process (`capture::hidden_binaries`).
    hidden: HiddenBinaries,
    first_time: Option<u64>,
    last_time: u64,
    last_checkpoint: Instant,
    /// The data size the header said at the last checkpoint.
    checkpointed: u64,
    /// LOST_SAMPLES records to write after the records being scanned.
    lost_samples: Vec<u8>,
    /// Each record's event, for the time of samples.
    ids: EventIds,
}

fn c_string(b: &[u8]) -> Option<String> {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    std::str::from_utf8(&b[..end]).ok().map(str::to_string)
}

impl FileSink {
    fn scan(&mut self, cpu: u32, bytes: &[u8]) {
        let mut records = RawRecords::new(bytes);
        while let Ok(Some(raw)) = records.next_record() {
            match raw.record_type {
                PERF_RECORD_SAMPLE => {
                    self.samples += 1;
                    let time = self.ids.event_of(&raw).and_then(|(_, e)| e.timestamp());
                    if let Some(time) = time {
                        self.first_time.get_or_insert(time);
                        self.last_time = self.last_time.max(time);
                    }
                }
                PERF_RECORD_LOST => {
                    let count = raw.lost_count().unwrap_or(0);
                    *self.lost_per_cpu.entry(cpu).or_default() += count;
                    // perf report counts losses from LOST_SAMPLES (perf
                    // record writes them at its end): one per LOST here,
                    // its count and sample_id (the LOST body without its
                    // leading id), so perf shows what scry lost.
                    let body = raw.body.get(8..).unwrap_or(&[]);
                    let size = (8 + body.len()) as u16;
                    self.lost_samples
                        .extend_from_slice(&PERF_RECORD_LOST_SAMPLES.to_ne_bytes());
                    self.lost_samples.extend_from_slice(&0u16.to_ne_bytes());
                    self.lost_samples.extend_from_slice(&size.to_ne_bytes());
                    self.lost_samples.extend_from_slice(body);
                }
                PERF_RECORD_LOST_SAMPLES => {
                    let count = raw.lost_count().unwrap_or(0);
                    *self.lost_per_cpu.entry(cpu).or_default() += count;
                }
                PERF_RECORD_MMAP | PERF_RECORD_MMAP2 => {
                    let name_at = if raw.record_type == PERF_RECORD_MMAP {
                        32
                    } else {
                        64
                    };
                    if let Some(name) = raw.body.get(name_at..).and_then(c_string)
                        && !self.mapped.contains(&(raw.misc & 7, name.clone()))
                    {
                        // pid, tid, addr, len lead both layouts.
                        let pid = raw.body.get(..4).and_then(|b| b.try_into().ok());
                        let word = |at: usize| {
                            let b = raw.body.get(at..at + 8)?;
                            Some(u64::from_ne_bytes(b.try_into().ok()?))
                        };
                        if let (Some(pid), Some(start), Some(len)) = (pid, word(8), word(16))
                            && raw.misc & 7 != PERF_RECORD_MISC_KERNEL
                        {
                            let pid = u32::from_ne_bytes(pid);
                            self.hidden
                                .note(pid, start, start.saturating_add(len), &name);
                        }
                        self.mapped.insert((raw.misc & 7, name));
                    }
                }
                _ => {}
            }
        }
    }
}

impl RecordSink for FileSink {
    fn records(&mut self, cpu: u32, bytes: &[u8]) -> io::Result<()> {
        self.scan(cpu, bytes);
        self.writer.write_records(bytes)?;
        if !self.lost_samples.is_empty() {
            let synthesized = std::mem::take(&mut self.lost_samples);
            self.writer.write_records(&synthesized)?;
        }
        Ok(())
    }

    fn round_done(&mut self) -> io::Result<()> {
        self.writer.write_finished_round()?;
        if self.last_checkpoint.elapsed() >= CHECKPOINT_EVERY {
            self.checkpoint()?;
        }
        Ok(())
    }

    /// The session drains the rings on every tick, however slowly they
    /// fill (a ring wakes the reader only when a quarter full: at -F 99
    /// that took minutes), so the file is never more than a tick behind.
    fn tick_interval(&self) -> Option<Duration> {
        Some(CHECKPOINT_EVERY)
    }

    fn tick(&mut self) -> io::Result<bool> {
        self.checkpoint()?;
        Ok(true)
    }
}

/// How far the file (data and header) may lag behind the rings: a process
/// killed (SIGKILL, a crash, the machine) loses at most this much.
const CHECKPOINT_EVERY: Duration = Duration::from_millis(250);

impl FileSink {
    /// Writes out what was buffered and the header for it, if anything
    /// changed since the last time.
    fn checkpoint(&mut self) -> io::Result<()> {
        if self.writer.data_size() != self.checkpointed {
            self.writer.checkpoint()?;
            self.checkpointed = self.writer.data_size();
        }
        self.last_checkpoint = Instant::now();
        Ok(())
    }
}

/// Build-ids of every binary a record mapped, the kernel's, and the vDSO's.
fn build_ids(mapped: &BTreeSet<(u16, String)>) -> Vec<BuildIdEntry> {
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    for (cpumode, name) in mapped {
        if !seen.insert(name.as_str()) {
            continue;
        }
        if name.starts_with("[kernel.kallsyms]") {
            if let Ok(Some(id)) = build_id::kernel_build_id() {
                out.push(BuildIdEntry {
                    pid: -1,
                    misc: PERF_RECORD_MISC_KERNEL,
                    build_id: id,
                    filename: "[kernel.kallsyms]".into(),
                });
            }
            continue;
        }
        if name == "[vdso]" {
            if let Some(id) = build_id::vdso_build_id() {
                out.push(BuildIdEntry {
                    pid: -1,
                    misc: PERF_RECORD_MISC_USER,
                    build_id: id,
                    filename: name.clone(),
                });
            }
            continue;
        }
        if !name.starts_with('/') || name.starts_with("//") {
            continue;
        }
        if let Ok(Some(id)) = build_id::read_build_id(Path::new(name)) {
            let misc = if *cpumode == PERF_RECORD_MISC_KERNEL {
                PERF_RECORD_MISC_KERNEL
            } else {
                PERF_RECORD_MISC_USER
            };
            out.push(BuildIdEntry {
                pid: -1,
                misc,
                build_id: id,
                filename: name.clone(),
            });
        }
    }
    out
}

/// Move an existing output aside to `<path>.old`, as perf does.
fn prepare_output(path: &Path) -> Result<bool, RecordError> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.len() > 0 || meta.is_file() => {
            let mut old = path.as_os_str().to_owned();
            old.push(".old");
            std::fs::rename(path, &old).map_err(|source| RecordError::File {
                path: path.to_path_buf(),
                source,
            })?;
            Ok(true)
        }
        _ => Ok(false),
    }
}

/// Record `opts` into `path`; `cmdline` goes into the file's CMDLINE
/// feature; `functions`: the function tracer runs on the workload (every
/// task without one) and its rows go into the file (where it cannot, a
/// note says why).
pub(crate) fn record_to_file(
    opts: &CaptureOptions,
    path: &Path,
    cmdline: Vec<String>,
    functions: Option<RecordFunctions>,
) -> Result<RecordSummary, RecordError> {
    // Catch SIGINT/SIGTERM before anything starts, so a Ctrl-C at any time
    // still leaves a finished file.
    let run_stop = RunStop::install().map_err(|e| RecordError::Capture(CaptureError::System(e)))?;
    let clock = opts
        .clockid
        .map(clock_data)
        .transpose()
        .map_err(|e| RecordError::Capture(CaptureError::System(e)))?;
    let mut session = Session::open(opts)?;
    let ids = session.ids().map_err(CaptureError::System)?;
    let events: Vec<EventDesc> = session
        .events
        .iter()
        .zip(&session.attrs)
        .zip(ids)
        .map(|((event, attr), ids)| EventDesc {
            attr: pe::attr_bytes(attr),
            ids,
            name: event.name.clone(),
        })
        .collect();

    let id_list: Vec<(Vec<u8>, Vec<u64>)> = events
        .iter()
        .map(|e| (e.attr.clone(), e.ids.clone()))
        .collect();
    let ids = EventIds::new(&id_list).map_err(|e| RecordError::Capture(CaptureError::System(e)))?;
    let to_stdout = path.as_os_str() == "-";
    let renamed_old = !to_stdout && prepare_output(path)?;
    let file_err = |source| RecordError::File {
        path: path.to_path_buf(),
        source,
    };
    let tracepoints: Vec<(String, String)> = session
        .events
        .iter()
        .filter_map(|e| e.tracepoint.clone())
        .collect();
    let writer = if to_stdout {
        let mut features = Features::from_system(cmdline.clone());
        features.tracing_data = tracing_data(&tracepoints);
        features.clock = clock;
        Output::Pipe(PerfPipeWriter::new(io::stdout(), &events, &features).map_err(file_err)?)
    } else {
        let file = crate::sys::private_file::create(path).map_err(file_err)?;
        Output::File(PerfDataWriter::with_events(file, &events).map_err(file_err)?)
    };
    let mut sink = FileSink {
        writer,
        samples: 0,
        lost_per_cpu: BTreeMap::new(),
        mapped: BTreeSet::new(),
        hidden: HiddenBinaries::default(),
        first_time: None,
        last_time: 0,
        last_checkpoint: Instant::now(),
        checkpointed: 0,
        lost_samples: Vec::new(),
        ids,
    };

    let mut notes = Vec::new();
    let tracer = match functions {
        Some(_) if to_stdout => {
            notes.push(TracerRefused::pipe().to_string());
            None
        }
        Some(f) => {
            let (mut kernel, _) = ProfileKernel::load(false, true);
            let tracer = f.options.tracer.clone();
            match kernel.start_tracer(&f.root, f.options, session.workload_pid(), f.watchdog) {
                Ok(()) => Some((kernel, tracer, f.rows)),
                Err(why) => {
                    notes.push(why.to_string());
                    None
                }
            }
        }
        None => None,
    };
    let system_wide = opts.target.system_wide || opts.target.cpus.is_some();
    if let Err(e) = session.start() {
        // Nothing ran, so nothing was recorded: leave no file behind (and
        // put back the one moved aside), as perf does.
        drop(sink);
        if to_stdout {
            return Err(e.into());
        }
        let _ = std::fs::remove_file(path);
        if renamed_old {
            let mut old = path.as_os_str().to_owned();
            old.push(".old");
            let _ = std::fs::rename(&old, path);
        }
        return Err(e.into());
    }
    // Synthesized after the start, so that reading /proc (kallsyms alone is
    // ~90 ms of kernel time) overlaps the workload instead of delaying it;
    // the rings hold what the workload does meanwhile, and the synthesized
    // records (time 0) still go first in the file.
    let mut synthesized = Vec::new();
    session.synthesize(system_wide, &mut synthesized);
    sink.records(0, &synthesized).map_err(file_err)?;
    sink.round_done().map_err(file_err)?;
    sink.writer.checkpoint().map_err(file_err)?;
    let stop = session.run(&mut sink, &run_stop);
    // Whatever happened, finish the file with what was recorded.
    let mut features = Features::from_system(cmdline);
    if let Some((kernel, tracer, rows)) = tracer {
        match kernel.finish() {
            Ok(results) => {
                features.function_rows = results.trace.map(|text| FunctionRows {
                    tracer,
                    rows: rows(&text),
                });
            }
            Err(err) => notes.push(TracerRefused::unread(&err).to_string()),
        }
    }
    features.build_ids = build_ids(&sink.mapped);
    for (path, build_id) in std::mem::take(&mut sink.hidden).keep() {
        features.build_ids.push(BuildIdEntry {
            pid: -1,
            misc: PERF_RECORD_MISC_USER,
            build_id,
            filename: path,
        });
    }
    features.sample_time = sink.first_time.map(|first| (first, sink.last_time));
    features.tracing_data = tracing_data(&tracepoints);
    features.clock = clock;
    features.groups = (0..session.events.len())
        .filter_map(|i| {
            let size = group_size(&session.events, i);
            (size > 1).then(|| (len_u32(i), len_u32(size)))
        })
        .collect();
    let bytes = sink.writer.data_size();
    let FileSink {
        writer,
        samples,
        lost_per_cpu,
        ..
    } = sink;
    match writer {
        Output::File(w) => drop(w.finish(&events, &features).map_err(file_err)?),
        Output::Pipe(w) => {
            w.finish().map_err(file_err)?;
        }
    }
    let stop = stop?;
    notes.extend(session.notes.iter().cloned());
    Ok(RecordSummary {
        path: path.to_path_buf(),
        samples,
        lost_per_cpu,
        bytes,
        stop,
        notes,
    })
}

/// The CLOCKID and CLOCK_DATA features of `-k clockid`: its resolution,
/// and the wall-clock time and its time read together (perf's
/// `record__init_clock`), which map sample times to the time of day.
fn clock_data(clockid: i32) -> io::Result<ClockData> {
    use crate::sys::localtime::{clock_ns, clock_res_ns};
    let res_ns = clock_res_ns(clockid)?;
    let tod_ns = clock_ns(libc::CLOCK_REALTIME)?;
    let clockid_ns = clock_ns(clockid)?;
    Ok(ClockData {
        clockid: clockid as u32,
        res_ns,
        tod_ns,
        clockid_ns,
    })
}

/// The TRACING_DATA feature for the recorded tracepoints (lets `perf script`
/// decode their fields).
fn tracing_data(tracepoints: &[(String, String)]) -> Option<Vec<u8>> {
    if tracepoints.is_empty() {
        return None;
    }
    let root = crate::sys::tracefs::root().ok()?;
    crate::data::tracing_data::build(root, tracepoints).ok()
}
