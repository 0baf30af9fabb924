//! Live `scry flamegraph` (`-a`, `-p PID`, `-- COMMAND`): the on-CPU
//! stacks of a run, folded for the graph.
//!
//! The decision: a flame graph needs only stack counts, so they are
//! counted in the kernel (`sys::bpf_oncpu`, profile-bpf's program: a
//! `cpu-clock` at `-F HZ` on each CPU, counts per process, comm and stack
//! pair) and read once at the end; nothing is streamed. `--no-bpf`, or a
//! kernel that refuses BPF (no privilege, no BTF: one line says so), takes
//! the streamed path instead: `scry record -F HZ -g` into a temporary
//! file, folded as a file is. Both give one answer: a sample weighs its
//! period in nanoseconds (in the kernel, 1/HZ s per count, as
//! profile-bpf's exports), the idle task is counted under `-a` (as perf
//! record -a counts it, named `swapper`), and a command is followed from
//! its exec on with what it forks.

use std::ffi::OsString;
use std::io;
use std::time::Instant;

use anyhow::Context;

use scry::analysis::folded::{FoldOptions, FoldedStacks};
use scry::capture::bpf_run::{self, EndReason, RunOptions, Workload};
use scry::render::folded::{FoldedOptions, folded_lines};
use scry::symbol::ResolveOptions;
use scry::symbol::raw_stacks::{Named, RawStackResolver};
use scry::sys::bpf_oncpu::{OncpuBpf, OncpuSettings};
use scry::sys::signal::RunStop;

use super::bpf_tool;
use super::offcputime::{SEE_EVERY, name_sums};

/// What a live flame graph samples.
#[derive(Debug)]
pub(super) struct LiveOptions<'a> {
    /// Every CPU, every task (the idle task too).
    pub(crate) all_cpus: bool,
    /// These processes and what they fork.
    pub(crate) pids: Vec<i32>,
    /// A command run and followed (or, with `all_cpus`, only waited for).
    pub(crate) command: &'a [OsString],
    /// Samples per second on each CPU.
    pub(crate) frequency: u64,
    /// `-v`: the hooks and the time to attach, on stderr.
    pub(crate) verbose: bool,
}

/// The stacks the kernel counted, named; each sample's period in
/// nanoseconds.
#[derive(Debug)]
pub(super) struct KernelStacks {
    pub(crate) named: Named,
}

impl KernelStacks {
    /// The folded lines (`comm;root;...;leaf NANOSECONDS`).
    pub(super) fn folded(&self, annotate_kernel: bool) -> Vec<String> {
        let folded = FoldedStacks::build(&self.named.samples, &FoldOptions::default());
        folded_lines(
            &folded,
            &self.named.frames,
            FoldedOptions { annotate_kernel },
        )
    }
}

/// Counts the stacks in the kernel until the run ends (Ctrl-C, the
/// command's or the one `-p` process's exit); `Ok(None)` when BPF cannot
/// load here (said on stderr, once): the caller streams instead.
pub(super) fn count_in_kernel(
    opts: &LiveOptions<'_>,
    resolve: &ResolveOptions,
) -> anyhow::Result<Option<KernelStacks>> {
    const TOOL: &str = "flamegraph";
    let started = Instant::now();
    if let Err(why) = scry::sys::bpf_engine::preflight() {
        eprintln!("scry: {TOOL}: {why}; sampling through the perf rings instead (--no-bpf)");
        return Ok(None);
    }
    // Caught before the command starts: a Ctrl-C then ends the run and
    // the graph is drawn.
    let stop = RunStop::install().context("installing signal handlers")?;
    let mut workload = match opts.command.is_empty() {
        true => None,
        false => Some(Workload::fork(opts.command)?),
    };
    let settings = OncpuSettings {
        frequency: opts.frequency,
        cpus: None,
        pid: None,
        tid: None,
        targets: !opts.all_cpus,
        include_idle: opts.all_cpus,
        user_stacks: true,
        kernel_stacks: true,
        stack_storage: 16384,
        hash_storage: 40960,
    };
    let mut bpf = match OncpuBpf::load(&settings) {
        Ok(bpf) => bpf,
        Err(err) if err.kind() == io::ErrorKind::PermissionDenied => {
            eprintln!(
                "scry: {TOOL}: the kernel refused the BPF programs ({err}: they need CAP_BPF and \
                 CAP_PERFMON); sampling through the perf rings instead (--no-bpf)"
            );
            return Ok(None);
        }
        Err(err) => return Err(anyhow::anyhow!("{TOOL}: {err}")),
    };
    if !opts.all_cpus {
        for &pid in &opts.pids {
            let tgid = scry::sys::proc::tgid(pid).unwrap_or(pid);
            bpf.watch(tgid, false)
                .with_context(|| format!("watching process {pid} in BPF"))?;
        }
        if let Some(w) = &workload {
            bpf.watch(w.pid(), true)
                .context("watching the command in BPF")?;
        }
    }
    bpf_tool::print_hooks(TOOL, &bpf.hooks(), opts.verbose);
    if opts.verbose {
        eprintln!(
            "{TOOL}: sampling at {} Hz, attached {:.1} ms after the start",
            opts.frequency,
            started.elapsed().as_secs_f64() * 1e3
        );
    }
    if let Some(w) = &mut workload {
        w.start()?;
    }
    let run_opts = RunOptions {
        interval: Some(SEE_EVERY),
        pid: match (&workload, opts.pids.as_slice()) {
            (Some(w), _) => Some(w.pid()),
            (None, [pid]) => Some(*pid),
            _ => None,
        },
        ..RunOptions::default()
    };
    let mut resolver = RawStackResolver::new(resolve);
    let end = bpf_run::run_with(&run_opts, stop, |_| {
        resolver.see(bpf.fresh_tgids()?.into_iter().map(|t| t as i32));
        Ok(())
    })?;
    bpf.detach();
    let mut counts = bpf.read()?;
    let dropped = bpf.dropped()?;
    if dropped > 0 {
        eprintln!("scry: {TOOL}: {dropped} samples not counted (the counts map was full)");
    }
    for c in &mut counts {
        // perf's name for the idle task, whatever CPU it ran on.
        if c.tgid == 0 {
            c.comm = "swapper".to_string();
        }
    }
    let ns_each = 1_000_000_000 / opts.frequency;
    let mut named = name_sums(TOOL, resolver, &counts);
    for s in &mut named.samples {
        s.period = s.period.saturating_mul(ns_each);
    }
    let status = match (&mut workload, end) {
        (Some(w), EndReason::TargetExited) => w.wait()?,
        _ => None,
    };
    super::workload_exit(status, opts.command)?;
    Ok(Some(KernelStacks { named }))
}

/// `scry record`'s flags for the streamed path: `-F HZ -g`, quiet, into
/// `output`, with `-a`, `-p` and the command.
pub(super) fn record_argv(opts: &LiveOptions<'_>, output: &std::path::Path) -> Vec<OsString> {
    let mut argv: Vec<OsString> = vec!["record".into(), "-F".into()];
    argv.push(opts.frequency.to_string().into());
    argv.extend(["-g", "-q"].map(OsString::from));
    if opts.all_cpus {
        argv.push("-a".into());
    }
    if !opts.pids.is_empty() {
        let pids: Vec<String> = opts.pids.iter().map(i32::to_string).collect();
        argv.extend(["-p".into(), pids.join(",").into()]);
    }
    argv.extend(["-o".into(), output.as_os_str().to_owned()]);
    if !opts.command.is_empty() {
        argv.push("--".into());
        argv.extend(opts.command.iter().cloned());
    }
    argv
}
