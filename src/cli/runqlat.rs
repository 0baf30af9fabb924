//! `scry runqlat` (bcc's runqlat, libbpf-tools' flags and layout) and the
//! live path of `scry sched runqlat`: run-queue latency counted in the
//! kernel as log2 histograms (one, or per process `-P`, thread `-L`, pid
//! namespace `--pidnss`; `-p` one process, `-c` one cgroup). BPF sees every scheduler event; the perf_event
//! stream `scry sched runqlat --no-bpf` uses misses some raised in the
//! idle task on some kernels (6.18 here). Wiring only:
//! `sys::bpf_runqlat` → `analysis::hist` → `render::hist`.

use std::ffi::OsString;
use std::io;

use clap::Args;

use super::target::PidArg;
use scry::analysis::hist::KeyedHistogram;
use scry::capture::bpf_run::{self, EndReason, RunOptions, Workload};
use scry::sys::bpf_runqlat::{RunqlatBpf, RunqlatKey, RunqlatSettings};
use scry::sys::process::ExitStatus;
use scry::sys::signal::RunStop;

use super::bpf_tool;

#[derive(Args, Debug)]
#[command(mut_arg("pid", |a| a.help("Only this process (and the children it forks from now on)")))]
pub(crate) struct RunqlatArgs {
    /// Milliseconds (default: microseconds).
    #[arg(short = 'm', long = "milliseconds")]
    milliseconds: bool,
    #[command(flatten)]
    per: PerArgs,
    #[command(flatten)]
    target: PidArg,
    #[command(flatten)]
    cgroup: bpf_tool::CgroupArg,
    #[command(flatten)]
    every: bpf_tool::StampedIntervalArgs,
}

/// What a histogram is per: `-P`, `-L`, `--pidnss` (also `scry sched runqlat`'s).
#[derive(Args, Debug, Clone, Copy, Default)]
pub(crate) struct PerArgs {
    /// A histogram per process.
    #[arg(short = 'P', long = "pids", conflicts_with_all = ["tids", "pidnss"])]
    pids: bool,
    /// A histogram per thread.
    #[arg(short = 'L', long = "tids", conflicts_with = "pidnss")]
    tids: bool,
    /// A histogram per PID namespace.
    #[arg(long = "pidnss")]
    pidnss: bool,
}

impl PerArgs {
    fn key(self) -> RunqlatKey {
        match (self.pids, self.tids, self.pidnss) {
            (true, _, _) => RunqlatKey::Process,
            (_, true, _) => RunqlatKey::Thread,
            (_, _, true) => RunqlatKey::PidNamespace,
            _ => RunqlatKey::All,
        }
    }

    /// The label libbpf-tools prints above each histogram.
    fn label(self) -> Option<&'static str> {
        match self.key() {
            RunqlatKey::Process => Some("pid"),
            RunqlatKey::Thread => Some("tid"),
            RunqlatKey::PidNamespace => Some("pidns"),
            RunqlatKey::All => None,
        }
    }

    /// Whether anything but the single histogram was asked for.
    pub(crate) fn keyed(self) -> bool {
        self.key() != RunqlatKey::All
    }
}

fn unit(milliseconds: bool) -> &'static str {
    if milliseconds { "msecs" } else { "usecs" }
}

pub(crate) fn run(args: RunqlatArgs) -> anyhow::Result<()> {
    let settings = RunqlatSettings {
        key: args.per.key(),
        milliseconds: args.milliseconds,
        filter: args.target.pid.is_some(),
        cgroup: args.cgroup.cgroup.is_some(),
    };
    bpf_tool::check_pid("runqlat", "-p", args.target.pid)?;
    let cgroup = args.cgroup.open("runqlat")?;
    let mut bpf = bpf_tool::load("runqlat", || RunqlatBpf::load(settings))?;
    if let Some(dir) = &cgroup {
        bpf.set_cgroup(dir)?;
    }
    if let Some(pid) = args.target.pid {
        bpf.watch(pid)?;
    }
    bpf_tool::print_hooks("runqlat", &bpf.hooks(), args.every.table.verbose);
    let mut out = io::stdout().lock();
    bpf_tool::write_banner(
        &mut out,
        args.every.table.json,
        format_args!("Tracing run queue latency... Hit Ctrl-C to end."),
    )?;
    let run_opts = args.every.intervals.run_options(args.target.pid);
    let (label, unit) = (args.per.label(), unit(args.milliseconds));
    bpf_run::run(&run_opts, |last| {
        if last {
            bpf.detach();
        }
        let hists = bpf_tool::keyed_hists(&bpf.read()?, label, unit);
        bpf_tool::write_hists(&mut out, &hists, &args.every.table, args.every.timestamp)
    })?;
    Ok(())
}

/// What `scry sched runqlat` watches live.
#[derive(Debug)]
pub(crate) struct SchedLive<'a> {
    pub(crate) command: &'a [OsString],
    /// Processes to watch (with their children); none: every task.
    pub(crate) pids: &'a [i32],
    pub(crate) per: PerArgs,
    pub(crate) milliseconds: bool,
    pub(crate) verbose: bool,
}

/// `scry sched runqlat` live, counted in the kernel: the histograms and
/// the command's exit status. `Ok(None)` when BPF cannot run here (the
/// reason was said on stderr): the caller streams events instead.
pub(crate) fn sched_live(
    live: &SchedLive<'_>,
) -> anyhow::Result<Option<(Vec<KeyedHistogram>, Option<ExitStatus>)>> {
    let mut workload = if live.command.is_empty() {
        None
    } else {
        Some(Workload::fork(live.command)?)
    };
    let mut watch: Vec<i32> = live.pids.to_vec();
    if watch.is_empty()
        && let Some(w) = &workload
    {
        watch.push(w.pid());
    }
    let settings = RunqlatSettings {
        key: live.per.key(),
        milliseconds: live.milliseconds,
        filter: !watch.is_empty(),
        cgroup: false,
    };
    let mut bpf = match bpf_tool::load("runqlat", || RunqlatBpf::load(settings)) {
        Ok(bpf) => bpf,
        Err(why) => {
            eprintln!("scry: {why}; streaming the sched events instead");
            return Ok(None);
        }
    };
    for &pid in &watch {
        bpf.watch(pid as u32)?;
    }
    bpf_tool::print_hooks("runqlat", &bpf.hooks(), live.verbose);
    // Caught before the workload starts: a SIGHUP as it starts ends the run.
    let stop = RunStop::install()?;
    if let Some(w) = &mut workload {
        w.start()?;
    }
    let run_opts = RunOptions {
        pid: workload
            .as_ref()
            .map(Workload::pid)
            .or_else(|| (live.pids.len() == 1).then(|| live.pids[0])),
        ..RunOptions::default()
    };
    let mut read = Vec::new();
    let end = bpf_run::run_with(&run_opts, stop, |last| {
        if last {
            bpf.detach();
            read = bpf.read()?;
        }
        Ok(())
    })?;
    let status = match (&mut workload, end) {
        (Some(w), EndReason::TargetExited) => w.wait()?,
        _ => None,
    };
    let hists = bpf_tool::keyed_hists(&read, live.per.label(), unit(live.milliseconds));
    Ok(Some((hists, status)))
}
