//! `scry profile`: trace-cmd profile's event-pair latencies, per task, with
//! the stacks where tasks blocked. Records the default hook events (and the
//! `-H` hooks' events) system-wide, live; `analysis::pairs` pairs them;
//! `render::profile` prints the report. Call chains are taken on the
//! sched_switch switch-outs where a task blocks (`split_switch`) and on the
//! start events of `s` hooks only; switch-ins come
//! from context-switch records. Also the two halves of `scry record
//! --profile` / `scry report --profile` (`record_options`, `report_file`),
//! which feed the same `analysis::pairs_feed` from a perf.data file.
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

use std::collections::{BTreeMap, HashMap};
use std::ffi::OsString;
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use linux_perf_event_reader::EventRecord;

use scry::analysis::pairs::{Builtin, Hook, PairEngine, PairStat, SummedKind};
use scry::analysis::pairs_feed::{PairsFeed, wanted_fields};
use scry::analysis::sample::ResolvedSample;
use scry::capture::{CallGraph, CaptureOptions, DEFAULT_FP_STACK_SIZE, StopReason, Target};
use scry::event::format::{EventFormat, load_format};
use scry::event::name::{self, ResolvedEvent};
use scry::render::profile::{
    CpuStat, KernelNote, ProfileReport, StackStat, write_json, write_text,
};
use scry::symbol::{ResolveOptions, Resolver};
use scry::sys::bpf_profile::{self, Covered, KernelSums, ProfileBpf};
use scry::sys::ftrace::{FunctionTracer, TracerOptions};

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
    /// The kernel's function tracer: function_graph (durations; the default,
    /// as trace-cmd profile), function (counts), or nop (none).
    #[arg(long, value_name = "TRACER", default_value = "function_graph")]
    tracer: String,
    /// function_graph's depth: 1 (the default) times each task's outermost
    /// kernel functions; 0 is no limit.
    #[arg(long, value_name = "N", default_value_t = 1)]
    graph_depth: u32,
    /// Trace only the kernel functions matching GLOB (set_ftrace_filter; repeatable).
    #[arg(short = 'l', long = "func", value_name = "GLOB")]
    funcs: Vec<String>,
    /// Do not trace the kernel functions matching GLOB (set_ftrace_notrace; repeatable).
    #[arg(short = 'n', long = "notrace", value_name = "GLOB")]
    notrace: Vec<String>,
    /// The command to run and profile (`--` before it is optional, as with perf).
    #[arg(trailing_var_arg = true, value_name = "COMMAND")]
    command: Vec<OsString>,
}

const DEFAULT_EVENTS: &[(&str, &str)] = &[
    ("sched", "sched_switch"),
    ("sched", "sched_waking"),
    ("sched", "sched_wakeup"),
    ("raw_syscalls", "sys_enter"),
    ("raw_syscalls", "sys_exit"),
    ("irq", "irq_handler_entry"),
    ("irq", "irq_handler_exit"),
    ("irq", "softirq_raise"),
    ("irq", "softirq_entry"),
    ("irq", "softirq_exit"),
    ("exceptions", "page_fault_user"),
    ("exceptions", "page_fault_kernel"),
];

/// `name` or `system:name` → (system, name), looked up in tracefs.
fn find_event(text: &str, all: &[(String, String)]) -> anyhow::Result<(String, String)> {
    if let Some((system, event)) = text.split_once(':') {
        if all.iter().any(|(s, e)| s == system && e == event) {
            return Ok((system.to_string(), event.to_string()));
        }
        anyhow::bail!("unknown event '{text}' (see 'scry list')");
    }
    let matches: Vec<_> = all.iter().filter(|(_, e)| e == text).collect();
    match matches.as_slice() {
        [(s, e)] => Ok((s.clone(), e.clone())),
        [] => anyhow::bail!("unknown event '{text}' (see 'scry list')"),
        _ => anyhow::bail!("event name '{text}' is ambiguous: give it as system:name"),
    }
}

fn group_stacks(stacks: &[(usize, u64)], resolved: &[ResolvedSample]) -> Vec<StackStat> {
    let mut by_stack: HashMap<&[scry::analysis::sample::FrameId], StackStat> = HashMap::new();
    for &(seq, duration) in stacks {
        let Some(sample) = resolved.get(seq) else {
            continue;
        };
        let entry = by_stack
            .entry(&sample.stack[..])
            .or_insert_with(|| StackStat {
                frames: sample.stack.to_vec(),
                count: 0,
                total: 0,
                max: 0,
                min: u64::MAX,
            });
        entry.count += 1;
        entry.total += duration;
        entry.max = entry.max.max(duration);
        entry.min = entry.min.min(duration);
    }
    let mut out: Vec<StackStat> = by_stack.into_values().collect();
    out.sort_by(|a, b| b.total.cmp(&a.total).then(a.frames.cmp(&b.frames)));
    out
}

/// The default hooks' events that exist here, in `DEFAULT_EVENTS` order.
fn default_events(all: &[(String, String)]) -> Vec<(String, String)> {
    DEFAULT_EVENTS
        .iter()
        .filter(|(s, e)| all.iter().any(|(a, b)| a == s && b == e))
        // sched_waking is the wakeup where it exists: sched_wakeup is then
        // superfluous.
        .filter(|&&(s, e)| {
            !(s == "sched"
                && e == "sched_wakeup"
                && all.iter().any(|(a, b)| a == "sched" && b == "sched_waking"))
        })
        .map(|(s, e)| (s.to_string(), e.to_string()))
        .collect()
}

/// sched_switch's two halves when stacks are taken only where tasks block
/// (`split_switch`): the switch-outs `analysis::offcpu::state_letter` calls
/// blocked (a state bit in the low byte: S, D, I, ...), whose stacks the
/// report shows, and the rest (preemptions, `R+`, and every switch-out of
/// an idle task), which need none. Complements, so each switch is in one.
const SWITCH_BLOCKED: &str = "prev_state & 255";
const SWITCH_NOT_BLOCKED: &str = "!(prev_state & 255)";

/// Opens sched_switch (`events[switch]`) twice: itself, filtered to the
/// blocking switch-outs, keeps its call chains; a copy appended to
/// `events`, filtered to the others, takes none. A kernel call chain costs
/// microseconds (the unwinder walks a dozen frames), and a blocking
/// switch-out is the only one whose stack the report shows: preemptions
/// and idle tasks' switch-outs are a fifth of the switches of a messaging
/// storm and half those of a ping-pong. Returns the copy's index and the
/// filters of both halves.
fn split_switch(
    events: &mut Vec<(String, String)>,
    switch: usize,
) -> (usize, Vec<(usize, String)>) {
    events.push(events[switch].clone());
    let copy = events.len() - 1;
    let filters = vec![
        (switch, SWITCH_BLOCKED.to_string()),
        (copy, SWITCH_NOT_BLOCKED.to_string()),
    ];
    (copy, filters)
}

fn is_switch((system, event): &(String, String)) -> bool {
    system == "sched" && event == "sched_switch"
}

/// Capture options for the hook events: every event sampled, call chains
/// on `stack_events` only, tracepoint `filters`, switch-ins from
/// context-switch records, the whole system watched (a wakeup fires in the
/// waker's context).
fn capture_options(
    events: &[(String, String)],
    stack_events: &[usize],
    filters: Vec<(usize, String)>,
    command: Vec<OsString>,
    mmap_pages: Option<usize>,
) -> anyhow::Result<CaptureOptions> {
    let specs: Vec<_> = events
        .iter()
        .map(|(s, e)| name::parse(&format!("{s}:{e}")))
        .collect::<Result<_, _>>()?;
    let resolved_events: Vec<ResolvedEvent> = name::resolve(&specs)?;
    let no_callchain: Vec<usize> = (0..events.len())
        .filter(|i| !stack_events.contains(i))
        .collect();
    let mut options = CaptureOptions::every_switch(
        resolved_events,
        command,
        CallGraph::FramePointerStack {
            stack_size: DEFAULT_FP_STACK_SIZE,
        },
    );
    options.filters = filters;
    options.no_callchain = no_callchain;
    if let Some(pages) = mmap_pages {
        options.mmap_pages = pages;
    }
    Ok(options)
}

/// `scry record --profile`: the default hooks' events (stacks on
/// sched_switch), system-wide, with context-switch records, for
/// `scry report --profile`. `target` is record's, already checked.
pub(super) fn record_options(
    target: &Target,
    mmap_pages: Option<usize>,
) -> anyhow::Result<CaptureOptions> {
    if !target.pids.is_empty() || !target.tids.is_empty() || target.cpus.is_some() {
        anyhow::bail!(
            "--profile records the whole system (wakeups happen in other tasks): \
             give a command after -- or -a; pick tasks later with 'scry report --profile --pid'"
        );
    }
    scry::sys::tracefs::root().context("--profile needs tracepoints")?;
    let all = scry::sys::tracefs::list_events().context("listing tracepoints")?;
    let mut events = default_events(&all);
    if events.is_empty() {
        anyhow::bail!("--profile: none of the default hook tracepoints exist here");
    }
    // Both halves of sched_switch are the engine's sched_switch in the file.
    let (stacks, filters) = match events.iter().position(is_switch) {
        Some(switch) => (vec![switch], split_switch(&mut events, switch).1),
        None => (Vec::new(), Vec::new()),
    };
    capture_options(
        &events,
        &stacks,
        filters,
        target.command.clone(),
        mmap_pages,
    )
}

/// Which tasks a file's report shows (`scry report --profile`): every task
/// unless pids, tids or command names are given.
#[derive(Clone, Debug, Default)]
pub(super) struct FileWatch {
    pub(crate) pids: Vec<i32>,
    pub(crate) tids: Vec<i32>,
    pub(crate) comms: Vec<String>,
}

/// `scry report --profile`: the pairs of a perf.data file (from `scry
/// record --profile`, or any file with the hook tracepoints), printed as
/// `scry profile` prints them.
pub(super) fn report_file(
    input: &std::path::Path,
    json: bool,
    watch: &FileWatch,
) -> anyhow::Result<()> {
    let (feed, cpus) = pairs_of_file(input, watch, false)?;
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    write_report(feed, cpus.into_values().collect(), None, json, &mut out)?;
    out.flush()?;
    Ok(())
}

/// The pairs of a perf.data file: the feed after its last record, not yet
/// finished (`PairEngine::finish` settles the last pairs; every
/// pair kept one by one in `engine.log` when `log`), and the records seen
/// per CPU. System calls pair from `raw_syscalls`, or from the per-call
/// `syscalls:sys_enter_NAME`/`sys_exit_NAME` when the file has no
/// `raw_syscalls` (with both, each call would pair twice).
pub(super) fn pairs_of_file(
    input: &std::path::Path,
    watch: &FileWatch,
    log: bool,
) -> anyhow::Result<(PairsFeed, BTreeMap<u32, CpuStat>)> {
    use scry::data::handler::dispatch;
    use scry::data::reader::{PerfReader, Record};
    use scry::event::tracing_data_parse::parse_tracing_data;

    // The reader's errors name the file.
    let mut reader = PerfReader::open(input)?;
    let blob = reader.tracing_data().with_context(|| {
        format!(
            "{} has no tracepoint formats (TRACING_DATA): record it with 'scry record --profile'",
            input.display()
        )
    })?;
    let tracing = parse_tracing_data(blob)
        .map_err(|e| anyhow::anyhow!("{}: tracing data: {e}", input.display()))?;
    let formats: Vec<Option<EventFormat>> = reader
        .events()
        .iter()
        .map(|e| match e.attr.type_ {
            linux_perf_event_reader::PerfEventType::Tracepoint(id) => {
                tracing.formats.iter().find(|f| f.id == id).cloned()
            }
            _ => None,
        })
        .collect();
    let mut roles: Vec<Builtin> = formats
        .iter()
        .map(|f| {
            f.as_ref()
                .map_or(Builtin::Other, |f| Builtin::of(&f.system, &f.name))
        })
        .collect();
    if !roles.contains(&Builtin::SysEnter) {
        for (role, f) in roles.iter_mut().zip(&formats) {
            match f.as_ref().filter(|f| f.system == "syscalls") {
                Some(f) if f.name.starts_with("sys_enter_") => *role = Builtin::SysEnter,
                Some(f) if f.name.starts_with("sys_exit_") => *role = Builtin::SysExit,
                _ => {}
            }
        }
    }
    if !roles.contains(&Builtin::SchedSwitch) && !roles.contains(&Builtin::SysEnter) {
        anyhow::bail!(
            "{} holds none of the profile hooks' events (record it with 'scry record --profile')",
            input.display()
        );
    }
    let refs: Vec<Option<&EventFormat>> = formats.iter().map(Option::as_ref).collect();
    let wanted = wanted_fields(&refs, &[])?;
    let mut engine = PairEngine::new(roles, Vec::new(), syscall_names());
    if log {
        engine.log = Some(Default::default());
    }
    engine.all = watch.pids.is_empty() && watch.tids.is_empty() && watch.comms.is_empty();
    engine
        .pids
        .extend(watch.pids.iter().chain(&watch.tids).copied());
    let mut resolver = Resolver::new(&ResolveOptions::default());
    if let Ok(ids) = reader.build_ids_raw() {
        resolver.set_header_build_ids(ids);
    }
    let mut feed = PairsFeed::new(engine, resolver, formats, wanted);
    let mut cpus: BTreeMap<u32, CpuStat> = BTreeMap::new();
    while let Some((record, id)) = reader.next_record_with_id()? {
        let Record::Event { attr_index, record } = record else {
            continue;
        };
        let cpu = match &record {
            EventRecord::Sample(s) => s.cpu,
            _ => id.cpu,
        };
        if let Some(cpu) = cpu {
            let stat = cpus.entry(cpu).or_insert(CpuStat {
                cpu,
                ..Default::default()
            });
            match &record {
                EventRecord::Lost(l) => stat.lost += l.count,
                _ => stat.records += 1,
            }
        }
        if let EventRecord::Comm(c) = &record
            && watch
                .comms
                .iter()
                .any(|w| w.as_bytes() == &*c.name.as_slice())
        {
            feed.engine.pids.insert(c.pid);
        }
        dispatch(&mut feed, attr_index, &record, &id);
    }
    Ok((feed, cpus))
}

fn syscall_names() -> HashMap<u64, String> {
    syscalls::Sysno::iter()
        .map(|s| (s.id() as u64, s.name().to_string()))
        .collect()
}

/// The pairs the kernel summed, into the engine; what the report says of them.
fn add_kernel_sums(engine: &mut PairEngine, sums: &KernelSums, covered: Covered) -> KernelNote {
    for s in &sums.stats {
        let kind = match s.kind {
            bpf_profile::KIND_SYSCALL => SummedKind::Syscall(s.nr),
            bpf_profile::KIND_PAGE_FAULT_USER => SummedKind::PageFaultUser,
            bpf_profile::KIND_PAGE_FAULT_KERNEL => SummedKind::PageFaultKernel,
            bpf_profile::KIND_IRQ => SummedKind::Irq(s.nr),
            bpf_profile::KIND_SOFTIRQ => SummedKind::Softirq(s.nr),
            bpf_profile::KIND_SOFTIRQ_RAISE => SummedKind::SoftirqRaise(s.nr),
            _ => continue,
        };
        let stat = PairStat {
            count: s.count,
            total: s.total,
            max: s.max,
            max_ts: s.max_ts,
            min: s.min,
            min_ts: s.min_ts,
            stacks: Vec::new(),
        };
        engine.add_summed(s.tid as i32, kind, &stat);
    }
    // As the streamed engine does: enters still open at the end.
    engine.unmatched += sums.open_starts;
    let covered = [
        (covered.syscalls, "syscalls"),
        (covered.page_faults, "page faults"),
        (covered.irqs, "irqs"),
        (covered.softirqs, "softirqs"),
    ]
    .into_iter()
    .filter(|(on, _)| *on)
    .map(|(_, name)| name.to_string())
    .collect();
    KernelNote {
        covered,
        pairs: sums.pairs,
        exits_without_enter: sums.exit_without_enter,
        map_full: sums.stats_full + sums.starts_full,
    }
}

/// The roles the kernel takes over when BPF covers them.
fn covered_by(covered: Covered, role: Builtin) -> bool {
    match role {
        Builtin::SysEnter | Builtin::SysExit => covered.syscalls,
        Builtin::PageFaultUser | Builtin::PageFaultKernel => covered.page_faults,
        Builtin::IrqEntry | Builtin::IrqExit => covered.irqs,
        Builtin::SoftirqRaise | Builtin::SoftirqEntry | Builtin::SoftirqExit => covered.softirqs,
        _ => false,
    }
}

/// The engine's results (with the kernel's sums, when BPF ran), grouped
/// and printed (text or JSON).
/// The kernel's function tracer on the profiled tasks, or None (and one
/// line saying why) where it cannot run.
fn start_function_tracer(
    args: &ProfileArgs,
    root: &std::path::Path,
    pids: &[i32],
    workload: Option<i32>,
) -> Option<FunctionTracer> {
    if args.tracer == "nop" {
        return None;
    }
    let pids = match workload {
        Some(pid) if pids.is_empty() => vec![pid],
        _ if args.watch.all_cpus => Vec::new(),
        _ => pids.to_vec(),
    };
    let opts = TracerOptions {
        tracer: args.tracer.clone(),
        depth: args.graph_depth,
        filters: args.funcs.clone(),
        notrace: args.notrace.clone(),
        pids,
        ..TracerOptions::default()
    };
    match FunctionTracer::start(root, &opts, super::ftrace_watchdog(root)) {
        Ok(t) => Some(t),
        Err(e) => {
            eprintln!("scry: kernel functions not profiled: {e}");
            None
        }
    }
}

fn write_report(
    feed: PairsFeed,
    cpus: Vec<CpuStat>,
    kernel: Option<(KernelSums, Covered)>,
    json: bool,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let PairsFeed {
        mut engine,
        resolver,
        comms,
        undecodable,
        ..
    } = feed;
    engine.finish();
    let kernel = kernel.map(|(sums, covered)| add_kernel_sums(&mut engine, &sums, covered));
    let scry::symbol::Resolution {
        samples: resolved,
        frames,
        ..
    } = resolver.finish();
    if undecodable > 0 {
        eprintln!("scry: {undecodable} samples had no decodable fields and were skipped");
    }
    let mut report = ProfileReport {
        cpus,
        unmatched: engine.unmatched,
        ended_at_switch_in: engine.ended_at_switch_in,
        lost_dropped: engine.lost_dropped,
        comms,
        kernel,
        ..Default::default()
    };
    for (scope, stats) in std::mem::take(&mut engine.stats) {
        let mut events: Vec<_> = stats
            .into_iter()
            .map(|(label, stat)| {
                let stacks = group_stacks(&stat.stacks, &resolved);
                (label, stat, stacks)
            })
            .collect();
        events.sort_by(|a, b| b.1.total.cmp(&a.1.total).then(a.0.cmp(&b.0)));
        report.sections.insert(scope, events);
    }
    let mut out = out;
    if json {
        write_json(&mut out, &report, &frames)?;
    } else {
        write_text(&mut out, &report, &frames)?;
    }
    Ok(())
}

pub(crate) fn run(args: ProfileArgs) -> anyhow::Result<()> {
    let json = match args.format.as_str() {
        "text" => false,
        "json" => true,
        other => anyhow::bail!("--format: unknown format '{other}' (text or json)"),
    };
    let pids = args.watch.live_pids(&args.command)?;
    let hooks: Vec<Hook> = args
        .hooks
        .iter()
        .map(|h| Hook::parse(h))
        .collect::<Result<_, _>>()
        .context("-H")?;
    let root = scry::sys::tracefs::root().context("profile needs tracepoints")?;
    let all = scry::sys::tracefs::list_events().context("listing tracepoints")?;

    // The events: defaults that exist here, then the hooks' events.
    let mut events: Vec<(String, String)> = if args.no_default_hooks {
        Vec::new()
    } else {
        default_events(&all)
    };
    // Sum what BPF can in the kernel; stream only the rest.
    let mut bpf = if args.no_default_hooks || args.no_bpf {
        None
    } else {
        match ProfileBpf::load(args.watch.all_cpus) {
            Ok(bpf) => Some(bpf),
            Err(err) => {
                eprintln!(
                    "scry: BPF unavailable ({err}{}): system calls, page faults and irqs go through the perf rings (slower)",
                    if err.kind() == io::ErrorKind::PermissionDenied {
                        "; needs CAP_BPF and CAP_PERFMON"
                    } else {
                        ""
                    }
                );
                None
            }
        }
    };
    let covered = bpf.as_ref().map(|b| b.covered).unwrap_or_default();
    events.retain(|(s, e)| !covered_by(covered, Builtin::of(s, e)));
    if let Some(bpf) = &mut bpf {
        for &pid in &pids {
            let tgid = scry::sys::proc::tgid(pid).unwrap_or(pid);
            bpf.watch(tgid, false)
                .with_context(|| format!("watching process {pid} in BPF"))?;
        }
    }
    let index_of = |events: &mut Vec<(String, String)>, ev: (String, String)| {
        events.iter().position(|x| *x == ev).unwrap_or_else(|| {
            events.push(ev);
            events.len() - 1
        })
    };
    let mut hook_events = Vec::new();
    for hook in &hooks {
        let start = index_of(&mut events, find_event(&hook.start, &all)?);
        let end = index_of(&mut events, find_event(&hook.end, &all)?);
        hook_events.push((hook.clone(), start, end));
    }
    if events.is_empty() {
        anyhow::bail!("no events to profile (--no-default-hooks without -H)");
    }
    let formats: Vec<EventFormat> = events
        .iter()
        .map(|(s, e)| {
            load_format(root, s, e).with_context(|| format!("reading the format of {s}:{e}"))
        })
        .collect::<anyhow::Result<_>>()?;
    // Check the hooks' fields exist, and collect what each event needs.
    let refs: Vec<Option<&EventFormat>> = formats.iter().map(Some).collect();
    let wanted = wanted_fields(&refs, &hook_events).context("-H")?;
    let switch = events.iter().position(is_switch);
    let stack_events: Vec<usize> = switch
        .filter(|_| !args.no_default_hooks)
        .into_iter()
        .chain(
            hook_events
                .iter()
                .filter(|(h, ..)| h.stack)
                .map(|(_, s, _)| *s),
        )
        .collect();
    // Stacks on blocking switch-outs only, unless a -H hook wants them on
    // every sched_switch it starts at.
    let mut formats = formats;
    let mut wanted = wanted;
    let mut switch_copy = None;
    let mut filters = Vec::new();
    if let Some(switch) = switch
        && stack_events.contains(&switch)
        && !hook_events
            .iter()
            .any(|(h, start, _)| h.stack && *start == switch)
    {
        let (copy, split) = split_switch(&mut events, switch);
        formats.push(formats[switch].clone());
        wanted.push(wanted[switch].clone());
        switch_copy = Some((copy, switch));
        filters = split;
    }
    let opts = capture_options(&events, &stack_events, filters, args.command.clone(), None)?;

    // An event the kernel sums may be back as a -H hook's: the hook only.
    let roles: Vec<Builtin> = events
        .iter()
        .map(|(s, e)| Builtin::of(s, e))
        .map(|r| {
            if covered_by(covered, r) {
                Builtin::Other
            } else {
                r
            }
        })
        .collect();
    let mut engine = PairEngine::new(roles, hook_events, syscall_names());
    engine.all = args.watch.all_cpus;
    engine.pids.extend(pids.iter().copied());

    let mut tracer = None;
    let (feed, outcome) = capture_feed(&opts, true, |workload| {
        // With -p the command only times the capture, as in perf.
        if let Some(pid) = workload.filter(|_| pids.is_empty()) {
            engine.pids.insert(pid);
            if let Some(bpf) = &mut bpf {
                bpf.watch(pid, true)
                    .context("watching the workload in BPF")?;
            }
        }
        tracer = start_function_tracer(&args, root, &pids, workload);
        let mut feed = PairsFeed::new(
            engine,
            Resolver::new(&ResolveOptions::default()),
            formats.into_iter().map(Some).collect(),
            wanted,
        );
        if let Some((copy, switch)) = switch_copy {
            feed.alias(copy, switch);
        }
        Ok(feed)
    })?;
    let mut feed = feed;
    if let Some(tracer) = tracer {
        let text = tracer
            .finish()
            .context("reading the function tracer's trace")?;
        for ((tid, func), stat) in scry::analysis::funcgraph::sum_trace(&text) {
            if feed.engine.watched(tid) {
                feed.engine.add_function(tid, &func, &stat);
            }
        }
    }
    let kernel = match &mut bpf {
        Some(bpf) => {
            bpf.detach();
            Some((bpf.read().context("reading the BPF sums")?, bpf.covered))
        }
        None => None,
    };

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
    write_report(feed, cpus, kernel, json, &mut out)?;
    out.flush()?;
    match outcome.stop {
        StopReason::TargetExited(status) => super::workload_exit(status, &args.command),
        _ => Ok(()),
    }
}
