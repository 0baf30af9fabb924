//! `scry convert -i perf.data --to FORMAT [-o FILE]`: a recording →
//! `symbol::resolve_file` (merged or timed samples, with or without source
//! lines, as the format wants; for timelines also `analysis::sched`'s runs,
//! read as `scry sched timehist -i` reads them, and `analysis::pairs`'
//! event pairs, read as `scry heatmap --latency` reads them) → one
//! `render::export` exporter.
//!
//! `convert_file` and `write_export` are also the `--to` of `scry
//! flamegraph` (a file, or a command it records); `ToArgs` and
//! `export_stacks` are the `--to`/`-o` of the live tools that name stacks
//! themselves (`scry offcpu`, the BPF stack tools `offcputime` and
//! `wakeuptime`): their samples exported as one event.
//!
//! The output is created 0600 (it holds other processes' stacks and names);
//! `-o -` writes to standard output. What a format had to leave out is said
//! in one line on standard error; a format that can hold none of the file's
//! samples is an error (exit 2).

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;
use linux_perf_event_reader::{PerfEventType, SoftwareCounterType};

use scry::analysis::offcpu::Watch;
use scry::analysis::sched::SchedTracker;
use scry::data::reader::PerfReader;
use scry::render::export::{EventKind, ExportEvent, ExportInput, Format};
use scry::symbol::{ResolveOptions, resolve_file};

#[derive(Args, Debug)]
pub(crate) struct ConvertArgs {
    /// Input file (perf.data format). Default perf.data.
    #[arg(short = 'i', long = "input", default_value = "perf.data")]
    input: PathBuf,
    /// Output format: pprof, firefox, speedscope, chrome-trace, folded.
    #[arg(long = "to", value_name = "FORMAT", value_parser = parse_format)]
    to: Format,
    /// Output file; `-` for standard output. Default per format:
    /// profile.pb.gz, profile.firefox.json, profile.speedscope.json,
    /// trace.json, profile.folded.
    #[arg(short = 'o', long = "output")]
    output: Option<PathBuf>,
    /// Keep raw (mangled) symbol names.
    #[arg(long = "no-demangle")]
    no_demangle: bool,
}

/// `--to FORMAT [-o FILE]` of a live tool that makes stacks, flattened
/// into its flags (the BPF stack tools': one helper for all).
#[derive(Args, Clone, Debug, Default)]
pub(crate) struct ToArgs {
    /// Write the stacks as this export instead of the report: pprof,
    /// firefox, speedscope, chrome-trace, folded (times in nanoseconds).
    #[arg(long = "to", value_name = "FORMAT", value_parser = parse_format)]
    pub(crate) to: Option<Format>,
    /// With --to: the file (`-`: standard output). Default per format.
    #[arg(short = 'o', long = "output", requires = "to")]
    pub(crate) output: Option<PathBuf>,
}

/// Stacks a live tool named, as one event of an export.
pub(crate) struct LiveStacks {
    pub(crate) samples: Vec<scry::analysis::sample::ResolvedSample>,
    pub(crate) frames: scry::analysis::sample::FrameTable,
    /// Events the kernel reported lost.
    pub(crate) lost: u64,
    /// The event's name in the export (`off-cpu`, `wakeup`).
    pub(crate) event: &'static str,
    /// What a sample's period is (`EventKind::OffCpu`: nanoseconds).
    pub(crate) kind: EventKind,
}

/// Writes `stacks` as `format` to `output` (default: the format's file
/// name; `-` standard output), created 0600, through [`write_export`];
/// `tool` names the source in errors.
pub(crate) fn export_stacks(
    format: Format,
    output: Option<&Path>,
    stacks: LiveStacks,
    tool: &str,
) -> anyhow::Result<()> {
    let resolved = scry::symbol::Resolved {
        samples: stacks.samples,
        frames: stacks.frames,
        events: vec![scry::symbol::EventInfo {
            name: stacks.event.into(),
        }],
        stats: Default::default(),
        lost: stacks.lost,
    };
    let input = ExportInput {
        resolved: &resolved,
        events: vec![ExportEvent {
            name: stacks.event.into(),
            kind: stacks.kind,
        }],
        build_ids: Vec::new(),
        runs: &[],
        pairs: None,
    };
    write_export(format, &input, output, Path::new(tool))
}

/// A `--to` that names no export.
#[derive(Debug, thiserror::Error)]
#[error("unknown format '{0}' (known: {known})", known = Format::NAMES.join(", "))]
pub(super) struct UnknownFormat(String);

pub(super) fn parse_format(name: &str) -> Result<Format, UnknownFormat> {
    Format::parse(name).ok_or_else(|| UnknownFormat(name.to_owned()))
}

fn event_kind(kind: &PerfEventType) -> EventKind {
    match kind {
        PerfEventType::Software(SoftwareCounterType::CpuClock | SoftwareCounterType::TaskClock) => {
            EventKind::Clock
        }
        PerfEventType::Tracepoint(_) => EventKind::Tracepoint,
        _ => EventKind::Counter,
    }
}

pub(crate) fn run(args: ConvertArgs) -> anyhow::Result<()> {
    convert_file(
        &args.input,
        args.to,
        args.output.as_deref(),
        !args.no_demangle,
    )
}

/// A perf.data file exported as `format` to `output` (`-`: standard
/// output; default: the format's file name): what `scry convert` does,
/// and `scry flamegraph --to` with a file or a recorded command.
pub(super) fn convert_file(
    path: &Path,
    format: Format,
    output: Option<&Path>,
    demangle: bool,
) -> anyhow::Result<()> {
    let wants = format.wants();
    // The events' kinds and the build ids come from the header; the
    // samples from the resolver, which reads the file again.
    let reader = PerfReader::open(path).with_context(|| format!("reading {}", path.display()))?;
    let events: Vec<ExportEvent> = reader
        .events()
        .iter()
        .map(|e| ExportEvent {
            name: e.name.clone(),
            kind: event_kind(&e.attr.type_),
        })
        .collect();
    let build_ids = reader
        .build_ids_raw()
        .unwrap_or_default()
        .into_iter()
        .map(|(file, id)| {
            let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
            (String::from_utf8_lossy(&file).into_owned(), hex)
        })
        .collect();
    drop(reader);
    let options = ResolveOptions {
        demangle,
        merge_samples: wants.merged,
        srcline: wants.srcline,
        ..ResolveOptions::default()
    };
    let resolved =
        resolve_file(path, &options).with_context(|| format!("reading {}", path.display()))?;
    // Timelines: the scheduler's runs, from `scry sched timehist`'s tracker.
    let mut runs = Vec::new();
    if wants.runs && events.iter().any(|e| e.name == "sched:sched_switch") {
        let watch = Watch {
            all: true,
            ..Watch::default()
        };
        let mut tracker = super::sched::from_file(path, SchedTracker::new(watch, true))?.tracker;
        tracker.finish();
        runs = tracker.rows;
    }
    // Timelines: the event pairs, as `scry heatmap --latency` reads them.
    let mut pairs = None;
    if wants.runs && events.iter().any(|e| e.kind == EventKind::Tracepoint) {
        use scry::analysis::pairs_file::{FileWatch, PairsFileError, pairs_of_file};
        // Tracepoints none of which starts or ends a pair (block:*) have
        // no pairs to draw; they are still the trace's instants.
        match pairs_of_file(path, &FileWatch::default(), true) {
            Ok((mut feed, _)) => {
                feed.engine.finish();
                pairs = feed.engine.log.take();
            }
            Err(PairsFileError::NoHooks { .. }) => {}
            Err(err) => return Err(err.into()),
        }
    }
    let input = ExportInput {
        resolved: &resolved,
        events,
        build_ids,
        runs: &runs,
        pairs: pairs.as_ref(),
    };
    write_export(format, &input, output, path)
}

/// Writes an export of `source` (named in errors) to `output` (`-`:
/// standard output; default: the format's file name), created 0600; a
/// refused export leaves no file. Says on standard error what the format
/// left out.
pub(super) fn write_export(
    format: Format,
    input: &ExportInput,
    output: Option<&Path>,
    source: &Path,
) -> anyhow::Result<()> {
    let out_path = output.map_or_else(
        || PathBuf::from(format.default_file_name()),
        Path::to_path_buf,
    );
    let to_stdout = out_path.as_os_str() == "-";
    let mut out: Box<dyn Write> = if to_stdout {
        Box::new(BufWriter::with_capacity(1 << 16, std::io::stdout().lock()))
    } else {
        Box::new(BufWriter::with_capacity(
            1 << 16,
            super::create_private(&out_path)?,
        ))
    };
    let result = format.exporter().write(input, &mut out);
    let summary = match result {
        Ok(summary) => summary,
        Err(err) => {
            drop(out);
            if !to_stdout {
                let _ = std::fs::remove_file(&out_path);
            }
            return Err(err).with_context(|| format!("{}", source.display()));
        }
    };
    out.flush()
        .with_context(|| format!("writing {}", out_path.display()))?;
    for line in &summary.skipped {
        eprintln!("scry: {line}");
    }
    if !to_stdout {
        eprintln!("scry: wrote {}", out_path.display());
    }
    Ok(())
}
