//! What every BPF tool's command shares: the one-line refusal when BPF
//! cannot run here (privileges, BTF; checked before loading, and again on
//! a load refused with EPERM), the `-v` lines naming each hook, bcc's
//! `interval [count]` arguments and what each interval's output starts
//! with, and the list `scry tools` prints (also the names a symlink may
//! carry).

use std::io::{self, Write};
use std::time::Duration;

use anyhow::anyhow;

use scry::analysis::hist::{Histogram, KeyedHistogram, Scale};
use scry::capture::bpf_run::{self, RunOptions};
use scry::render::hist::{write_keyed, write_keyed_json};
use scry::sys::bpf_engine::{self, Hook};
use scry::sys::bpf_hists::KeyedSlots;
use scry::sys::localtime::now_hms;

/// The BPF tools: (name, what it shows). A symlink named after one runs it.
pub(crate) const TOOLS: &[(&str, &str)] = &[
    (
        "biolatency",
        "block I/O latency (per disk -D, per flags -F, or both), as a histogram",
    ),
    (
        "bindsnoop",
        "each IPv4/IPv6 bind with its options, port and address, streamed",
    ),
    (
        "biosnoop",
        "each block I/O with its process, disk, bytes and latency, streamed",
    ),
    (
        "biotop",
        "the processes doing the most block I/O, every interval",
    ),
    (
        "bitesize",
        "block I/O request sizes per process name, as histograms",
    ),
    (
        "cachestat",
        "page-cache hits, misses and dirtied pages, every interval",
    ),
    (
        "capable",
        "each capability check with its verdict, streamed",
    ),
    (
        "cpudist",
        "on-CPU (or off-CPU, -O) time per stretch, as a histogram",
    ),
    (
        "drsnoop",
        "each direct reclaim with its latency and pages (--memcg: cgroup reclaims too), streamed",
    ),
    (
        "execsnoop",
        "each execve with its arguments and return code, streamed",
    ),
    (
        "exitsnoop",
        "each process exit with its age and exit code or signal, streamed",
    ),
    (
        "filelife",
        "each file deleted, with its age since its creation, streamed",
    ),
    (
        "filetop",
        "the files read and written the most, per thread, every interval",
    ),
    (
        "fsslower",
        "each file read, write, open and fsync over a threshold, streamed",
    ),
    (
        "funccount",
        "calls of user functions matching a pattern (uprobes), counted in the kernel",
    ),
    (
        "funclatency",
        "latency of user functions matching a pattern (uprobes), as a histogram",
    ),
    (
        "futexctn",
        "user lock contention: futex waits per thread, lock and stack, in the kernel",
    ),
    (
        "hardirqs",
        "time in each hard interrupt handler (-d histograms, -C counts)",
    ),
    (
        "killsnoop",
        "each kill, tkill and tgkill call with its result, streamed",
    ),
    (
        "klockstat",
        "kernel lock contention per caller and type, as perf lock contention -b",
    ),
    (
        "memleak",
        "allocations not freed, by the user (or kernel) stack that made them",
    ),
    (
        "mountsnoop",
        "each mount and umount with its arguments and result, streamed",
    ),
    (
        "offcputime",
        "off-CPU time by kernel and user stack, summed in the kernel",
    ),
    (
        "offwaketime",
        "blocked time by the blocked stack joined to the waker's stack, in the kernel",
    ),
    (
        "oomkill",
        "each OOM kill: the process that triggered it and the one killed, streamed",
    ),
    (
        "opensnoop",
        "each open with its descriptor or error, streamed",
    ),
    (
        "profile-bpf",
        "on-CPU stacks sampled at -F HZ, counted in the kernel (bcc's profile; also oncpu)",
    ),
    (
        "runqlat",
        "run-queue latency (wakeup or preemption to running) as a histogram",
    ),
    (
        "runqlen",
        "each CPU's run-queue length, sampled at 99 Hz (-C per CPU, -O occupancy)",
    ),
    (
        "runqslower",
        "each run-queue wait over a threshold, streamed",
    ),
    (
        "sigsnoop",
        "each signal generated, with its sender and target, streamed",
    ),
    (
        "softirqs",
        "time in each softirq vector (-d histograms, -C counts)",
    ),
    (
        "solisten",
        "each listen on an IPv4/IPv6 socket with its backlog, streamed",
    ),
    (
        "statsnoop",
        "each stat-family call with its path and result, streamed",
    ),
    (
        "swapin",
        "swap-ins per process (swap_read_folio calls), every interval",
    ),
    (
        "syscount",
        "system calls counted per call or per process, with latency (-L)",
    ),
    (
        "tcpaccept",
        "each accepted TCP connection, in the accepting process, streamed",
    ),
    (
        "tcpconnect",
        "each active TCP open, streamed (or counted, -c)",
    ),
    (
        "tcplife",
        "each TCP session at its close: ends, bytes, duration, streamed",
    ),
    (
        "tcpretrans",
        "each retransmitted TCP segment with its state, streamed (or counted, -c)",
    ),
    (
        "tcprtt",
        "TCP round-trip times as a histogram (per address with -b/-B; -i: every interval)",
    ),
    (
        "tcpstates",
        "each TCP state change with the time in the state left, streamed",
    ),
    (
        "tcptop",
        "the TCP connections moving the most bytes, per process, every interval",
    ),
    (
        "threadsnoop",
        "each thread created, with its start function, streamed",
    ),
    (
        "vfsstat",
        "reads, writes, fsyncs, opens and creations per second",
    ),
    (
        "wakeuptime",
        "blocked time by the waker's kernel stack, summed in the kernel",
    ),
];

/// Symlink names that run a tool of another name: bcc's `profile` (as
/// bcc and Debian install it) is `profile-bpf`, since `scry profile` is
/// trace-cmd's. Only a symlink's name (argv0) maps: `scry profile` stays
/// trace-cmd's unless it has a flag only bcc's takes (`bcc_profile_args`).
const ALIASES: &[(&str, &str)] = &[("profile", "profile-bpf"), ("profile-bpfcc", "profile-bpf")];

/// `scry profile` with a flag trace-cmd's profile does not take (`-F 99`,
/// `-f`, as in bcc's `profile -F 99 -af 10`) is bcc's profile: the command
/// line with `profile-bpf` in its place, to parse again when `err`, the
/// first parse's error, is an unknown argument. trace-cmd's profile has no
/// flag bcc's lacks that would be read as one of bcc's, so a line either
/// parses as trace-cmd's or, failing on a bcc flag, as bcc's.
pub(crate) fn bcc_profile_args(
    args: &[std::ffi::OsString],
    err: &clap::Error,
) -> Option<Vec<std::ffi::OsString>> {
    if err.kind() != clap::error::ErrorKind::UnknownArgument
        || args.get(1).is_none_or(|a| a != "profile")
    {
        return None;
    }
    let mut args = args.to_vec();
    args[1] = "profile-bpf".into();
    Some(args)
}

/// `-v` and `--json`, as the tools that print tables take them.
#[derive(clap::Args, Clone, Copy, Debug)]
pub(crate) struct TableArgs {
    /// Say which kernel hooks the programs use.
    #[arg(short = 'v', long = "verbose")]
    pub(crate) verbose: bool,
    /// JSON (one document per interval) instead of the text.
    #[arg(long)]
    pub(crate) json: bool,
}

/// libbpf-tools' summary line of the top tools: `HH:MM:SS loadavg: ...`
/// (/proc/loadavg's text).
pub(crate) fn loadavg_summary() -> String {
    let (h, m, s) = now_hms();
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    format!("{h:02}:{m:02}:{s:02} loadavg: {}", load.trim_end())
}

/// bcc's positional `interval [count]`.
#[derive(clap::Args, Clone, Copy, Debug)]
pub(crate) struct IntervalArgs {
    /// Print every INTERVAL seconds (default: once, at the end: Ctrl-C, or the -p process's exit).
    #[arg(value_name = "INTERVAL", value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) interval: Option<u64>,
    /// Stop after COUNT intervals.
    #[arg(id = "interval_count", value_name = "COUNT", value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) count: Option<u64>,
}

impl IntervalArgs {
    /// The run loop's options: these intervals, ending with process `pid`.
    pub(crate) fn run_options(&self, pid: Option<u32>) -> RunOptions {
        RunOptions {
            interval: self.interval.map(Duration::from_secs),
            count: self.count,
            duration: None,
            pid: pid.map(|p| p as i32),
        }
    }
}

/// libbpf-tools' `-i INTERVAL` and `-d DURATION`.
#[derive(clap::Args, Clone, Copy, Debug)]
pub(crate) struct TimedArgs {
    /// Print every INTERVAL seconds (default: once, at the end).
    #[arg(short = 'i', long = "interval", value_name = "INTERVAL", value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) interval: Option<u64>,
    /// Stop after DURATION seconds (default: Ctrl-C, or the traced process's exit).
    #[arg(short = 'd', long = "duration", value_name = "DURATION", value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) duration: Option<u64>,
}

impl TimedArgs {
    /// The run loop's options: these times, ending with process `pid`.
    pub(crate) fn run_options(&self, pid: Option<u32>) -> RunOptions {
        RunOptions {
            interval: self.interval.map(Duration::from_secs),
            count: None,
            duration: self.duration.map(Duration::from_secs),
            pid: pid.map(|p| p as i32),
        }
    }
}

/// libbpf-tools' `-c CG` (cpudist, runqlat, hardirqs, funclatency): only the tasks
/// under one cgroup v2 directory.
#[derive(clap::Args, Clone, Debug, Default)]
pub(crate) struct CgroupArg {
    /// Only the tasks under this cgroup v2 directory (/sys/fs/cgroup/...).
    #[arg(short = 'c', long = "cgroup", value_name = "CG")]
    pub(crate) cgroup: Option<std::path::PathBuf>,
}

impl CgroupArg {
    /// The directory opened (its descriptor fills the program's cgroup
    /// array), checked before anything loads; none without `-c`.
    pub(crate) fn open(&self, tool: &str) -> anyhow::Result<Option<std::fs::File>> {
        scry::sys::bpf_execsnoop::open_cgroup(self.cgroup.as_deref())
            .map_err(|e| anyhow!("{tool}: {e}"))
    }
}

/// `-r ROWS` of the top tools (biotop, filetop, tcptop), as bcc's.
#[derive(clap::Args, Clone, Copy, Debug)]
pub(crate) struct RowsArg {
    /// At most ROWS rows per interval.
    #[arg(short = 'r', long = "rows", visible_alias = "maxrows", value_name = "ROWS", default_value_t = 20,
          value_parser = clap::value_parser!(u64).range(1..=10240))]
    pub(crate) rows: u64,
}

/// `interval [count]` of the tools that print every interval, as top
/// does (biotop, tcptop): every second by default.
#[derive(clap::Args, Clone, Copy, Debug)]
pub(crate) struct EveryArgs {
    /// Print every INTERVAL seconds.
    #[arg(value_name = "INTERVAL", default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) interval: u64,
    /// Stop after COUNT intervals.
    #[arg(value_name = "COUNT", value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) count: Option<u64>,
}

impl EveryArgs {
    /// The run loop's options: these intervals, ending with process `pid`.
    pub(crate) fn run_options(&self, pid: Option<u32>) -> RunOptions {
        RunOptions {
            interval: Some(Duration::from_secs(self.interval)),
            count: self.count,
            duration: None,
            pid: pid.map(|p| p as i32),
        }
    }
}

/// What each interval's text starts with in libbpf-tools: a blank line,
/// then with `-T` the time (`%-8s` of `HH:MM:SS`).
pub(crate) fn write_interval_head(out: &mut impl Write, timestamp: bool) -> io::Result<()> {
    writeln!(out)?;
    if timestamp {
        let (h, m, s) = now_hms();
        writeln!(out, "{:<8}", format!("{h:02}:{m:02}:{s:02}"))?;
    }
    Ok(())
}

/// The histograms a tool read, labelled as libbpf-tools labels them:
/// `LABEL = KEY COMM` (`pid = 12 cat`) under `-P`/`-L`, none for the
/// single histogram (`label` None).
pub(crate) fn keyed_hists(
    read: &[KeyedSlots],
    label: Option<&str>,
    unit: &str,
) -> Vec<KeyedHistogram> {
    read.iter()
        .map(|h| KeyedHistogram {
            key: h.key,
            label: label.map_or_else(String::new, |l| format!("{l} = {} {}", h.key, h.comm)),
            hist: Histogram::from_slots(Scale::Log2, unit, &h.slots),
        })
        .collect()
}

/// One interval of a histogram tool: a JSON document, or the interval's
/// head and the histograms, as libbpf-tools prints them.
pub(crate) fn write_hists(
    out: &mut impl Write,
    hists: &[KeyedHistogram],
    table: &TableArgs,
    timestamp: bool,
) -> io::Result<()> {
    if table.json {
        write_keyed_json(out, hists)?;
    } else {
        write_interval_head(out, timestamp)?;
        write_keyed(out, hists)?;
    }
    out.flush()
}

/// `-T`, `-v`/`-j` and `[INTERVAL [COUNT]]`, the last flags of the
/// interval tools that stamp each print (cachestat, runqlat); a tool that
/// words `-T` otherwise rewords it with
/// `#[command(mut_arg("timestamp", ...))]`.
#[derive(clap::Args, Debug)]
pub(crate) struct StampedIntervalArgs {
    /// Print a timestamp with each interval.
    #[arg(short = 'T', long = "timestamp")]
    pub(crate) timestamp: bool,
    #[command(flatten)]
    pub(crate) table: TableArgs,
    #[command(flatten)]
    pub(crate) intervals: IntervalArgs,
}

/// `-c CG`, `-v`/`--json` and `[INTERVAL [COUNT]]`, the last flags of the
/// histogram tools that take a cgroup (cpudist, hardirqs, softirqs).
#[derive(clap::Args, Debug)]
pub(crate) struct CgroupTableArgs {
    #[command(flatten)]
    pub(crate) cgroup: CgroupArg,
    #[command(flatten)]
    pub(crate) table: TableArgs,
    #[command(flatten)]
    pub(crate) intervals: IntervalArgs,
}

/// `--stack-storage-size`, `-v`/`-j` and `[DURATION]`, the last flags of
/// the lock tools that print once at the end (futexctn, klockstat).
#[derive(clap::Args, Debug)]
pub(crate) struct StacksUntilArgs {
    /// Distinct stacks kept (default 1024).
    #[arg(long = "stack-storage-size", value_name = "N", default_value_t = 1024, value_parser = clap::value_parser!(u32).range(1..=1_048_576))]
    pub(crate) stack_storage_size: u32,
    #[command(flatten)]
    pub(crate) table: TableArgs,
    /// Trace this many seconds (default: until Ctrl-C or the -p process's exit).
    #[arg(value_name = "DURATION", value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) duration: Option<u64>,
}

/// The line a tool starts with (bcc's `Tracing ... Hit Ctrl-C to end.`),
/// unless it writes JSON; flushed, so it shows before the first interval.
pub(crate) fn write_banner(
    out: &mut impl Write,
    json: bool,
    banner: std::fmt::Arguments<'_>,
) -> io::Result<()> {
    if !json {
        writeln!(out, "{banner}")?;
    }
    out.flush()
}

/// `-v`/`-j` and `[INTERVAL [COUNT]]`, the last flags of the top tools
/// (biotop, filetop, tcptop).
#[derive(clap::Args, Clone, Copy, Debug)]
pub(crate) struct TopTailArgs {
    #[command(flatten)]
    pub(crate) table: TableArgs,
    #[command(flatten)]
    pub(crate) every: EveryArgs,
}

impl TopTailArgs {
    /// The banner top tools start with (bcc's), `end` after it.
    pub(crate) fn write_banner(&self, out: &mut impl Write, end: &str) -> io::Result<()> {
        write_banner(
            out,
            self.table.json,
            format_args!(
                "Tracing... Output every {} secs. Hit Ctrl-C to end{end}",
                self.every.interval
            ),
        )
    }

    /// filetop's and tcptop's run: the banner, then one table every
    /// interval (`interval(out, last)` writes it, `last` the one after
    /// Ctrl-C, the count or the `-p` process's exit), flushed each time.
    pub(crate) fn run(
        &self,
        pid: Option<u32>,
        mut interval: impl FnMut(&mut io::StdoutLock<'static>, bool) -> io::Result<()>,
    ) -> anyhow::Result<()> {
        let mut out = io::stdout().lock();
        self.write_banner(&mut out, "")?;
        bpf_run::run(&self.every.run_options(pid), |last| {
            interval(&mut out, last)?;
            out.flush()
        })?;
        Ok(())
    }
}

/// Loads a tool's programs; a refusal says what is needed in one line.
pub(crate) fn load<T>(tool: &str, load: impl FnOnce() -> io::Result<T>) -> anyhow::Result<T> {
    bpf_engine::preflight().map_err(|why| anyhow!("{tool}: {why}"))?;
    load().map_err(|err| {
        if err.kind() == io::ErrorKind::PermissionDenied {
            anyhow!(
                "{tool}: the kernel refused the BPF programs ({err}): they need CAP_BPF and \
                 CAP_PERFMON (or root), and no lockdown"
            )
        } else {
            anyhow!("{tool}: {err}")
        }
    })
}

/// With `-v`: one line per hook, on stderr.
pub(crate) fn print_hooks(tool: &str, hooks: &[Hook], verbose: bool) {
    if verbose {
        for hook in hooks {
            eprintln!("{tool}: hook {}", hook.describe());
        }
    }
}

/// `scry tools`: one line per tool.
pub(crate) fn list() -> anyhow::Result<()> {
    use std::io::Write;
    let mut out = io::stdout().lock();
    for (name, what) in TOOLS {
        writeln!(out, "{name:<12} {what}")?;
    }
    Ok(())
}

/// The command line as scry parses it: when scry runs through a symlink
/// named after a tool (`syscount -L`, busybox style), the tool's name is
/// put in as the subcommand (`scry syscount -L`).
pub(crate) fn busybox_args(
    args: impl Iterator<Item = std::ffi::OsString>,
) -> Vec<std::ffi::OsString> {
    let mut args: Vec<std::ffi::OsString> = args.collect();
    let called = args
        .first()
        .and_then(|a| std::path::Path::new(a).file_name())
        .and_then(|n| n.to_str())
        .map(str::to_string);
    let called = called.map(
        |name| match ALIASES.iter().find(|(alias, _)| *alias == name) {
            Some((_, tool)) => tool.to_string(),
            None => name,
        },
    );
    if let Some(name) = called
        && TOOLS.iter().any(|(tool, _)| *tool == name)
    {
        args.insert(1, name.into());
    }
    args
}

/// `-p PID` and `-t TID` name a running process and thread.
pub(crate) fn check_pid_tid(tool: &str, pid: Option<u32>, tid: Option<u32>) -> anyhow::Result<()> {
    check_pid(tool, "-p", pid)?;
    check_pid(tool, "-t", tid)
}

/// `FLAG ID` (`-p PID`, `-t TID`, `--ppid PID`) names a running process or
/// thread (checked before anything loads). `-p` and `--ppid` name a
/// process: a thread's id is refused naming its process (/proc/TID exists
/// for any thread, but the programs filter on the process id, and the run
/// loop's pidfd needs a thread-group leader).
pub(crate) fn check_pid(tool: &str, flag: &str, pid: Option<u32>) -> anyhow::Result<()> {
    let Some(pid) = pid else {
        return Ok(());
    };
    if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
        return Err(anyhow!("{tool}: {flag} {pid}: no such process"));
    }
    let names_process = matches!(flag, "-p" | "--ppid");
    match scry::sys::proc::tgid(pid as i32) {
        Ok(tgid) if names_process && tgid != pid as i32 => Err(anyhow!(
            "{tool}: {flag} {pid}: a thread of process {tgid}, not a process (give {flag} {tgid})"
        )),
        _ => Ok(()),
    }
}
