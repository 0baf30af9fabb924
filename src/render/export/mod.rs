//! Exports: a resolved recording written in the formats other viewers open
//! (pprof, the Firefox Profiler, speedscope, Chrome trace event JSON,
//! folded stacks). One module per format, each an [`Exporter`].
//!
//! The decision that isn't obvious: every format reads the same
//! [`ExportInput`] (the `symbol` stage's `Resolved` plus what the file says
//! about its events and binaries), but each says through
//! [`Exporter::wants`] how it should be resolved: the aggregate formats
//! (pprof, folded) take merged samples (one per distinct stack and thread,
//! as reports do, which keeps a 400,000-sample file cheap), the timed ones
//! (Firefox, speedscope, Chrome trace) one sample per record with its time
//! and CPU. A format that cannot hold an event (a tracepoint in pprof)
//! leaves it out and says so in [`ExportSummary::skipped`]; when nothing
//! would be left it fails with [`ExportError::Unsupported`].

pub(crate) mod chrome_trace;
pub(crate) mod firefox;
pub(crate) mod folded;
pub(crate) mod pprof;
mod pprof_proto;
pub(crate) mod speedscope;

use std::io::Write;

use crate::analysis::pairs::PairLog;
use crate::analysis::sched::TimehistRow;
use crate::model::sample::{Frame, FrameKind};
use crate::symbol::{Resolved, dso_short_name};

/// What kind of event an attribute of the file counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EventKind {
    /// `cpu-clock` or `task-clock`: periods are nanoseconds.
    Clock,
    /// A tracepoint (`sched:sched_switch`): each sample is one occurrence.
    Tracepoint,
    /// Anything else (cycles, instructions, page faults): periods count
    /// the event.
    Counter,
    /// Off-CPU time (`scry offcpu --to`): each sample one blocked
    /// interval, its period the nanoseconds off CPU.
    OffCpu,
}

/// One event (attribute) of the file, by its index in `Resolved::events`.
#[derive(Clone, Debug)]
pub(crate) struct ExportEvent {
    pub(crate) name: String,
    pub(crate) kind: EventKind,
}

impl ExportEvent {
    /// The name without perf's modifiers (`cpu-clock:ppp` → `cpu-clock`);
    /// a tracepoint keeps its `system:name`.
    pub(crate) fn base_name(&self) -> &str {
        if self.kind == EventKind::Tracepoint {
            return &self.name;
        }
        self.name.split(':').next().unwrap_or(&self.name)
    }
}

/// Everything an exporter reads.
pub(crate) struct ExportInput<'a> {
    pub(crate) resolved: &'a Resolved,
    /// Parallel to `resolved.events`.
    pub(crate) events: Vec<ExportEvent>,
    /// `(binary path, build id in hex)` from the file's BUILD_ID feature.
    pub(crate) build_ids: Vec<(String, String)>,
    /// Scheduler runs (`analysis::sched`'s switch-outs, each with its run
    /// time) when the format wants them and the file has sched_switch;
    /// empty otherwise.
    pub(crate) runs: &'a [TimehistRow],
    /// Event pairs (`analysis::pairs`, as `scry profile` and the latency
    /// heat maps pair them: system calls, wakeups, blocked time, ...) when
    /// the format wants runs and the file has tracepoints; none otherwise.
    pub(crate) pairs: Option<&'a PairLog>,
}

impl ExportInput<'_> {
    /// The event of a sample, or a made-up counter when the index is out of
    /// range (it cannot be: the resolver only hands out known indices).
    pub(crate) fn event(&self, index: usize) -> ExportEvent {
        self.events.get(index).cloned().unwrap_or(ExportEvent {
            name: format!("event{index}"),
            kind: EventKind::Counter,
        })
    }
}

/// How an exporter wants the recording resolved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Wants {
    /// One sample per distinct (event, thread, stack): no time, no CPU.
    pub(crate) merged: bool,
    /// Source lines per frame (`Frame::srcline`).
    pub(crate) srcline: bool,
    /// Scheduler runs from sched_switch (`ExportInput::runs`) and the
    /// event pairs (`ExportInput::pairs`).
    pub(crate) runs: bool,
}

impl Wants {
    /// Aggregate formats: merged samples, names only.
    pub(crate) const MERGED: Wants = Wants {
        merged: true,
        srcline: false,
        runs: false,
    };
    /// Merged samples with source lines (pprof).
    pub(crate) const MERGED_WITH_LINES: Wants = Wants {
        merged: true,
        srcline: true,
        runs: false,
    };
    /// Timed formats: one sample per record, with time and CPU.
    pub(crate) const TIMED: Wants = Wants {
        merged: false,
        srcline: false,
        runs: false,
    };
    /// Timelines: timed samples and the scheduler's runs.
    pub(crate) const TIMELINE: Wants = Wants {
        merged: false,
        srcline: false,
        runs: true,
    };
}

/// The indices of `samples` in time order (a stable sort: records of one
/// time keep the file's order).
pub(crate) fn time_order(samples: &[crate::model::sample::ResolvedSample]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..samples.len()).collect();
    order.sort_by_key(|&i| samples[i].time);
    order
}

/// What an export left out, one line each, for the command to print.
#[derive(Debug, Default)]
pub(crate) struct ExportSummary {
    pub(crate) skipped: Vec<String>,
}

/// Errors of an export.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum ExportError {
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// The format cannot hold any of the file's samples.
    #[error("{format} cannot hold {what}")]
    Unsupported { format: &'static str, what: String },
    #[error("no samples to export")]
    NoSamples,
}

/// What an export returns.
pub(crate) type ExportResult = Result<ExportSummary, ExportError>;

/// One output format (how it wants the recording resolved is
/// [`Format::wants`]).
pub(crate) trait Exporter {
    /// Write the export. Large formats are written as they are built where
    /// the format allows; `out` should be buffered.
    fn write(&self, input: &ExportInput, out: &mut dyn Write) -> ExportResult;
}

/// The formats `scry convert --to` knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Format {
    Pprof,
    Firefox,
    Speedscope,
    ChromeTrace,
    Folded,
}

impl Format {
    /// `--to`'s spellings.
    pub(crate) const NAMES: &'static [&'static str] =
        &["pprof", "firefox", "speedscope", "chrome-trace", "folded"];

    pub(crate) fn parse(name: &str) -> Option<Format> {
        Some(match name {
            "pprof" => Format::Pprof,
            "firefox" => Format::Firefox,
            "speedscope" => Format::Speedscope,
            "chrome-trace" | "perfetto" => Format::ChromeTrace,
            "folded" => Format::Folded,
            _ => return None,
        })
    }

    /// `--to`'s spelling of the format.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Format::Pprof => "pprof",
            Format::Firefox => "firefox",
            Format::Speedscope => "speedscope",
            Format::ChromeTrace => "chrome-trace",
            Format::Folded => "folded",
        }
    }

    /// The file written when no `-o` is given.
    pub(crate) fn default_file_name(self) -> &'static str {
        match self {
            Format::Pprof => "profile.pb.gz",
            Format::Firefox => "profile.firefox.json",
            Format::Speedscope => "profile.speedscope.json",
            Format::ChromeTrace => "trace.json",
            Format::Folded => "profile.folded",
        }
    }

    /// How the recording should be resolved for this format.
    pub(crate) fn wants(self) -> Wants {
        match self {
            Format::Pprof => Wants::MERGED_WITH_LINES,
            Format::Folded => Wants::MERGED,
            Format::Firefox | Format::Speedscope => Wants::TIMED,
            Format::ChromeTrace => Wants::TIMELINE,
        }
    }

    pub(crate) fn exporter(self) -> Box<dyn Exporter> {
        match self {
            Format::Pprof => Box::new(pprof::Pprof),
            Format::Firefox => Box::new(firefox::Firefox),
            Format::Speedscope => Box::new(speedscope::Speedscope),
            Format::ChromeTrace => Box::new(chrome_trace::ChromeTrace),
            Format::Folded => Box::new(folded::Folded),
        }
    }
}

/// A frame's function name as viewers show it: the symbol, else the
/// binary's short name in brackets (`[libc.so.6]`), else `[unknown]`.
pub(crate) fn function_name(frame: &Frame) -> String {
    match &frame.sym {
        Some(sym) => sym.to_string(),
        None => {
            let dso = dso_short_name(&frame.dso);
            if dso.starts_with('[') {
                dso.to_string()
            } else {
                format!("[{dso}]")
            }
        }
    }
}

/// `(file, line)` of a frame's `file:line` srcline, when it has one.
pub(crate) fn source_location(frame: &Frame) -> Option<(&str, u32)> {
    let srcline = frame.srcline.as_deref()?;
    let (file, line) = srcline.rsplit_once(':')?;
    Some((file, line.parse().ok()?))
}

/// Whether a frame is kernel code.
pub(crate) fn is_kernel(frame: &Frame) -> bool {
    frame.kind == FrameKind::Kernel
}

/// Names of the events that have samples and that `keep` refuses, for an
/// exporter's skipped line; `Err(Unsupported)` when no sample is kept.
pub(crate) fn partition_events(
    input: &ExportInput,
    format: &'static str,
    keep: impl Fn(EventKind) -> bool,
) -> Result<(Vec<bool>, ExportSummary), ExportError> {
    let mut used = vec![false; input.resolved.events.len()];
    for sample in &input.resolved.samples {
        if let Some(u) = used.get_mut(sample.event) {
            *u = true;
        }
    }
    if !used.iter().any(|&u| u) {
        return Err(ExportError::NoSamples);
    }
    let kept: Vec<bool> = (0..used.len())
        .map(|i| used[i] && keep(input.event(i).kind))
        .collect();
    let refused: Vec<String> = (0..used.len())
        .filter(|&i| used[i] && !kept[i])
        .map(|i| input.event(i).name)
        .collect();
    if !kept.iter().any(|&k| k) {
        return Err(ExportError::Unsupported {
            format,
            what: format!("tracepoint events ({})", refused.join(", ")),
        });
    }
    let mut summary = ExportSummary::default();
    if !refused.is_empty() {
        summary.skipped.push(format!(
            "{format} cannot hold tracepoint events: left out {}",
            refused.join(", ")
        ));
    }
    Ok((kept, summary))
}
