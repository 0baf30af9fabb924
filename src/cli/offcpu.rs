//! `scry offcpu`: where the time went while tasks were *not* running.
//! Records `sched:sched_switch` (and, with `--wakeup`, `sched_wakeup`)
//! system-wide with call chains, live, or reads them from a perf.data file
//! (`-i`: `perf record -a -g -e sched:sched_switch`, perf's own off-CPU
//! recipe); `analysis::offcpu` pairs each switch-out of a watched task with
//! its switch-in; the result prints as a report, folded stacks
//! (`--folded`), a flame graph (`--svg`) or an export (`--to`: pprof,
//! Firefox Profiler, speedscope, folded; weights in ns).
//!
//! `-i` is also how scry's pairing is checked against perf's exactly: two
//! recorders stamp one switch at two moments (each perf event takes its
//! own time, after the samples of the events before it on the tracepoint:
//! a call chain and a user stack, or a stall of a TCG guest's vCPU, up to
//! 16 ms apart were seen), so only one recording read by both agrees to
//! the nanosecond.

use std::ffi::OsString;
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;

use scry::analysis::folded::{FoldOptions, FoldedStacks};
use scry::analysis::offcpu::{OffCpuOptions, OffCpuTracker, Watch};
use scry::analysis::offcpu_live::{OffCpuFeed, SchedFields};
use scry::analysis::quality::QualitySummary;
use scry::capture::{CallGraph, CaptureOptions, DEFAULT_FP_STACK_SIZE, StopReason};
use scry::event::format::load_format;
use scry::event::name;
use scry::render::export::{EventKind, Format};
use scry::render::flamegraph::{FlameOptions, write_svg};
use scry::render::folded::{FoldedOptions, folded_lines, write_folded};
use scry::render::offcpu::{OffCpuSummary, write_report};
use scry::symbol::{ResolveOptions, Resolver};

use super::feed_consumer::capture_feed;
use super::target::WatchArgs;

#[derive(Args, Debug)]
pub(crate) struct OffcpuArgs {
    #[command(flatten)]
    watch: WatchArgs,
    /// Ignore switch-outs shorter than this many microseconds. Default 1.
    #[arg(long = "min-us", value_name = "US", default_value_t = 1)]
    min_us: u64,
    /// Join each blocked stack with the stack of the task that woke it (offwaketime,
    /// streamed; `scry offwaketime` sums the same in the kernel).
    #[arg(long)]
    wakeup: bool,
    /// Print folded stacks (`comm;root;...;leaf NANOSECONDS`) instead of the report.
    #[arg(long)]
    folded: bool,
    /// Also write an off-CPU flame graph (SVG) to this file.
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
    /// Stacks shown in the report. Default 10.
    #[arg(short = 'n', long = "stacks", value_name = "N", default_value_t = 10)]
    stacks: usize,
    /// The command to run and watch (`--` before it is optional, as with perf).
    #[arg(trailing_var_arg = true, value_name = "COMMAND")]
    command: Vec<OsString>,
    /// Read the switches from this perf.data file instead of recording
    /// (`perf record -a -g -e sched:sched_switch`): -p's processes, else
    /// every task.
    #[arg(
        short = 'i',
        long = "input",
        value_name = "FILE",
        conflicts_with = "command"
    )]
    input: Option<PathBuf>,
    /// Write only the flame graph (`scry flamegraph --offcpu`): no report.
    #[arg(skip)]
    pub(crate) svg_only: bool,
    /// Write the off-CPU stacks as this export instead of the report:
    /// pprof, firefox, speedscope, folded (weights in nanoseconds off CPU).
    #[arg(long = "to", value_name = "FORMAT", value_parser = super::convert::parse_format)]
    pub(crate) to: Option<Format>,
    /// With --to: the file (`-`: standard output). Default per format.
    #[arg(short = 'o', long = "output", requires = "to")]
    pub(crate) output: Option<PathBuf>,
}

pub(crate) fn run(args: OffcpuArgs) -> anyhow::Result<()> {
    let (feed, stop, ring_lost) = match &args.input {
        Some(path) => (from_file(path, &args)?, None, 0),
        None => {
            let (feed, outcome) = live(&args)?;
            let lost = outcome.per_cpu.values().map(|c| c.lost).sum();
            (feed, Some(outcome.stop), lost)
        }
    };
    report(&args, feed, ring_lost)?;
    match stop {
        Some(StopReason::TargetExited(status)) => super::workload_exit(status, &args.command),
        _ => Ok(()),
    }
}

/// The switches of `path` (a perf.data file with sched:sched_switch and
/// its tracepoint formats) through the same feed as a live run.
fn from_file(path: &std::path::Path, args: &OffcpuArgs) -> anyhow::Result<OffCpuFeed> {
    let pids = args.watch.pid.pids()?;
    let recipe = "'perf record -a -g -e sched:sched_switch'";
    super::sched::with_formats(path, recipe, |reader, formats| {
        let find = |name: &str| {
            formats.iter().enumerate().find_map(|(i, f)| {
                f.filter(|f| f.system == "sched" && f.name == name)
                    .map(|f| (i, f))
            })
        };
        let (switch_attr, switch) = find("sched_switch").with_context(|| {
            format!(
                "{} has no sched:sched_switch samples: record it with {recipe}",
                path.display()
            )
        })?;
        let wakeup = if args.wakeup {
            find("sched_wakeup")
        } else {
            None
        };
        let fields = SchedFields::new(switch_attr, switch, wakeup)
            .with_context(|| path.display().to_string())?;
        let watch = Watch {
            all: args.watch.all_cpus || pids.is_empty(),
            pids: pids.into_iter().collect(),
        };
        let mut feed = OffCpuFeed::new(
            OffCpuTracker::new(watch),
            Resolver::new(&ResolveOptions::default()),
            fields,
        );
        reader.feed(&mut feed)?;
        Ok(feed)
    })
}

/// Records the switches live while the command (or -p's processes) runs.
fn live(args: &OffcpuArgs) -> anyhow::Result<(OffCpuFeed, scry::capture::live::LiveOutcome)> {
    let pids = args.watch.live_pids("offcpu", &args.command)?;
    let root =
        scry::sys::tracefs::root().context("off-CPU analysis needs the sched tracepoints")?;
    let switch_format =
        load_format(root, "sched", "sched_switch").context("reading sched:sched_switch")?;
    let wakeup_format = if args.wakeup {
        Some(load_format(root, "sched", "sched_wakeup").context("reading sched:sched_wakeup")?)
    } else {
        None
    };
    let mut specs = vec![name::parse("sched:sched_switch")?];
    if args.wakeup {
        specs.push(name::parse("sched:sched_wakeup")?);
    }
    let events = name::resolve(&specs)?;
    let opts = CaptureOptions::every_switch(
        events,
        args.command.clone(),
        CallGraph::FramePointerStack {
            stack_size: DEFAULT_FP_STACK_SIZE,
        },
    );
    let fields = SchedFields::new(0, &switch_format, wakeup_format.as_ref().map(|f| (1, f)))?;

    let mut watch = Watch {
        all: args.watch.all_cpus,
        pids: pids.iter().copied().collect(),
    };
    capture_feed(&opts, true, |workload| {
        // With -p the command only times the capture, as in perf.
        if let Some(pid) = workload.filter(|_| pids.is_empty()) {
            watch.pids.insert(pid);
        }
        Ok(OffCpuFeed::new(
            OffCpuTracker::new(watch),
            Resolver::new(&ResolveOptions::default()),
            fields,
        ))
    })
}

/// The report, folded stacks, flame graph or export of `feed`'s switches
/// (`ring_lost`: records the live rings lost).
fn report(args: &OffcpuArgs, feed: OffCpuFeed, ring_lost: u64) -> anyhow::Result<()> {
    let undecodable = feed.undecodable;
    let scry::symbol::Resolution {
        samples: resolved,
        mut frames,
        lost,
        ..
    } = feed.resolver.finish();
    let options = OffCpuOptions {
        min_ns: args.min_us.saturating_mul(1000),
        wakeup: args.wakeup,
        exclude_comm: Some(scry::capture::session::WORKLOAD_PRE_EXEC_COMM.to_string()),
    };
    let result = feed.tracker.finish(resolved, &mut frames, &options);
    if undecodable > 0 {
        eprintln!("scry: {undecodable} sched samples had no decodable fields and were skipped");
    }
    if let Some(format) = args.to {
        return export(format, args.output.as_deref(), result.samples, frames, lost);
    }
    let folded = FoldedStacks::build(&result.samples, &FoldOptions::default());
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    if args.folded {
        write_folded(&mut out, &folded, &frames, FoldedOptions::default())?;
    } else if !args.svg_only {
        let summary = OffCpuSummary {
            total_ns: result.total_ns(),
            switches: result.samples.len() as u64,
            by_state: result.by_state.clone(),
            unmatched: result.unmatched,
            lost_dropped: result.lost_dropped,
            lost: lost.max(ring_lost),
            quality_line: QualitySummary::from_samples(&result.samples, &frames).line(),
        };
        write_report(&mut out, &summary, &folded, &frames, args.stacks)?;
    }
    out.flush()?;
    if let Some(path) = &args.svg {
        let lines = folded_lines(
            &folded,
            &frames,
            FoldedOptions {
                annotate_kernel: true,
            },
        );
        let options = FlameOptions {
            title: "Off-CPU Time Flame Graph".to_string(),
            count_name: "ns".to_string(),
            palette: scry::render::flamegraph::parse_palette("io")?,
            ..FlameOptions::default()
        };
        let file = super::create_private(path)?;
        write_svg(&lines, &options, BufWriter::new(file))
            .with_context(|| format!("writing {}", path.display()))?;
        if args.svg_only {
            eprintln!("scry: wrote {}", path.display());
        }
    }
    Ok(())
}

/// The off-CPU samples (period: nanoseconds off CPU) as an export.
fn export(
    format: Format,
    output: Option<&std::path::Path>,
    samples: Vec<scry::analysis::sample::ResolvedSample>,
    frames: scry::analysis::sample::FrameTable,
    lost: u64,
) -> anyhow::Result<()> {
    let stacks = super::convert::LiveStacks {
        samples,
        frames,
        lost,
        event: "off-cpu",
        kind: EventKind::OffCpu,
    };
    super::convert::export_stacks(format, output, stacks, "off-CPU samples")
}
