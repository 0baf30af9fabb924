//! `scry profile`: trace-cmd profile's event-pair latencies, per task, with
//! the stacks where tasks blocked. Records the default hook events (and the
//! `-H` hooks' events) system-wide, live; `analysis::pairs` pairs them;
//! `render::profile` prints the report. Call chains are taken on the
//! sched_switch switch-outs where a task blocks (`split_switch`) and on the
//! start events of `s` hooks only; switch-ins come
//! from context-switch records. Also the two halves of `scry record
//! --profile` / `scry report --profile` (`record_functions`, `report_file`),
//! which feed the same `analysis::pairs_feed` from a perf.data file, and
//! the function tracer's flags both commands take (`FunctionTracerArgs`).
//!
//! Live, the default hooks' system calls, page faults and interrupts are
//! summed in the kernel by a BPF program (`sys::bpf_profile`) instead of
//! being streamed (millions of records a second under a syscall storm):
//! only the scheduler events, which need stacks and matching across tasks,
//! go through the perf rings. Where BPF cannot load (no CAP_BPF, an old
//! kernel) one line says so and everything is streamed, as `--no-bpf` does.
//!
//! Kernel functions: trace-cmd profile's default, the `function_graph`
//! tracer at depth 1 (each task's outermost kernel functions: system calls,
//! faults, interrupts) for the profiled tasks, summed per task and function
//! (`analysis::funcgraph`) into `func: NAME()` rows; `-l`/`-n` pick the
//! functions, `--tracer function` counts calls instead. The tracer is the
//! kernel's global one (`sys::ftrace`: restored after the run, even after a
//! SIGKILL); where the kernel lacks it one line says so and the rest runs.
//! The program and the tracer run beside the capture in
//! `capture::profile_kernel`; their results join the pairs in `analysis`.

use std::ffi::OsString;
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;

use scry::analysis::funcgraph::function_rows;
use scry::analysis::pairs::{Hook, PairEngine};
use scry::analysis::pairs_feed::PairsFeed;
use scry::analysis::pairs_file::{FileWatch, pairs_of_file};
use scry::analysis::pairs_plan::PairsPlan;
use scry::analysis::pairs_report::{CpuStat, build_report, syscall_names};
use scry::capture::StopReason;
use scry::capture::profile_events::hook_capture;
use scry::capture::profile_kernel::{ProfileKernel, RecordFunctions};
use scry::render::profile::{write_json, write_text};
use scry::symbol::{ResolveOptions, Resolver};
use scry::sys::bpf_profile::{Covered, KernelSums};
use scry::sys::ftrace::TracerOptions;

use super::feed_consumer::capture_feed;
use super::target::WatchArgs;

#[derive(Args, Debug)]
pub(crate) struct ProfileArgs {
    #[command(flatten)]
    watch: WatchArgs,
    /// A custom hook: START[,MATCH[,PID]]/END[,MATCH][,FLAGS] (flags: s stack, p pinned, g global).
    #[arg(short = 'H', long = "hook", value_name = "HOOK")]
    hooks: Vec<String>,
    /// Only the -H hooks, not the default ones.
    #[arg(long)]
    no_default_hooks: bool,
    /// Write the report here instead of stdout.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Option<PathBuf>,
    /// Write the report to stderr (trace-cmd profile --stderr).
    #[arg(long)]
    stderr: bool,
    /// text (default) or json.
    #[arg(long, value_name = "FORMAT", default_value = "text")]
    format: String,
    /// Stream system calls, page faults and interrupts through the perf
    /// rings instead of summing them in the kernel with BPF (default: BPF
    /// where it loads; this is also the fallback where it does not).
    #[arg(long)]
    no_bpf: bool,
    #[command(flatten)]
    functions: FunctionTracerArgs,
    /// The command to run and profile (`--` before it is optional, as with perf).
    #[arg(trailing_var_arg = true, value_name = "COMMAND")]
    command: Vec<OsString>,
}

/// The kernel's function tracer as trace-cmd profile takes it: `scry
/// profile`'s flags, and `scry record --profile`'s (which keeps its rows in
/// the file).
#[derive(Args, Debug, Default)]
pub(crate) struct FunctionTracerArgs {
    /// The kernel's function tracer: function_graph (durations; the default,
    /// as trace-cmd profile), function (counts), or nop (none); `-p TRACER`
    /// too, as trace-cmd profile takes it (`-p` with a number is a pid).
    #[arg(long, value_name = "TRACER")]
    tracer: Option<String>,
    /// function_graph's depth: 1 (the default) times each task's outermost
    /// kernel functions; 0 is no limit.
    #[arg(long, value_name = "N")]
    graph_depth: Option<u32>,
    /// Trace only the kernel functions matching GLOB (set_ftrace_filter; repeatable).
    #[arg(short = 'l', long = "func", value_name = "GLOB")]
    funcs: Vec<String>,
    /// Do not trace the kernel functions matching GLOB (set_ftrace_notrace; repeatable).
    #[arg(short = 'n', long = "notrace", value_name = "GLOB")]
    notrace: Vec<String>,
}

/// The tracers `--tracer` (and trace-cmd's `-p`) name.
const TRACERS: [&str; 3] = ["function_graph", "function", "nop"];

impl FunctionTracerArgs {
    /// trace-cmd profile's `-p TRACER`: `-p` is perf's pid list here, and a
    /// tracer's name is never one, so the name picks the tracer.
    pub(super) fn take_tracer_from(&mut self, pid: &mut Option<String>) {
        if let Some(tracer) = pid.take_if(|p| TRACERS.contains(&p.as_str())) {
            self.tracer = Some(tracer);
        }
    }

    /// Whether any of these flags was given.
    pub(super) fn given(&self) -> bool {
        self.tracer.is_some()
            || self.graph_depth.is_some()
            || !self.funcs.is_empty()
            || !self.notrace.is_empty()
    }

    /// The tracer's options (the pids are chosen when it starts).
    pub(super) fn options(&self) -> anyhow::Result<TracerOptions> {
        let tracer = self.tracer.as_deref().unwrap_or("function_graph");
        if !TRACERS.contains(&tracer) {
            anyhow::bail!("--tracer: unknown tracer '{tracer}' (function_graph, function or nop)");
        }
        Ok(TracerOptions {
            tracer: tracer.to_string(),
            depth: self.graph_depth.unwrap_or(1),
            filters: self.funcs.clone(),
            notrace: self.notrace.clone(),
            ..TracerOptions::default()
        })
    }
}

/// `scry record --profile`'s function tracer (`capture::to_file` runs it),
/// unless its tracer is nop.
pub(super) fn record_functions(
    args: &FunctionTracerArgs,
) -> anyhow::Result<Option<RecordFunctions>> {
    let options = args.options()?;
    if options.tracer == "nop" {
        return Ok(None);
    }
    let root = scry::sys::tracefs::root().context("--profile needs tracepoints")?;
    Ok(Some(RecordFunctions {
        root: root.to_path_buf(),
        options,
        watchdog: super::ftrace_watchdog(root),
        rows: function_rows,
    }))
}

/// `-H` hooks, parsed (the first that does not parse is the error).
pub(super) fn parse_hooks(hooks: &[String]) -> anyhow::Result<Vec<Hook>> {
    hooks
        .iter()
        .map(|h| Hook::parse(h))
        .collect::<Result<_, _>>()
        .context("-H")
}

/// `scry record --profile` (and `-H`, which implies it): the default hooks'
/// events and the `hooks`' (their stacks with `s`), system-wide, checked
/// as --profile checks its target.
pub(super) fn record_options(
    target: &scry::capture::Target,
    hooks: &[String],
    mmap_pages: Option<usize>,
) -> anyhow::Result<scry::capture::CaptureOptions> {
    let defaults = scry::capture::profile_events::record_options(target, mmap_pages)?;
    if hooks.is_empty() {
        return Ok(defaults);
    }
    let hooks = parse_hooks(hooks)?;
    let root = scry::sys::tracefs::root().context("--profile needs tracepoints")?;
    let all = scry::sys::tracefs::list_events().context("listing tracepoints")?;
    let plan = PairsPlan::new(root, &all, &hooks, true, Covered::default())?;
    Ok(hook_capture(
        &plan.events,
        &plan.stack_events,
        plan.filters,
        target.command.clone(),
        mmap_pages,
    )?)
}

/// The `-H` hooks a file was recorded with: the values of `-H`/`--hook`
/// in its command line (`scry record -H HOOK`), as trace-cmd keeps
/// record's hooks in its trace.dat for `report --profile`.
fn recorded_hooks(input: &std::path::Path) -> Vec<String> {
    let Ok(reader) = scry::data::reader::PerfReader::open(input) else {
        return Vec::new();
    };
    let cmdline = reader
        .info()
        .ok()
        .and_then(|i| i.cmdline().map(<[String]>::to_vec));
    let Some(words) = cmdline.filter(|w| w.get(1).is_some_and(|c| c == "record")) else {
        return Vec::new();
    };
    let mut hooks = Vec::new();
    let mut words = words.iter().skip(2);
    while let Some(w) = words.next() {
        if w == "--" {
            break;
        }
        if w == "-H" || w == "--hook" {
            hooks.extend(words.next().cloned());
        } else if let Some(h) = w.strip_prefix("--hook=") {
            hooks.push(h.to_string());
        } else if let Some(h) = w.strip_prefix("-H").filter(|h| !h.is_empty()) {
            hooks.push(h.to_string());
        }
    }
    hooks
}

/// `scry report --profile`: the pairs of a perf.data file (from `scry
/// record --profile`, or any file with the hook tracepoints), printed as
/// `scry profile` prints them; without `-H`, the hooks it was recorded with.
pub(super) fn report_file(
    input: &std::path::Path,
    json: bool,
    mut watch: FileWatch,
) -> anyhow::Result<()> {
    if watch.hooks.is_empty() {
        watch.hooks = parse_hooks(&recorded_hooks(input))
            .with_context(|| format!("{}: the hooks it was recorded with", input.display()))?;
    }
    let (feed, cpus) = pairs_of_file(input, &watch, false)?;
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    write_report(feed, cpus.into_values().collect(), None, json, &mut out)?;
    out.flush()?;
    Ok(())
}

/// The engine's results (with the kernel's sums, when BPF ran), grouped
/// and printed (text or JSON).
fn write_report(
    feed: PairsFeed,
    cpus: Vec<CpuStat>,
    kernel: Option<(KernelSums, Covered)>,
    json: bool,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let (report, frames, undecodable) = build_report(feed, cpus, kernel);
    if undecodable > 0 {
        eprintln!("scry: {undecodable} samples had no decodable fields and were skipped");
    }
    let mut out = out;
    if json {
        write_json(&mut out, &report, &frames)?;
    } else {
        write_text(&mut out, &report, &frames)?;
    }
    Ok(())
}

pub(crate) fn run(mut args: ProfileArgs) -> anyhow::Result<()> {
    args.functions.take_tracer_from(&mut args.watch.pid.pid);
    let tracer = args.functions.options()?;
    let json = match args.format.as_str() {
        "text" => false,
        "json" => true,
        other => anyhow::bail!("--format: unknown format '{other}' (text or json)"),
    };
    let pids = args.watch.live_pids("profile", &args.command)?;
    let hooks = parse_hooks(&args.hooks)?;
    let root = scry::sys::tracefs::root().context("profile needs tracepoints")?;
    let all = scry::sys::tracefs::list_events().context("listing tracepoints")?;

    // Sum what BPF can in the kernel; stream only the rest.
    let want_bpf = !(args.no_default_hooks || args.no_bpf);
    let (mut kernel, refused) = ProfileKernel::load(want_bpf, args.watch.all_cpus);
    if let Some(why) = refused {
        eprintln!("scry: {why}");
    }
    kernel.watch(&pids)?;
    let covered = kernel.covered();
    let plan = PairsPlan::new(root, &all, &hooks, !args.no_default_hooks, covered)?;
    let opts = hook_capture(
        &plan.events,
        &plan.stack_events,
        plan.filters,
        args.command.clone(),
        None,
    )?;

    let mut engine = PairEngine::new(plan.roles, plan.hook_events, syscall_names());
    engine.all = args.watch.all_cpus;
    engine.pids.extend(pids.iter().copied());

    let (mut feed, outcome) = capture_feed(&opts, true, |workload| {
        // With -p the command only times the capture, as in perf.
        if let Some(pid) = workload.filter(|_| pids.is_empty()) {
            engine.pids.insert(pid);
            kernel.watch_workload(pid)?;
        }
        let watchdog = super::ftrace_watchdog(root);
        if let Err(why) = kernel.start_tracer(root, tracer, workload, watchdog) {
            eprintln!("scry: {why}");
        }
        let mut feed = PairsFeed::new(
            engine,
            Resolver::new(&ResolveOptions::default()),
            plan.formats.into_iter().map(Some).collect(),
            plan.wanted,
        );
        if let Some((copy, switch)) = plan.switch_copy {
            feed.alias(copy, switch);
        }
        Ok(feed)
    })?;
    let results = kernel.finish()?;
    if let Some(text) = &results.trace {
        feed.add_function_trace(text);
    }

    let cpus = outcome
        .per_cpu
        .iter()
        .map(|(&cpu, s)| CpuStat {
            cpu,
            records: s.records,
            bytes: s.bytes,
            lost: s.lost,
        })
        .collect();
    let mut out: Box<dyn Write> = match (&args.output, args.stderr) {
        (Some(path), _) => Box::new(BufWriter::new(super::create_private(path)?)),
        (None, true) => Box::new(BufWriter::new(io::stderr())),
        (None, false) => Box::new(BufWriter::new(io::stdout())),
    };
    write_report(feed, cpus, results.sums, json, &mut out)?;
    out.flush()?;
    match outcome.stop {
        StopReason::TargetExited(status) => super::workload_exit(status, &args.command),
        _ => Ok(()),
    }
}
