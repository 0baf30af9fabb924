//! `scry sched runqlat` and `scry sched timehist`: run-queue latency as a
//! log2 histogram (bcc's runqlat) and a per-switch timeline (perf sched
//! timehist), live (`-a`, `-p`, `-- COMMAND`) or from a perf.data file
//! (`-i`, from `perf sched record` or `scry record --profile`). Live
//! runqlat counts in the kernel with BPF (`cli::runqlat`); `--no-bpf`,
//! timehist, and a kernel without BPF stream the sched tracepoints and
//! context-switch records instead. Wiring only: `analysis::sched_feed` →
//! `analysis::sched` → `render::sched`.

use std::ffi::OsString;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::{Args, Subcommand};

use scry::analysis::hist::KeyedHistogram;
use scry::analysis::offcpu::Watch;
use scry::analysis::sched::SchedTracker;
use scry::analysis::sched_feed::SchedFeed;
use scry::capture::{CallGraph, CaptureOptions, StopReason};
use scry::event::format::{EventFormat, load_format};
use scry::event::name;
use scry::render::sched::{
    SchedSummary, write_runqlat, write_runqlat_json, write_timehist, write_timehist_json,
};

use super::feed_consumer::capture_feed;
use super::runqlat::{SchedLive, sched_live};
use super::target::WatchArgs;

#[derive(Args, Debug)]
pub(crate) struct SchedArgs {
    #[command(subcommand)]
    command: SchedCommand,
}

#[derive(Subcommand, Debug)]
enum SchedCommand {
    /// Run-queue latency histogram: wakeup or preemption to running, log2 µs buckets (runqlat)
    Runqlat(RunArgs),
    /// Per switch-out: wait time, scheduling delay and run time of each task (perf sched timehist)
    Timehist(RunArgs),
}

#[derive(Args, Debug)]
#[command(mut_arg("pid", |a| a.help(
    "Watch these processes (and what they fork): PID[,PID...]. With -i: pick them from the file."
)))]
struct RunArgs {
    #[command(flatten)]
    watch: WatchArgs,
    /// Read this perf.data file (perf sched record, scry record --profile) instead of tracing live.
    #[arg(short = 'i', long = "input", value_name = "FILE", conflicts_with_all = ["all_cpus", "command"])]
    input: Option<PathBuf>,
    /// text (default) or json.
    #[arg(long, value_name = "FORMAT", default_value = "text")]
    format: String,
    /// Write the output here instead of stdout.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Option<PathBuf>,
    /// runqlat: milliseconds (default: microseconds).
    #[arg(short = 'm', long = "milliseconds")]
    milliseconds: bool,
    #[command(flatten)]
    per: super::runqlat::PerArgs,
    /// runqlat: stream the sched events through perf_event rings instead of counting in the kernel with BPF.
    #[arg(long = "no-bpf")]
    no_bpf: bool,
    /// Say which kernel hooks the BPF programs use.
    #[arg(short = 'v', long = "verbose")]
    verbose: bool,
    /// The command to run and watch (`--` before it is optional, as with perf).
    #[arg(trailing_var_arg = true, value_name = "COMMAND")]
    command: Vec<OsString>,
}

pub(crate) fn run(args: SchedArgs) -> anyhow::Result<()> {
    let (timehist, args) = match args.command {
        SchedCommand::Runqlat(a) => (false, a),
        SchedCommand::Timehist(a) => (true, a),
    };
    let json = match args.format.as_str() {
        "text" => false,
        "json" => true,
        other => anyhow::bail!("--format: unknown format '{other}' (text or json)"),
    };
    let pids = match args.input {
        Some(_) => args.watch.pid.pids()?,
        None => args.watch.live_pids("sched", &args.command)?,
    };
    let watch = Watch {
        all: pids.is_empty() && (args.watch.all_cpus || args.input.is_some()),
        pids: pids.iter().copied().collect(),
    };
    if timehist && (args.milliseconds || args.per.keyed()) {
        anyhow::bail!("-m, -P, -L and --pidnss are runqlat's: timehist prints every switch");
    }
    let mut tracker = SchedTracker::new(watch, timehist);
    if args.milliseconds {
        tracker = tracker.in_milliseconds();
    }
    if !timehist && args.input.is_none() && !args.no_bpf {
        let live = SchedLive {
            command: &args.command,
            pids: &pids,
            per: args.per,
            milliseconds: args.milliseconds,
            verbose: args.verbose,
        };
        if let Some((hists, status)) = sched_live(&live)? {
            let mut out = output(args.output.as_deref())?;
            if json {
                write_runqlat_json(&mut out, &hists, &SchedSummary::default())?;
            } else {
                write_runqlat(&mut out, &hists, &SchedSummary::default())?;
            }
            out.flush()?;
            return super::workload_exit(status, &args.command);
        }
    }
    if args.per.keyed() {
        anyhow::bail!("-P, -L and --pidnss count in the kernel: live, without --no-bpf");
    }
    let (feed, outcome_lost, stop) = match &args.input {
        Some(path) => (from_file(path, tracker)?, 0, None),
        None => {
            let (feed, lost, stop) = live(&args.command, tracker)?;
            (feed, lost, Some(stop))
        }
    };
    let SchedFeed {
        mut tracker,
        comms,
        lost,
        undecodable,
        ..
    } = feed;
    tracker.finish();
    if undecodable > 0 {
        eprintln!("scry: {undecodable} sched samples had no decodable fields and were skipped");
    }
    let summary = SchedSummary {
        lost: lost.count().max(outcome_lost),
        lost_dropped: tracker.lost_dropped,
    };
    let mut out = output(args.output.as_deref())?;
    let runqlat = [KeyedHistogram {
        key: 0,
        label: String::new(),
        hist: tracker.runqlat.clone(),
    }];
    match (timehist, json) {
        (false, false) => write_runqlat(&mut out, &runqlat, &summary)?,
        (false, true) => write_runqlat_json(&mut out, &runqlat, &summary)?,
        (true, false) => write_timehist(&mut out, &tracker.rows, &comms, &summary)?,
        (true, true) => write_timehist_json(&mut out, &tracker.rows, &comms, &summary)?,
    }
    out.flush()?;
    match stop {
        Some(StopReason::TargetExited(status)) => super::workload_exit(status, &args.command),
        _ => Ok(()),
    }
}

/// Where the output goes: the file (created 0600) or stdout.
fn output(path: Option<&Path>) -> anyhow::Result<Box<dyn Write>> {
    Ok(match path {
        Some(path) => Box::new(BufWriter::new(super::create_private(path)?)),
        None => Box::new(BufWriter::new(io::stdout())),
    })
}

/// Trace live: sched_switch and the wakeups, every event, no stacks,
/// context-switch records; the whole system (wakeups fire in the waker).
fn live(
    command: &[OsString],
    mut tracker: SchedTracker,
) -> anyhow::Result<(SchedFeed, u64, StopReason)> {
    let root = scry::sys::tracefs::root().context("scry sched needs the sched tracepoints")?;
    let names = ["sched_switch", "sched_wakeup", "sched_wakeup_new"];
    let formats: Vec<EventFormat> = names
        .iter()
        .map(|n| load_format(root, "sched", n).with_context(|| format!("reading sched:{n}")))
        .collect::<anyhow::Result<_>>()?;
    let specs: Vec<_> = names
        .iter()
        .map(|n| name::parse(&format!("sched:{n}")))
        .collect::<Result<_, _>>()?;
    let events = name::resolve(&specs)?;
    let opts = CaptureOptions::every_switch(events, command.to_vec(), CallGraph::None);
    let (feed, outcome) = capture_feed(&opts, false, |workload| {
        // With -p the command only times the capture, as in perf.
        if let Some(pid) = workload.filter(|_| tracker.watch.pids.is_empty()) {
            tracker.watch.pids.insert(pid);
        }
        let refs: Vec<Option<&EventFormat>> = formats.iter().map(Some).collect();
        Ok(SchedFeed::new(tracker, &refs)?)
    })?;
    let lost = outcome.per_cpu.values().map(|c| c.lost).sum();
    Ok((feed, lost, outcome.stop))
}

/// Read a perf.data file with the sched tracepoints.
pub(super) fn from_file(path: &Path, tracker: SchedTracker) -> anyhow::Result<SchedFeed> {
    with_formats(
        path,
        "'perf sched record' or 'scry record --profile'",
        |reader, formats| {
            let mut feed =
                SchedFeed::new(tracker, formats).with_context(|| path.display().to_string())?;
            reader.feed(&mut feed)?;
            Ok(feed)
        },
    )
}

/// Opens the perf.data file `path` and hands `read` the reader and each
/// event's tracepoint format (None for an event that is no tracepoint),
/// from the file's tracing data; `record` says how to record a file that
/// has none. `scry sched` and `scry offcpu -i` read their files so.
pub(super) fn with_formats<T>(
    path: &Path,
    record: &str,
    read: impl FnOnce(&mut scry::data::reader::PerfReader, &[Option<&EventFormat>]) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    use scry::data::reader::PerfReader;
    use scry::event::tracing_data_parse::parse_tracing_data;

    let mut reader = PerfReader::open(path)?; // its errors name the file
    let blob = reader.tracing_data().with_context(|| {
        format!(
            "{} has no tracepoint formats (TRACING_DATA): record it with {record}",
            path.display()
        )
    })?;
    let tracing = parse_tracing_data(blob)
        .map_err(|e| anyhow::anyhow!("{}: tracing data: {e}", path.display()))?;
    let formats: Vec<Option<&EventFormat>> = reader
        .events()
        .iter()
        .map(|e| match e.attr.type_ {
            linux_perf_event_reader::PerfEventType::Tracepoint(id) => {
                tracing.formats.iter().find(|f| f.id == id)
            }
            _ => None,
        })
        .collect();
    read(&mut reader, &formats)
}
