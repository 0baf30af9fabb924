//! `scry offcputime` (bcc's offcputime, its flags and layout): time tasks
//! spent blocked, summed in the kernel per thread and stack (kernel and
//! user, from a BPF stack map), printed at the end (Ctrl-C, the duration,
//! or the `-p` process's exit) as bcc's stacks or folded (`-f`). `-p`/`-t`
//! one process or thread, `-u`/`-k` user or kernel threads only, `-U`/`-K`
//! user or kernel stacks only, `-m`/`-M` the blocks' bounds in µs,
//! `--state` the state blocked in (bcc's: 0 preempted, else a bitmask),
//! `--json` the entries and the time per blocked state as one document. While it runs, the maps of each process
//! seen are read every quarter second (`symbol::raw_stacks`), so stacks of
//! processes gone by the end still name their functions. Wiring only:
//! `sys::bpf_offcputime` → `symbol::raw_stacks` → `analysis::offcputime`
//! → `render::offcputime`.

use std::io::{self, Write};
use std::time::Duration;

use anyhow::bail;
use clap::Args;

use super::target::PidArg;
use scry::analysis::offcputime::{OffcpuEntry, StackHalves, offcpu_entries};
use scry::capture::bpf_run::{self, RunOptions};
use scry::render::export::EventKind;
use scry::render::offcputime::{write_offcpu_folded, write_offcpu_json, write_offcpu_stacks};
use scry::symbol::ResolveOptions;
use scry::symbol::raw_stacks::{Named, RawStack, RawStackResolver};
use scry::sys::bpf_engine::Hook;
use scry::sys::bpf_offcputime::{OffcpuSum, OffcputimeBpf, OffcputimeSettings};

use super::bpf_tool;

/// How often the processes seen so far are looked for, to read their maps.
pub(super) const SEE_EVERY: Duration = Duration::from_millis(250);

#[derive(Args, Debug)]
pub(crate) struct OffcputimeArgs {
    #[command(flatten)]
    pub(super) target: PidArg,
    /// Only this thread.
    #[arg(short = 't', long = "tid", value_name = "TID", value_parser = clap::value_parser!(u32).range(1..), conflicts_with = "pid")]
    pub(super) tid: Option<u32>,
    /// User threads only (no kernel threads).
    #[arg(
        short = 'u',
        long = "user-threads-only",
        conflicts_with = "kernel_threads_only"
    )]
    pub(super) user_threads_only: bool,
    /// Kernel threads only (no user threads).
    #[arg(short = 'k', long = "kernel-threads-only")]
    pub(super) kernel_threads_only: bool,
    #[command(flatten)]
    pub(super) stacks: StackArgs,
    /// One JSON document at the end: the entries (largest first) and the
    /// time per state blocked in (no banner).
    #[arg(long, conflicts_with = "folded")]
    pub(super) json: bool,
    #[command(flatten)]
    pub(super) blocks: BlockArgs,
    /// Only blocks that began in this task state, as bcc's --state: 0 only
    /// preempted (TASK_RUNNING), another value a bitmask (1
    /// TASK_INTERRUPTIBLE, 2 TASK_UNINTERRUPTIBLE, also TASK_IDLE; default:
    /// any).
    #[arg(long = "state", value_name = "STATE")]
    pub(super) state: Option<u32>,
    #[command(flatten)]
    pub(super) run: SeeArgs,
}

/// `-v`, `DURATION` and the export flags of the tools that sum stacks in
/// the kernel (offcputime, offwaketime, wakeuptime, profile-bpf).
#[derive(Args, Debug)]
pub(crate) struct SeeArgs {
    /// Say which kernel hooks the programs use.
    #[arg(short = 'v', long = "verbose")]
    pub(crate) verbose: bool,
    /// Trace this many seconds (default: until Ctrl-C or the -p process's exit).
    #[arg(value_name = "DURATION", value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) duration: Option<u64>,
    #[command(flatten)]
    pub(crate) export: super::convert::ToArgs,
}

/// bcc's stack flags, as offcputime, offwaketime and profile take them.
#[derive(Args, Clone, Copy, Debug)]
pub(crate) struct StackArgs {
    /// User stacks only (no kernel frames).
    #[arg(
        short = 'U',
        long = "user-stacks-only",
        conflicts_with = "kernel_stacks_only"
    )]
    pub(super) user_stacks_only: bool,
    /// Kernel stacks only (no user frames).
    #[arg(short = 'K', long = "kernel-stacks-only")]
    pub(super) kernel_stacks_only: bool,
    /// A `--` (folded: `-`) between kernel and user frames.
    #[arg(short = 'd', long = "delimited")]
    pub(super) delimited: bool,
    /// Folded stacks, one line each (for flame graphs).
    #[arg(short = 'f', long = "folded")]
    pub(super) folded: bool,
}

impl StackArgs {
    /// The stacks shown, as bcc's first line names them.
    pub(super) fn label(&self) -> &'static str {
        if self.user_stacks_only {
            "user"
        } else if self.kernel_stacks_only {
            "kernel"
        } else {
            "user + kernel"
        }
    }

    /// The stack halves printed (`-U`, `-K`).
    pub(super) fn halves(&self) -> StackHalves {
        StackHalves {
            user: !self.kernel_stacks_only,
            kernel: !self.user_stacks_only,
        }
    }
}

/// How bcc's first line ends: the duration, or Ctrl-C.
pub(super) fn until(duration: Option<u64>) -> String {
    match duration {
        Some(secs) => format!(" for {secs} secs."),
        None => "... Hit Ctrl-C to end.".to_string(),
    }
}

/// What offcputime and wakeuptime share: the blocks' bounds and the stack
/// map's size.
#[derive(Args, Clone, Copy, Debug)]
pub(crate) struct BlockArgs {
    /// Distinct stacks kept (default 1024).
    #[arg(long = "stack-storage-size", value_name = "N", default_value_t = 1024, value_parser = clap::value_parser!(u32).range(1..=1_048_576))]
    pub(crate) stack_storage_size: u32,
    /// Only blocks of at least this many microseconds (default 1).
    #[arg(
        short = 'm',
        long = "min-block-time",
        value_name = "US",
        default_value_t = 1
    )]
    pub(crate) min_block_time: u64,
    /// Only blocks of at most this many microseconds (default: no bound).
    #[arg(short = 'M', long = "max-block-time", value_name = "US", default_value_t = u64::MAX)]
    pub(crate) max_block_time: u64,
}

impl BlockArgs {
    /// -m below -M, or an error naming both.
    pub(crate) fn check(&self, tool: &str) -> anyhow::Result<()> {
        if self.min_block_time >= self.max_block_time {
            bail!(
                "{tool}: -m {} must be below -M {}",
                self.min_block_time,
                self.max_block_time
            );
        }
        Ok(())
    }
}

/// Names the stacks added, saying on stderr which processes were gone
/// before their maps were read.
pub(crate) fn finish_naming(tool: &str, resolver: RawStackResolver) -> Named {
    let named = resolver.finish();
    if !named.gone.is_empty() {
        eprintln!(
            "{tool}: {} processes exited before their maps were read (their user frames are \
             [unknown]): {:?}",
            named.gone.len(),
            named.gone
        );
    }
    named
}

/// bcc's first line: what is traced, by which stacks, until when.
fn banner(args: &OffcputimeArgs) -> String {
    let threads = match (args.target.pid, args.tid) {
        (Some(pid), _) => format!("PID {pid}"),
        (None, Some(tid)) => format!("TID {tid}"),
        _ if args.user_threads_only => "user threads".to_string(),
        _ if args.kernel_threads_only => "kernel threads".to_string(),
        _ => "all threads".to_string(),
    };
    format!(
        "Tracing off-CPU time (us) of {threads} by {} stack{}",
        args.stacks_label(),
        args.until()
    )
}

impl OffcputimeArgs {
    /// The stacks shown, as bcc's first line names them.
    pub(super) fn stacks_label(&self) -> &'static str {
        self.stacks.label()
    }

    /// How bcc's first line ends: the duration, or Ctrl-C.
    pub(super) fn until(&self) -> String {
        until(self.run.duration)
    }

    /// The programs' settings (offcputime's and offwaketime's).
    pub(super) fn settings(&self) -> OffcputimeSettings {
        OffcputimeSettings {
            pid: self.target.pid,
            tid: self.tid,
            user_threads_only: self.user_threads_only,
            kernel_threads_only: self.kernel_threads_only,
            state: self.state,
            min_block_us: self.blocks.min_block_time,
            max_block_us: self.blocks.max_block_time,
            stack_storage: self.blocks.stack_storage_size,
        }
    }

    /// The stack halves printed (`-U`, `-K`).
    pub(super) fn halves(&self) -> StackHalves {
        self.stacks.halves()
    }

    /// The flags checked (`-m` below `-M`, `-p`/`-t` running).
    pub(super) fn check(&self, tool: &str) -> anyhow::Result<()> {
        self.blocks.check(tool)?;
        bpf_tool::check_pid_tid(tool, self.target.pid, self.tid)
    }

    /// Until the duration, Ctrl-C or the `-p` process's exit, waking
    /// every [`SEE_EVERY`].
    pub(super) fn run_options(&self) -> RunOptions {
        RunOptions {
            interval: Some(SEE_EVERY),
            ..self.target.run_until(self.run.duration)
        }
    }
}

/// The run of the tools that name user stacks: at each wake the maps of
/// the processes `tgids` lists are read (first time seen), and at the end
/// `finish` gets the resolver (and detaches, reads and prints).
pub(super) fn run_seeing<B>(
    opts: &RunOptions,
    bpf: &mut B,
    tgids: impl Fn(&B) -> io::Result<Vec<u32>>,
    finish: impl FnOnce(&mut B, RawStackResolver) -> io::Result<()>,
) -> anyhow::Result<()> {
    let mut raw = Some(RawStackResolver::new(&ResolveOptions::default()));
    let mut finish = Some(finish);
    bpf_run::run(opts, |last| {
        let Some(resolver) = raw.as_mut() else {
            return Ok(());
        };
        resolver.see(tgids(bpf)?.into_iter().map(|t| t as i32));
        if !last {
            return Ok(());
        }
        match (raw.take(), finish.take()) {
            (Some(resolver), Some(finish)) => finish(bpf, resolver),
            _ => Ok(()),
        }
    })?;
    Ok(())
}

/// The sums' stacks added to `resolver` (the maps of the processes still
/// living read first) and named.
pub(super) fn name_sums(tool: &str, mut resolver: RawStackResolver, sums: &[OffcpuSum]) -> Named {
    resolver.see(sums.iter().map(|s| s.tgid as i32));
    for s in sums {
        resolver.add(&RawStack {
            pid: s.tgid as i32,
            tid: s.tid as i32,
            comm: &s.comm,
            kernel: s.kernel.as_deref().unwrap_or_default(),
            user: s.user.as_deref().unwrap_or_default(),
            weight: s.us,
            top: None,
        });
    }
    finish_naming(tool, resolver)
}

/// bcc's stacks, or folded lines (`-f`); `-d` delimits kernel from user.
pub(super) fn write_entries(
    out: &mut impl Write,
    entries: &[OffcpuEntry],
    stacks: StackArgs,
) -> io::Result<()> {
    if stacks.folded {
        write_offcpu_folded(out, entries, stacks.delimited)?;
    } else {
        write_offcpu_stacks(out, entries, stacks.delimited)?;
    }
    out.flush()
}

/// What offcputime and offwaketime do first: the flags checked, the
/// programs loaded (their hooks said with -v), the banner printed unless
/// folded stacks, JSON or an export are asked for.
pub(super) fn start<B>(
    args: &OffcputimeArgs,
    tool: &str,
    load: impl FnOnce(OffcputimeSettings) -> io::Result<B>,
    hooks: impl FnOnce(&B) -> Vec<Hook>,
    banner: impl FnOnce() -> String,
) -> anyhow::Result<(B, io::StdoutLock<'static>)> {
    args.check(tool)?;
    let settings = args.settings();
    let bpf = bpf_tool::load(tool, || load(settings))?;
    bpf_tool::print_hooks(tool, &hooks(&bpf), args.run.verbose);
    let mut out = io::stdout().lock();
    if !args.stacks.folded && !args.json && args.run.export.to.is_none() {
        writeln!(out, "{}", banner())?;
    }
    out.flush()?;
    Ok((bpf, out))
}

/// What offcputime and offwaketime do each their own way at the end of
/// [`run_blocked`]: their programs' sums, how their stacks are named, what
/// `--to` exports of them and how they print.
pub(super) trait Blocked: Sized {
    /// What the programs summed.
    type Sums;
    /// The tool's name, in its messages.
    const TOOL: &'static str;
    /// The export's event (`--to`).
    const EVENT: &'static str;
    /// The processes seen so far, whose maps are read while they live.
    fn tgids(&self) -> io::Result<Vec<u32>>;
    /// The sums, read once the programs are detached.
    fn finish(&mut self) -> io::Result<Self::Sums>;
    /// The sums' stacks named.
    fn name(resolver: RawStackResolver, sums: &Self::Sums) -> Named;
    /// What `--to` exports of the named stacks.
    fn exported(named: Named) -> Named {
        named
    }
    /// The report (bcc's stacks, folded or JSON).
    fn print(
        out: &mut impl Write,
        args: &OffcputimeArgs,
        sums: &Self::Sums,
        named: &Named,
    ) -> io::Result<()>;
}

/// The run of offcputime and offwaketime once [`start`]ed: until the
/// duration, Ctrl-C or the `-p` process's exit, the maps of the processes
/// seen read as they come; then the sums read, named and printed, or
/// exported (`--to`).
pub(super) fn run_blocked<B: Blocked>(
    args: &OffcputimeArgs,
    mut bpf: B,
    mut out: impl Write,
) -> anyhow::Result<()> {
    let mut exported = None;
    run_seeing(&args.run_options(), &mut bpf, B::tgids, |bpf, resolver| {
        let sums = bpf.finish()?;
        let named = B::name(resolver, &sums);
        if args.run.export.to.is_some() {
            exported = Some(B::exported(named));
            return Ok(());
        }
        B::print(&mut out, args, &sums, &named)?;
        out.flush()
    })?;
    export_blocked(&args.run.export, exported, B::EVENT, B::TOOL)
}

impl Blocked for OffcputimeBpf {
    type Sums = Vec<OffcpuSum>;
    const TOOL: &'static str = "offcputime";
    const EVENT: &'static str = "off-cpu";

    fn tgids(&self) -> io::Result<Vec<u32>> {
        OffcputimeBpf::tgids(self)
    }

    fn finish(&mut self) -> io::Result<Vec<OffcpuSum>> {
        self.detach();
        self.read()
    }

    fn name(resolver: RawStackResolver, sums: &Vec<OffcpuSum>) -> Named {
        name_sums(Self::TOOL, resolver, sums)
    }

    fn print(
        out: &mut impl Write,
        args: &OffcputimeArgs,
        sums: &Vec<OffcpuSum>,
        named: &Named,
    ) -> io::Result<()> {
        let entries = offcpu_entries(sums, named, args.halves());
        if args.json {
            return write_offcpu_json(out, &entries);
        }
        write_entries(out, &entries, args.stacks)
    }
}

pub(crate) fn run(args: OffcputimeArgs) -> anyhow::Result<()> {
    let (bpf, out) = start(
        &args,
        "offcputime",
        OffcputimeBpf::load,
        OffcputimeBpf::hooks,
        || banner(&args),
    )?;
    run_blocked(&args, bpf, out)
}

/// `--to`: the stacks summed in the kernel (microseconds) as an export
/// of one off-CPU event in nanoseconds, each stack a sample (kernel and
/// user frames both, whatever -U/-K print). Also wakeuptime's.
pub(super) fn export_blocked(
    export: &super::convert::ToArgs,
    named: Option<Named>,
    event: &'static str,
    tool: &str,
) -> anyhow::Result<()> {
    export_named(export, named, (event, EventKind::OffCpu, 1000), tool)
}

/// `--to` of a BPF stack tool: its named stacks as an export of one
/// event (`(name, kind, nanoseconds per unit of a stack's weight)`),
/// each stack a sample.
pub(super) fn export_named(
    export: &super::convert::ToArgs,
    named: Option<Named>,
    (event, kind, ns_each): (&'static str, EventKind, u64),
    tool: &str,
) -> anyhow::Result<()> {
    let (Some(format), Some(mut named)) = (export.to, named) else {
        return Ok(());
    };
    for sample in &mut named.samples {
        sample.period = sample.period.saturating_mul(ns_each);
    }
    let stacks = super::convert::LiveStacks {
        samples: named.samples,
        frames: named.frames,
        lost: 0,
        event,
        kind,
    };
    super::convert::export_stacks(format, export.output.as_deref(), stacks, tool)
}
