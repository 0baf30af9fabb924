//! The flags that say what to watch (`-p`, `-t`, `-a`, `-C`) and how to
//! sample it (`-F`, `-c`, `-g`, `--call-graph`): one declaration each,
//! flattened into `record`, `stat` and `top`; the live commands' `-p
//! PID[,PID...]` ([`PidsArg`], [`WatchArgs`]) and the BPF tools' `-p PID`
//! ([`PidArg`]) likewise.
//!
//! The help lines are `record`'s; a command whose wording differs (`stat`
//! counts rather than watches) rewords them with `#[command(mut_arg(...))]`,
//! so the flags and their parsing stay one copy. What a target means (is
//! `-C` system-wide? is the default system-wide?) stays with each command.

use std::ffi::OsString;
use std::time::Duration;

use anyhow::Context;
use clap::Args;

use scry::capture::bpf_run::RunOptions;
use scry::capture::{CallGraph, DEFAULT_FP_STACK_SIZE, Sampling, Target};

/// `-p`, `-t`, `-a`, `-C`.
#[derive(Args, Debug)]
#[command(mut_arg("pid", |a| a.help("Watch these processes (all their threads): PID[,PID...]")))]
pub(crate) struct TargetArgs {
    #[command(flatten)]
    pub(crate) pid: PidsArg,
    /// Watch these threads: TID[,TID...].
    #[arg(short = 't', long = "tid", value_name = "TID")]
    pub(crate) tid: Option<String>,
    /// Watch every CPU (system-wide).
    #[arg(short = 'a', long = "all-cpus")]
    pub(crate) all_cpus: bool,
    /// Watch these CPUs only (0-3,5).
    #[arg(short = 'C', long = "cpu", value_name = "CPUS")]
    pub(crate) cpu: Option<String>,
}

impl TargetArgs {
    /// The flags around `command` (`tool`'s), as given: `system_wide` is
    /// `-a` alone.
    pub(crate) fn to_target(&self, tool: &str, command: &[OsString]) -> anyhow::Result<Target> {
        check_command(tool, command)?;
        Ok(Target {
            command: command.to_vec(),
            pids: self.pid.pids()?,
            tids: parse_id_list(self.tid.as_deref(), "-t")?,
            system_wide: self.all_cpus,
            cpus: parse_cpus(self.cpu.as_deref())?,
        })
    }
}

/// `-p PID[,PID...]` of the commands that watch processes: `trace`,
/// `flamegraph`, `top`, in [`TargetArgs`] `record` and `stat`, and in
/// [`WatchArgs`] `offcpu`, `sched`, `profile`. A
/// command whose help says more rewords it with
/// `#[command(mut_arg("pid", ...))]`.
#[derive(Args, Debug)]
pub(crate) struct PidsArg {
    /// Watch these processes (and what they fork): PID[,PID...].
    #[arg(short = 'p', long = "pid", value_name = "PID")]
    pub(crate) pid: Option<String>,
}

impl PidsArg {
    /// The ids given; none without `-p`.
    pub(crate) fn pids(&self) -> anyhow::Result<Vec<i32>> {
        parse_id_list(self.pid.as_deref(), "-p")
    }
}

/// `-a`, `-p` of the live analyses (`offcpu`, `sched`, `profile`,
/// `flamegraph`): which tasks to keep. Their capture itself is always
/// system-wide (`CaptureOptions::every_switch`); a command after `--` is
/// watched when no `-p` is given.
#[derive(Args, Debug)]
pub(crate) struct WatchArgs {
    /// Watch every task on every CPU.
    #[arg(short = 'a', long = "all-cpus")]
    pub(crate) all_cpus: bool,
    #[command(flatten)]
    pub(crate) pid: PidsArg,
}

impl WatchArgs {
    /// The `-p` ids, each checked to exist, after checking that something
    /// is watched at all (`-a`, `-p` or `command`, `tool`'s, whose program
    /// is checked too).
    pub(crate) fn live_pids(&self, tool: &str, command: &[OsString]) -> anyhow::Result<Vec<i32>> {
        let pids = self.pid.pids()?;
        if command.is_empty() && pids.is_empty() && !self.all_cpus {
            anyhow::bail!("nothing to watch: give a command after --, or -p PID, or -a");
        }
        if let Some(pid) = pids.iter().find(|&&pid| !scry::sys::proc::exists(pid)) {
            anyhow::bail!("no such process: {pid}");
        }
        check_command(tool, command)?;
        Ok(pids)
    }
}

/// The one check of a command to run, before anything is loaded or
/// forked (every command that takes one: `-c CMD` or `-- COMMAND`): its
/// program found in PATH (or named by a path) and executable, else
/// `{what}: no program 'P' to run (not in PATH, or not executable)`,
/// exit 2. `what` says whose command it is (`record`, or scry run's
/// `scry run: -c CMD`). No command: nothing to check.
pub(crate) fn check_command(what: &str, command: &[OsString]) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    use std::path::Path;
    let Some(program) = command.first() else {
        return Ok(());
    };
    let runnable = |p: &Path| {
        p.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    let program = Path::new(program);
    let found = if program.components().count() > 1 {
        runnable(program)
    } else {
        // Without PATH, exec searches the C library's default path (execvp's).
        let path = std::env::var_os("PATH").unwrap_or_else(|| "/bin:/usr/bin".into());
        std::env::split_paths(&path).any(|d| runnable(&d.join(program)))
    };
    if !found {
        anyhow::bail!(
            "{what}: no program '{}' to run (not in PATH, or not executable)",
            program.display()
        );
    }
    Ok(())
}

/// `-p PID` of the BPF tools: one process, a number above 0. A tool
/// whose help says more (what "only" keeps, that the tool ends with it)
/// rewords it with `#[command(mut_arg("pid", ...))]`.
#[derive(Args, Clone, Copy, Debug)]
pub(crate) struct PidArg {
    /// Only this process.
    #[arg(short = 'p', long = "pid", value_name = "PID", value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) pid: Option<u32>,
}

impl PidArg {
    /// The BPF run loop's options: one print at the end, after `duration`
    /// seconds, Ctrl-C or this process's exit.
    pub(crate) fn run_until(&self, duration: Option<u64>) -> RunOptions {
        RunOptions {
            interval: None,
            count: None,
            duration: duration.map(Duration::from_secs),
            pid: self.pid.map(|p| p as i32),
        }
    }
}

/// A `-p`/`-t` value into ids; none when the flag is absent.
pub(crate) fn parse_id_list(text: Option<&str>, flag: &str) -> anyhow::Result<Vec<i32>> {
    Ok(text
        .map(|t| super::parse_ids(t, flag))
        .transpose()?
        .unwrap_or_default())
}

/// `-m PAGES` (given or defaulted): the rings' data pages, a power of two.
pub(crate) fn checked_mmap_pages(pages: usize) -> anyhow::Result<usize> {
    if pages == 0 || !pages.is_power_of_two() {
        anyhow::bail!("-m: ring buffer pages must be a power of two, got {pages}");
    }
    Ok(pages)
}

/// A `-C` value (`0-3,5`) into CPU numbers.
pub(crate) fn parse_cpus(text: Option<&str>) -> anyhow::Result<Option<Vec<u32>>> {
    text.map(|text| {
        scry::sys::proc::parse_cpu_list(text)
            .with_context(|| format!("-C: expected a CPU list like 0-3,5, got '{text}'"))
    })
    .transpose()
}

/// `-F`, `-c`, `-g`, `--call-graph`.
#[derive(Args, Debug)]
pub(crate) struct SamplingArgs {
    /// Sample at this frequency (Hz). Default 4000 (tracepoints and uprobes: every event).
    #[arg(
        short = 'F',
        long = "freq",
        value_name = "HZ",
        conflicts_with = "count"
    )]
    pub(crate) freq: Option<u64>,
    /// Sample every N events.
    #[arg(short = 'c', long = "count", value_name = "N")]
    pub(crate) count: Option<u64>,
    /// Record kernel and user call chains: frame pointers, repaired where a
    /// frameless function hid its caller; same as --call-graph fp+stack.
    #[arg(short = 'g')]
    pub(crate) callchain: bool,
    /// fp+stack[,STACK_BYTES] (the default of -g; 128 bytes): frame pointers
    /// plus the top of the user stack, unwound at report time where the chain
    /// lost a caller; fp: frame pointers only; dwarf[,STACK_BYTES] (8192):
    /// copy the user stack and registers to unwind later.
    #[arg(long = "call-graph", value_name = "MODE")]
    pub(crate) call_graph: Option<String>,
}

impl SamplingArgs {
    /// `-F` or `-c`; `None` when neither is given (the caller's default).
    pub(crate) fn sampling(&self) -> anyhow::Result<Option<Sampling>> {
        Ok(match (self.freq, self.count) {
            (Some(0), _) => anyhow::bail!("-F: frequency must be above 0"),
            (Some(hz), _) => Some(Sampling::Frequency(hz)),
            (None, Some(0)) => anyhow::bail!("-c: period must be above 0"),
            (None, Some(n)) => Some(Sampling::Period(n)),
            (None, None) => None,
        })
    }

    /// `--call-graph` / `-g` into a mode.
    pub(crate) fn call_graph(&self) -> anyhow::Result<CallGraph> {
        let Some(mode) = self.call_graph.as_deref() else {
            return Ok(if self.callchain {
                CallGraph::FramePointerStack {
                    stack_size: DEFAULT_FP_STACK_SIZE,
                }
            } else {
                CallGraph::None
            });
        };
        let mut parts = mode.split(',');
        match parts.next() {
            Some("fp") => Ok(CallGraph::FramePointer),
            Some(m @ ("dwarf" | "fp+stack")) => {
                let stack_size = match parts.next() {
                    Some(n) => n.parse::<u32>().ok().filter(|&n| n > 0 && n <= 65528).with_context(|| {
                        format!("--call-graph {m},SIZE: SIZE must be a number of bytes up to 65528, got '{n}'")
                    })?,
                    None if m == "dwarf" => 8192,
                    None => DEFAULT_FP_STACK_SIZE,
                };
                let stack_size = stack_size.next_multiple_of(8);
                Ok(if m == "dwarf" {
                    CallGraph::Dwarf { stack_size }
                } else {
                    CallGraph::FramePointerStack { stack_size }
                })
            }
            Some("lbr") => anyhow::bail!("--call-graph lbr needs a hardware PMU; use fp or dwarf"),
            _ => anyhow::bail!(
                "--call-graph: unknown mode '{mode}' (use fp+stack[,SIZE], fp or dwarf[,SIZE])"
            ),
        }
    }
}
