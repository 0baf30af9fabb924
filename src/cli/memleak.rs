//! `scry memleak` (bcc's memleak, its flags and layout): the allocations
//! a process made and has not freed, by the user stack that made them,
//! every `interval` seconds (default 5) and at the end; with no process,
//! the kernel's (kmalloc and kmem_cache_alloc, by kernel stack); `--sort
//! count` the top stacks by allocations, `-c "CMD ARGS"` bcc's spelling
//! of `-- CMD ARGS`; `-t` each call as it comes (read from the program's
//! trace ring between reports), `-s N` every N-th allocation, `-O OBJ`
//! the allocator in another object, `--percpu` the kernel's per-CPU
//! allocations. Wiring
//! only: `symbol::allocator` (where the uprobes go) → `sys::bpf_memleak`
//! → `analysis::memleak` (grouped, aged, top N) → `symbol::raw_stacks`
//! (named) → `render::memleak`.
//!
//! The process's maps are read again every quarter second while it runs
//! (and for a command, `-- COMMAND`, as soon as its loader mapped the
//! allocator), so a process that exits before the report still has its
//! stacks named from the maps it had; libraries it loaded after the last
//! read are named `[unknown]`.

use std::cell::RefCell;
use std::ffi::OsString;
use std::io::{self, Write};
use std::time::Duration;

use anyhow::{anyhow, bail};
use clap::Args;

use super::target::PidArg;
use scry::analysis::memleak::{self, LeakSort, LeakStack};
use scry::capture::bpf_run::{self, EndReason, RunOptions, Wake, Workload};
use scry::render::memleak as render;
use scry::symbol::ResolveOptions;
use scry::symbol::allocator;
use scry::symbol::raw_stacks::{RawStack, RawStackResolver};
use scry::sys::bpf_memleak::{MemleakBpf, MemleakSettings, USER_FUNCTIONS, UserProbes};
use scry::sys::localtime::now_hms;
use scry::sys::signal::RunStop;
use scry::sys::uprobe::monotonic_ns;

use super::bpf_tool;

/// How often the run loop wakes (to read the process's maps again).
const TICK: Duration = Duration::from_millis(250);

#[derive(Args, Debug)]
#[command(mut_arg("pid", |a| a.help("The process to follow (ends when it exits); none and no command: the kernel's allocations")))]
pub(crate) struct MemleakArgs {
    #[command(flatten)]
    target: PidArg,
    /// Show each allocation's address, size and age (oldest first).
    #[arg(short = 'a', long = "show-allocs")]
    show_allocs: bool,
    /// Leave out allocations younger than OLDER milliseconds (default 500).
    #[arg(
        short = 'o',
        long = "older",
        value_name = "OLDER",
        default_value_t = 500
    )]
    older: u64,
    /// Show the TOP stacks with the most bytes outstanding (default 10).
    #[arg(short = 'T', long = "top", value_name = "TOP", default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..))]
    top: u64,
    /// Follow only allocations of at least MIN_SIZE bytes.
    #[arg(short = 'z', long = "min-size", value_name = "MIN_SIZE")]
    min_size: Option<u64>,
    /// Follow only allocations of at most MAX_SIZE bytes.
    #[arg(short = 'Z', long = "max-size", value_name = "MAX_SIZE")]
    max_size: Option<u64>,
    /// Which stacks are the top: by bytes outstanding (size) or by
    /// allocations outstanding (count).
    #[arg(long = "sort", value_name = "KEY", default_value = "size", value_parser = ["size", "count"])]
    sort: String,
    /// The stacks' sums only (bcc's combined statistics, the report scry
    /// always prints): -a's allocation lines are left out.
    #[arg(long = "combined-only")]
    combined_only: bool,
    /// A command to run and follow, one string split at white space (bcc's
    /// -c; `-- COMMAND` takes it word by word).
    #[arg(
        short = 'c',
        long = "command",
        value_name = "COMMAND",
        conflicts_with = "command"
    )]
    command_line: Option<String>,
    /// Print each call followed as it happens (bcc's trace messages:
    /// allocation entered, returned, freed), beside the reports.
    #[arg(short = 't', long = "trace")]
    trace: bool,
    /// Follow every SAMPLE_RATE-th allocation only, to cost less (default
    /// 1: all); the sums are of those followed.
    #[arg(short = 's', long = "sample-rate", value_name = "SAMPLE_RATE", default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    sample_rate: u64,
    /// The allocator's object: a path, or a library name (`c`,
    /// `jemalloc`, `libtcmalloc.so.4`) looked for in the process's maps,
    /// then the library directories (default: the libc the process maps,
    /// else its own executable).
    #[arg(short = 'O', long = "obj", value_name = "OBJ")]
    obj: Option<String>,
    /// The kernel's per-CPU allocations (percpu tracepoints) instead of
    /// kmalloc's (kernel mode only).
    #[arg(long = "percpu")]
    percpu: bool,
    /// Accepted for bcc's users: scry always counts an allocation at an
    /// address still outstanding as replacing it (a free it missed).
    #[arg(long = "wa-missing-free")]
    wa_missing_free: bool,
    /// Distinct stacks kept (default 10240).
    #[arg(long = "stack-storage-size", value_name = "N", default_value_t = 10240, value_parser = clap::value_parser!(u32).range(1..))]
    stack_storage_size: u32,
    #[command(flatten)]
    table: bpf_tool::TableArgs,
    #[command(flatten)]
    intervals: bpf_tool::IntervalArgs,
    /// A command to run and follow (after `--`).
    #[arg(last = true, value_name = "COMMAND")]
    command: Vec<OsString>,
}

pub(crate) fn run(mut args: MemleakArgs) -> anyhow::Result<()> {
    if let Some(line) = args.command_line.take() {
        args.command = line.split_whitespace().map(OsString::from).collect();
        if args.command.is_empty() {
            bail!("memleak: -c: an empty command");
        }
    }
    if args.target.pid.is_some() && !args.command.is_empty() {
        bail!("memleak: -p and a command exclude each other");
    }
    super::target::check_command("memleak", &args.command)?;
    if let (Some(min), Some(max)) = (args.min_size, args.max_size)
        && min > max
    {
        bail!("memleak: -z {min} is above -Z {max}");
    }
    let kernel_mode = args.target.pid.is_none() && args.command.is_empty();
    if args.percpu && !kernel_mode {
        bail!("memleak: --percpu follows the kernel's per-CPU allocator: not with -p or a command");
    }
    if args.obj.is_some() && kernel_mode {
        bail!("memleak: -O names a process's allocator: give -p PID or a command");
    }
    bpf_tool::check_pid("memleak", "-p", args.target.pid)?;
    let settings = MemleakSettings {
        min_size: args.min_size.unwrap_or(0),
        max_size: args.max_size.unwrap_or(0),
        stack_storage: args.stack_storage_size,
        sample_rate: args.sample_rate,
        trace_all: args.trace,
    };
    let found = match (&args.obj, args.target.pid, args.command.first()) {
        (Some(obj), pid, _) => Some(allocator::of_object(obj, pid, &USER_FUNCTIONS)),
        (None, Some(pid), _) => Some(allocator::of_process(pid, &USER_FUNCTIONS)),
        (None, None, Some(program)) => {
            Some(allocator::of_command(program.as_ref(), &USER_FUNCTIONS))
        }
        (None, None, None) => None,
    };
    let found = found.transpose().map_err(|e| anyhow!("memleak: {e}"))?;
    let mut workload = match args.command.is_empty() {
        true => None,
        false => Some(Workload::fork(&args.command)?),
    };
    let target = args
        .target
        .pid
        .or(workload.as_ref().map(|w| w.pid() as u32));
    let bpf = bpf_tool::load("memleak", || match (&found, target) {
        (Some(found), Some(pid)) => MemleakBpf::load_user(
            settings,
            &UserProbes {
                pid,
                path: &found.path,
                sites: found.sites.clone(),
            },
        ),
        _ => MemleakBpf::load_kernel(settings, args.percpu),
    })?;
    bpf_tool::print_hooks("memleak", &bpf.hooks(), args.table.verbose);
    let out = RefCell::new(io::BufWriter::new(io::stdout().lock()));
    write_attaching(&mut *out.borrow_mut(), &args, target, found.as_ref())?;
    let stop = RunStop::install()?;
    let mut resolver = RawStackResolver::new(&ResolveOptions::default());
    if let (Some(w), Some(found)) = (&mut workload, &found) {
        w.start()?;
        await_allocator(w.pid(), &found.path);
        resolver.refresh(w.pid());
    }
    let interval = args.intervals.interval.unwrap_or(5);
    let ticks_per_print = interval * (1000 / TICK.as_millis() as u64);
    let opts = RunOptions {
        interval: Some(TICK),
        count: args.intervals.count.map(|c| c * ticks_per_print),
        duration: None,
        pid: target.map(|p| p as i32),
    };
    let json = args.table.json;
    let trace = match args.trace {
        true => Some(bpf.trace_reader(|event| {
            // A closed stdout ends the run at the next flush.
            let _ = render::write_trace(&mut *out.borrow_mut(), &event, json);
        })?),
        false => None,
    };
    let fds: Vec<_> = trace.iter().map(|t| t.fd()).collect();
    let mut ticks = 0u64;
    let end = bpf_run::run_events_with(&opts, stop, &fds, |wake| {
        if let Some(trace) = &trace {
            trace.consume()?;
            out.borrow_mut().flush()?;
        }
        let last = match wake {
            Wake::Ready => return Ok(()),
            Wake::Tick => false,
            Wake::Last => true,
        };
        if let Some(pid) = target {
            resolver.refresh(pid as i32);
        }
        ticks += 1;
        if !last && !ticks.is_multiple_of(ticks_per_print) {
            return Ok(());
        }
        let report = Report {
            bpf: &bpf,
            pid: target,
            args: &args,
        };
        let stacks = report.stacks(&mut resolver)?;
        let mut out = out.borrow_mut();
        if args.table.json {
            render::write_json(&mut *out, now_hms(), &stacks)?;
        } else {
            render::write_text(&mut *out, now_hms(), &stacks)?;
        }
        out.flush()
    })?;
    let dropped = bpf.dropped()?;
    if dropped > 0 {
        eprintln!("memleak: {dropped} allocations not followed (the allocation map was full)");
    }
    let lost = if args.trace { bpf.trace_dropped()? } else { 0 };
    if lost > 0 {
        eprintln!("memleak: {lost} calls not printed by -t (its ring was full)");
    }
    let status = match (&mut workload, end) {
        (Some(w), EndReason::TargetExited) => w.wait()?,
        _ => None,
    };
    super::workload_exit(status, &args.command)
}

/// bcc's first line: what is followed (none in JSON).
fn write_attaching(
    out: &mut impl Write,
    args: &MemleakArgs,
    target: Option<u32>,
    found: Option<&allocator::Allocator>,
) -> io::Result<()> {
    if args.table.json {
        return Ok(());
    }
    match (target, found) {
        (Some(pid), Some(found)) => writeln!(
            out,
            "Attaching to pid {pid} ({}), Ctrl+C to quit.",
            found.path.display()
        )?,
        _ if args.percpu => writeln!(
            out,
            "Attaching to kernel per-CPU allocator, Ctrl+C to quit."
        )?,
        _ => writeln!(out, "Attaching to kernel allocators, Ctrl+C to quit.")?,
    }
    out.flush()
}

/// Waits (a millisecond at a time, at most a fifth of a second) until the
/// command's loader has mapped `allocator`: the maps read then name the
/// stacks of a command that exits before the first tick.
fn await_allocator(pid: i32, allocator: &std::path::Path) {
    let start = std::time::Instant::now();
    let wanted = allocator.to_string_lossy();
    while start.elapsed() < Duration::from_millis(200) {
        let mapped = scry::sys::proc::maps(pid)
            .map(|maps| maps.iter().any(|m| m.path == wanted))
            .unwrap_or(true);
        if mapped {
            return;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// What one report reads.
struct Report<'a> {
    bpf: &'a MemleakBpf,
    pid: Option<u32>,
    args: &'a MemleakArgs,
}

impl Report<'_> {
    /// The stacks to print, named.
    fn stacks(&self, resolver: &mut RawStackResolver) -> io::Result<Vec<LeakStack>> {
        let outstanding = self.bpf.outstanding()?;
        let mut stacks = memleak::by_stack(
            &outstanding,
            monotonic_ns(),
            self.args.older.saturating_mul(1_000_000),
            self.args.show_allocs && !self.args.combined_only,
            (
                usize::try_from(self.args.top).unwrap_or(usize::MAX),
                match self.args.sort.as_str() {
                    "count" => LeakSort::Count,
                    _ => LeakSort::Size,
                },
            ),
        );
        let pid = self.pid.map_or(0, |p| p as i32);
        let mut added = Vec::with_capacity(stacks.len());
        for s in &stacks {
            let ips = self.bpf.stack(s.stack_id)?;
            let Some(ips) = ips else {
                added.push(false);
                continue;
            };
            let (kernel, user): (&[u64], &[u64]) = match self.pid {
                Some(_) => (&[], &ips),
                None => (&ips, &[]),
            };
            resolver.add(&RawStack {
                pid,
                tid: pid,
                comm: "",
                kernel,
                user,
                weight: s.bytes,
                top: None,
            });
            added.push(true);
        }
        let named = resolver.take_named();
        memleak::with_frames(&mut stacks, &named, &added);
        Ok(stacks)
    }
}
