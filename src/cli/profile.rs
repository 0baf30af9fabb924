//! `scry profile`: trace-cmd profile's event-pair latencies, per task, with
//! the stacks where tasks blocked. Records the default hook events (and the
//! `-H` hooks' events) system-wide, live; `analysis::pairs` pairs them;
//! `render::profile` prints the report. Call chains are taken on
//! sched_switch and on the start events of `s` hooks only.

use std::collections::{BTreeMap, HashMap};
use std::ffi::OsString;
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use linux_perf_event_reader::EventRecord;

use scry::analysis::pairs::{Builtin, Hook, Occurrence, PairEngine, Want};
use scry::analysis::sample::ResolvedSample;
use scry::capture::live::{LiveConsumer, LiveSink, run_threaded};
use scry::capture::session::default_mmap_pages;
use scry::capture::{CallGraph, CaptureOptions, Sampling, Session, StopReason, Target};
use scry::event::format::{Endian, EventFormat, FieldValue, load_format};
use scry::event::name::{self, ResolvedEvent};
use scry::render::profile::{CpuStat, ProfileReport, StackStat, write_json, write_text};
use scry::symbol::{ResolveOptions, Resolver};
use scry::sys::perf_event::attr_bytes;
use scry::sys::signal::SignalPipe;

#[derive(Args, Debug)]
pub struct ProfileArgs {
    /// Watch every task on every CPU.
    #[arg(short = 'a', long = "all-cpus")]
    all_cpus: bool,
    /// Watch these processes (and what they fork): PID[,PID...].
    #[arg(short = 'p', long = "pid", value_name = "PID")]
    pid: Option<String>,
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
    /// The command to run and profile (after --).
    #[arg(last = true, value_name = "COMMAND")]
    command: Vec<OsString>,
}

const DEFAULT_EVENTS: &[(&str, &str)] = &[
    ("sched", "sched_switch"),
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

struct Consumer {
    engine: PairEngine,
    resolver: Resolver,
    formats: Vec<EventFormat>,
    /// Per event: the fields the engine reads.
    wanted: Vec<Vec<String>>,
    comms: BTreeMap<i32, String>,
    undecodable: u64,
}

impl LiveConsumer for Consumer {
    fn handle_record(&mut self, attr_index: usize, record: &EventRecord<'_>) {
        let EventRecord::Sample(sample) = record else {
            match record {
                EventRecord::Comm(c) => {
                    self.engine.task(c.pid, c.tid, None);
                    self.comms.insert(
                        c.tid,
                        String::from_utf8_lossy(&c.name.as_slice()).into_owned(),
                    );
                }
                EventRecord::Fork(f) => self.engine.task(f.pid, f.tid, Some(f.ppid)),
                _ => {}
            }
            self.resolver.handle_record(attr_index, record);
            return;
        };
        let (Some(raw), Some(format), Some(wanted)) = (
            sample.raw.map(|r| r.as_slice()),
            self.formats.get(attr_index),
            self.wanted.get(attr_index),
        ) else {
            self.undecodable += 1;
            return;
        };
        let mut fields: HashMap<&str, u64> = HashMap::new();
        for name in wanted {
            if let Some(field) = format.field(name)
                && let Some(FieldValue::Int { value, .. }) = field.value(&raw, Endian::host())
            {
                fields.insert(name.as_str(), value);
            }
        }
        let occurrence = Occurrence {
            event: attr_index,
            time: sample.timestamp.unwrap_or(0),
            cpu: sample.cpu.unwrap_or(0),
            tid: sample.tid.unwrap_or(-1),
            fields: &fields,
        };
        if self.engine.handle(&occurrence) == Want::Stack {
            self.resolver.handle_record(attr_index, record);
        }
    }

    fn tick_interval(&self) -> Option<Duration> {
        None
    }
}

fn group_stacks(stacks: &[(usize, u64)], resolved: &[ResolvedSample]) -> Vec<StackStat> {
    let mut by_stack: HashMap<&[scry::analysis::sample::FrameId], StackStat> = HashMap::new();
    for &(seq, duration) in stacks {
        let Some(sample) = resolved.get(seq) else {
            continue;
        };
        let entry = by_stack
            .entry(sample.stack.as_slice())
            .or_insert_with(|| StackStat {
                frames: sample.stack.clone(),
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

pub fn run(args: ProfileArgs) -> anyhow::Result<()> {
    let json = match args.format.as_str() {
        "text" => false,
        "json" => true,
        other => anyhow::bail!("--format: unknown format '{other}' (text or json)"),
    };
    let pids = match &args.pid {
        Some(text) => super::parse_ids(text, "-p")?,
        None => Vec::new(),
    };
    if args.command.is_empty() && pids.is_empty() && !args.all_cpus {
        anyhow::bail!("nothing to profile: give a command after --, or -p PID, or -a");
    }
    for &pid in &pids {
        if !scry::sys::proc::exists(pid) {
            anyhow::bail!("no such process: {pid}");
        }
    }
    let hooks: Vec<Hook> = args
        .hooks
        .iter()
        .map(|h| Hook::parse(h))
        .collect::<Result<_, _>>()
        .map_err(|e| anyhow::anyhow!("-H: {e}"))?;
    let root = scry::sys::tracefs::root().context("profile needs tracepoints")?;
    let all = scry::sys::tracefs::list_events().context("listing tracepoints")?;

    // The events: defaults that exist here, then the hooks' events.
    let mut events: Vec<(String, String)> = Vec::new();
    if !args.no_default_hooks {
        for (s, e) in DEFAULT_EVENTS {
            if all.iter().any(|(a, b)| a == s && b == e) {
                events.push((s.to_string(), e.to_string()));
            }
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
    let mut wanted: Vec<Vec<String>> = formats
        .iter()
        .map(|f| {
            [
                "prev_pid",
                "prev_state",
                "next_pid",
                "pid",
                "id",
                "irq",
                "vec",
            ]
            .iter()
            .filter(|n| f.field(n).is_some())
            .map(|n| n.to_string())
            .collect()
        })
        .collect();
    for (hook, start, end) in &hook_events {
        for (field, event) in [
            (&hook.start_match, *start),
            (&hook.start_pid, *start),
            (&hook.end_match, *end),
        ] {
            let Some(field) = field else { continue };
            let format = &formats[event];
            let Some(f) = format.field(field) else {
                anyhow::bail!("-H: event {} has no field '{field}'", format.full_name());
            };
            if !matches!(f.kind, scry::event::format::FieldKind::Scalar) {
                anyhow::bail!(
                    "-H: field '{field}' of {} is not a number and cannot be matched",
                    format.full_name()
                );
            }
            wanted[event].push(field.clone());
        }
    }
    let specs: Vec<_> = events
        .iter()
        .map(|(s, e)| name::parse(&format!("{s}:{e}")))
        .collect::<Result<_, _>>()?;
    let resolved_events: Vec<ResolvedEvent> = name::resolve(&specs)?;
    let stack_events: Vec<usize> = std::iter::once(0usize)
        .filter(|_| !args.no_default_hooks)
        .chain(
            hook_events
                .iter()
                .filter(|(h, ..)| h.stack)
                .map(|(_, s, _)| *s),
        )
        .collect();
    let no_callchain: Vec<usize> = (0..events.len())
        .filter(|i| !stack_events.contains(i))
        .collect();
    let cpus = scry::sys::proc::online_cpus().map_or(1, |c| c.len());
    let opts = CaptureOptions {
        mmap_pages: default_mmap_pages(&resolved_events, cpus),
        events: resolved_events,
        target: Target {
            command: args.command.clone(),
            system_wide: true,
            ..Default::default()
        },
        sampling: Some(Sampling::Period(1)),
        call_graph: CallGraph::FramePointer,
        filters: Vec::new(),
        no_callchain,
    };

    let roles: Vec<Builtin> = events.iter().map(|(s, e)| Builtin::of(s, e)).collect();
    let syscall_names: HashMap<u64, String> = syscalls::Sysno::iter()
        .map(|s| (s.id() as u64, s.name().to_string()))
        .collect();
    let mut engine = PairEngine::new(roles, hook_events, syscall_names);
    engine.all = args.all_cpus;
    engine.pids.extend(pids.iter().copied());

    let signals = SignalPipe::install(&[libc::SIGINT, libc::SIGTERM])
        .context("installing signal handlers")?;
    let mut session = Session::open(&opts)?;
    if let Some(pid) = session.workload_pid() {
        engine.pids.insert(pid);
    }
    let ids = session.ids().context("reading sample ids")?;
    let attrs: Vec<(Vec<u8>, Vec<u64>)> = session.attrs.iter().map(attr_bytes).zip(ids).collect();
    let consumer = Consumer {
        engine,
        resolver: Resolver::new(&ResolveOptions::default()),
        formats,
        wanted,
        comms: BTreeMap::new(),
        undecodable: 0,
    };
    let mut sink = LiveSink::new(&attrs, consumer).context("parsing the event attributes")?;
    let mut synthesized = Vec::new();
    session.synthesize(true, &mut synthesized);
    scry::capture::RecordSink::records(&mut sink, 0, &synthesized)?;
    scry::capture::RecordSink::round_done(&mut sink)?;
    session.start()?;
    let outcome = run_threaded(session, signals, &mut sink)?;

    let Consumer {
        mut engine,
        resolver,
        comms,
        undecodable,
        ..
    } = sink.consumer;
    engine.finish();
    let (resolved, frames, _stats, _lost) = resolver.finish();
    if undecodable > 0 {
        eprintln!("scry: {undecodable} samples had no decodable fields and were skipped");
    }
    let mut report = ProfileReport {
        cpus: outcome
            .per_cpu
            .iter()
            .map(|(&cpu, s)| CpuStat {
                cpu,
                records: s.records,
                bytes: s.bytes,
                lost: s.lost,
            })
            .collect(),
        unmatched: engine.unmatched,
        comms,
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
    let mut out: Box<dyn Write> = match (&args.output, args.stderr) {
        (Some(path), _) => Box::new(BufWriter::new(
            std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?,
        )),
        (None, true) => Box::new(BufWriter::new(io::stderr())),
        (None, false) => Box::new(BufWriter::new(io::stdout())),
    };
    if json {
        write_json(&mut out, &report, &frames)?;
    } else {
        write_text(&mut out, &report, &frames)?;
    }
    out.flush()?;
    if let StopReason::TargetExited(Some(status)) = outcome.stop
        && !status.success()
    {
        return Err(super::Exit(1).into());
    }
    Ok(())
}
