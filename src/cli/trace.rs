//! `scry trace`: perf trace / strace without ptrace. Flags into a list of
//! tracer events (`capture::trace`), records decoded by
//! `capture::trace_sink`, paired and summed by `analysis::syscalls`,
//! printed by `render::trace`.
//!
//! Lines and the `-s` summary go to standard error, as perf trace writes
//! them (standard output stays the workload's), or to `-o FILE`.
//!
//! System calls come from `raw_syscalls:sys_enter`/`sys_exit` with a
//! kernel filter on `id` (one pair of tracepoints, not hundreds). The
//! strings and input buffers of the calls that take them are copied in the
//! kernel at the entry (`capture::trace`, a BPF program), so a buffer the
//! program reuses afterwards cannot change what is shown.
//!
//! `--function` and `--graph` add the kernel's function tracers on the
//! traced tasks (`cli::trace_functions`); alone, they are all that is
//! traced (a dummy event runs the workload).

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::rc::Rc;

use anyhow::Context;
use clap::Args;

use scry::analysis::syscalls::ArgKind;
use scry::analysis::syscalls::{Tracer, TracerOptions};
use scry::capture::Target;
use scry::capture::session::StopReason;
use scry::capture::trace::{TraceCapture, TraceEvent};
use scry::capture::trace_sink::{
    EventRole, RawSyscallLayout, SyscallDecoder, SyscallTable, UPROBE_REGS,
};
use scry::event::format_cache::FormatCache;
use scry::event::name::{self, ResolvedEvent};
use scry::render::trace::{TextOutput, write_summary};
use scry::symbol::ProcKallsyms;
use scry::sys::bpf_trace::ArgCopy;

use super::trace_functions;

#[derive(Args, Debug)]
#[command(mut_arg("pid", |a| a.help("Trace these processes (all their threads): PID[,PID...]")))]
pub(crate) struct TraceArgs {
    /// What to trace: system calls by name or glob (openat,read 'open*'), tracepoints
    /// ('sched:*', probe_libc:malloc), or a probe for this run only (uprobe:BINARY:FUNC,
    /// uretprobe:BINARY:FUNC, kprobe:FUNC[+OFF], kretprobe:FUNC). Repeatable, comma lists. Default: every system call.
    #[arg(short = 'e', long = "event", value_name = "EVENT")]
    events: Vec<String>,
    /// Tracepoint filter (ftrace syntax) for the tracepoint events of -e.
    #[arg(long)]
    filter: Option<String>,
    /// Show only system calls that took at least this many milliseconds.
    #[arg(long, value_name = "MS")]
    duration: Option<f64>,
    /// Show only a per-thread summary of the system calls (calls, errors, times).
    #[arg(short = 's', long)]
    summary: bool,
    /// Show the events and then the summary.
    #[arg(short = 'S', long = "with-summary")]
    with_summary: bool,
    /// Write the lines (and the summary) to FILE, created 0600, instead of
    /// standard error (where perf trace writes them too).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Option<PathBuf>,
    #[command(flatten)]
    pid: super::target::PidsArg,
    /// Trace every process of the system.
    #[arg(short = 'a', long = "all-cpus")]
    all_cpus: bool,
    /// Ring buffer size per CPU in pages (a power of two). Default 4096 (16 MiB).
    #[arg(
        short = 'm',
        long = "mmap-pages",
        value_name = "PAGES",
        default_value_t = 4096
    )]
    mmap_pages: usize,
    #[command(flatten)]
    functions: trace_functions::FunctionArgs,
    /// The command to run and trace (`--` before it is optional, as with perf).
    #[arg(trailing_var_arg = true, value_name = "COMMAND")]
    command: Vec<OsString>,
}

/// What `-e` asked for.
#[derive(Default)]
struct Selection {
    /// `None`: every system call; `Some(empty)`: none.
    syscalls: Option<BTreeSet<u64>>,
    /// Tracepoints and uprobes.
    events: Vec<name::EventSpec>,
}

fn parse_selection(texts: &[String]) -> anyhow::Result<Selection> {
    if texts.is_empty() {
        return Ok(Selection::default());
    }
    let mut sel = Selection {
        syscalls: Some(BTreeSet::new()),
        ..Selection::default()
    };
    for text in texts {
        // Plain comma split: uprobe paths hold '/', which split_list pairs up.
        for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            if item.contains(':') {
                sel.events.push(name::parse(item)?);
            } else {
                let set = sel.syscalls.get_or_insert_with(BTreeSet::new);
                let before = set.len();
                for (nr, call) in SyscallTable::all() {
                    if name::matches_glob(item, call) {
                        set.insert(nr);
                    }
                }
                if set.len() == before && SyscallTable::number(item).is_none() {
                    anyhow::bail!(
                        "-e: unknown system call '{item}' (tracepoints are SUBSYSTEM:NAME, see 'scry list')"
                    );
                }
            }
        }
    }
    Ok(sel)
}

/// A tracepoint event of known id.
fn tracepoint(system: &str, name: &str, id: u64) -> ResolvedEvent {
    let mut event = ResolvedEvent::plain(
        &format!("{system}:{name}"),
        scry::sys::perf_event::PERF_TYPE_TRACEPOINT,
        id,
    );
    event.tracepoint = Some((system.to_string(), name.to_string()));
    event
}

/// `id == 2 || id == 257`: the calls of `-e`, for the kernel's filter.
fn id_filter(ids: &BTreeSet<u64>) -> String {
    ids.iter()
        .map(|id| format!("id == {id}"))
        .collect::<Vec<_>>()
        .join(" || ")
}

pub(crate) fn run(args: TraceArgs) -> anyhow::Result<()> {
    super::target::check_command("trace", &args.command)?;
    let target = Target {
        command: args.command.clone(),
        pids: args.pid.pids()?,
        system_wide: args.all_cpus,
        ..Target::default()
    };
    if target.command.is_empty() && target.pids.is_empty() && !target.system_wide {
        anyhow::bail!("nothing to trace: give a command after --, or -p PID, or -a");
    }
    let min_duration_ns = match args.duration {
        Some(ms) if !(ms >= 0.0 && ms.is_finite()) => {
            anyhow::bail!("--duration: expected milliseconds >= 0, got {ms}")
        }
        Some(ms) => Some((ms * 1e6) as u64),
        None => None,
    };
    let function_tracer = args.functions.tracer()?;
    // --function/--graph alone: the tracer's lines only.
    let functions_only =
        function_tracer.is_some() && args.events.is_empty() && !args.summary && !args.with_summary;
    let mut sel = parse_selection(&args.events)?;
    if functions_only {
        sel.syscalls = Some(BTreeSet::new());
    }
    let chosen = super::probe::resolve_events(&sel.events)?;
    if args.filter.is_some() && !chosen.iter().any(ResolvedEvent::is_tracepoint) {
        anyhow::bail!(
            "--filter applies to tracepoint events given with -e (such as -e 'sched:sched_switch')"
        );
    }
    let root = scry::sys::tracefs::root().context("scry trace needs tracefs")?;
    let formats = Rc::new(
        FormatCache::from_tracefs(root).with_kernel_symbols(Box::new(ProcKallsyms::default())),
    );
    let show_events = !args.summary || args.with_summary;
    let summary = args.summary || args.with_summary;

    let mut events = Vec::new();
    let mut roles = Vec::new();
    let mut layout = None;
    let mut copy = Vec::new();
    let wants_syscalls = sel.syscalls.as_ref().is_none_or(|s| !s.is_empty());
    if wants_syscalls {
        let enter = formats.load("raw_syscalls", "sys_enter")?;
        let exit = formats.load("raw_syscalls", "sys_exit")?;
        layout = Some(
            RawSyscallLayout::new(&enter, &exit)
                .context("raw_syscalls formats lack id/args/ret")?,
        );
        // Which arguments to copy at the entry: from each call's
        // sys_enter_* format (only when lines are shown).
        let mut table = SyscallTable::new(Rc::clone(&formats));
        if show_events {
            for (nr, _) in SyscallTable::all() {
                if sel.syscalls.as_ref().is_some_and(|s| !s.contains(&nr)) {
                    continue;
                }
                let desc = table.get(nr);
                let mut kinds = [ArgCopy::None; 6];
                for (kind, arg) in kinds.iter_mut().zip(&desc.args) {
                    *kind = match arg.kind {
                        ArgKind::Str => ArgCopy::String,
                        ArgKind::Buffer { len_arg } => ArgCopy::Buffer { len_arg },
                        _ => ArgCopy::None,
                    };
                }
                if kinds.iter().any(|k| *k != ArgCopy::None) {
                    copy.push((nr, kinds));
                }
            }
        }
        let tp = |id: u64, name: &str, filter: Option<String>| TraceEvent {
            event: tracepoint("raw_syscalls", name, id),
            filter,
            regs_user: 0,
            stack_user: 0,
        };
        let enter_filter = sel.syscalls.as_ref().map(id_filter);
        events.push(tp(enter.id, "sys_enter", enter_filter));
        roles.push(EventRole::SysEnter);
        let exit_filter = sel.syscalls.as_ref().map(id_filter);
        events.push(tp(exit.id, "sys_exit", exit_filter));
        roles.push(EventRole::SysExit);
    }
    for event in chosen {
        let role = match &event.uprobe {
            Some(site) if site.kernel => EventRole::Kprobe {
                retprobe: site.retprobe,
            },
            Some(site) => EventRole::Uprobe {
                retprobe: site.retprobe,
            },
            None => EventRole::Tracepoint,
        };
        let (filter, regs_user) = match role {
            EventRole::Tracepoint => (args.filter.clone(), 0),
            EventRole::Kprobe { .. } => (None, 0),
            _ => (None, UPROBE_REGS),
        };
        events.push(TraceEvent {
            event,
            filter,
            regs_user,
            stack_user: 0,
        });
        roles.push(role);
    }
    if functions_only {
        // Never samples: it only runs the workload under the capture.
        events.push(TraceEvent {
            event: ResolvedEvent::plain(
                "dummy",
                scry::sys::perf_event::PERF_TYPE_SOFTWARE,
                scry::sys::perf_event::PERF_COUNT_SW_DUMMY,
            ),
            filter: None,
            regs_user: 0,
            stack_user: 0,
        });
        roles.push(EventRole::Tracepoint);
    }
    let names: Vec<String> = events.iter().map(|e| e.event.name.clone()).collect();

    let run_stop =
        scry::sys::signal::RunStop::install().context("cannot install signal handlers")?;
    let mut capture = TraceCapture::open(events, &target, args.mmap_pages, &copy)?;
    for note in &capture.notes {
        eprintln!("scry: {note}");
    }
    let function_tracer = match function_tracer {
        Some(tracer) => {
            let pids = match capture.workload_pid() {
                Some(pid) => vec![pid],
                None if target.system_wide => Vec::new(),
                None => target.pids.clone(),
            };
            let started = trace_functions::start(&args.functions, tracer, root, pids);
            if started.is_none() && functions_only {
                return Err(super::Exit(2).into());
            }
            started
        }
        None => None,
    };

    let out: Box<dyn Write> = match &args.output {
        Some(path) => Box::new(BufWriter::new(super::create_private(path)?)),
        None => Box::new(BufWriter::new(std::io::stderr().lock())),
    };
    let mut output = TextOutput::new(out);
    let mut tracer = Tracer::new(TracerOptions {
        min_duration_ns,
        show_events,
    });
    let mut decoder = SyscallDecoder::new(roles, names, layout, Rc::clone(&formats), |item| {
        tracer.item(item, &mut output)
    });
    capture.start()?;
    let stop = capture.run(&mut decoder, &run_stop)?;
    let (lost, undecodable) = (
        std::mem::take(&mut decoder.lost),
        decoder.undecodable + capture.malformed,
    );
    drop(decoder);
    tracer.finish(&mut output)?;
    if let Some(function_tracer) = function_tracer {
        trace_functions::finish(function_tracer, output.get_mut())?;
    }
    if summary {
        write_summary(&tracer.summary, output.get_mut())?;
    }
    output.get_mut().flush()?;
    for (cpu, count) in &lost {
        eprintln!("scry: cpu {cpu} lost {count} events (its ring filled up): try a bigger -m");
    }
    if undecodable > 0 {
        eprintln!("scry: {undecodable} records could not be decoded");
    }
    match stop {
        StopReason::TargetExited(status) => super::workload_exit(status, &args.command),
        _ => Ok(()),
    }
}
