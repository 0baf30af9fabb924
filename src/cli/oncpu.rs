//! `scry profile-bpf` (alias `scry oncpu`; a symlink named `profile` or
//! `profile-bpfcc` runs it too): bcc's profile, its flags and layout.
//! On-CPU stacks sampled at `-F HZ` on each CPU (`-C` some only) and
//! counted in the kernel per process, comm and stack pair, printed at the
//! end (Ctrl-C, the duration, or the `-p` process's exit) as bcc's stacks
//! or folded (`-f`, readable by `scry flamegraph`). `-p`/`-L` (`-t`) one
//! process or thread, `-U`/`-K` user or kernel stacks only, `-I` the idle
//! task too, `-d` a delimiter between kernel and user frames, `-a` bcc's
//! `_[k]` annotations on kernel frames (every CPU is the default: `-a` is
//! not perf's system-wide flag here). `scry profile` stays trace-cmd's.
//! `--to FORMAT [-o FILE]` writes the stacks as an export instead
//! (cpu-clock, a sample 1/HZ s), through offcputime's `export_named`.
//! Wiring only: `sys::bpf_oncpu` → `symbol::raw_stacks` →
//! `analysis::offcputime` → `render::offcputime`.

use std::io::{self, Write};
use std::time::Instant;

use clap::Args;

use super::target::PidArg;
use scry::analysis::offcputime::{StackPart, offcpu_entries};
use scry::capture::bpf_run::RunOptions;
use scry::render::export::EventKind;
use scry::sys::bpf_oncpu::{OncpuBpf, OncpuSettings};

use super::bpf_tool;
use super::offcputime::{
    SEE_EVERY, SeeArgs, StackArgs, export_named, name_sums, run_seeing, until, write_entries,
};

#[derive(Args, Debug)]
#[command(mut_arg("duration", |a| a.help("Sample this many seconds (default: until Ctrl-C or the -p process's exit)")))]
pub(crate) struct OncpuArgs {
    #[command(flatten)]
    target: PidArg,
    /// Only this thread (bcc's -L; -t as perf spells it).
    #[arg(short = 'L', long = "tid", short_alias = 't', value_name = "TID", value_parser = clap::value_parser!(u32).range(1..), conflicts_with = "pid")]
    tid: Option<u32>,
    #[command(flatten)]
    stacks: StackArgs,
    /// Count the idle task too (CPU idle in swapper).
    #[arg(short = 'I', long = "include-idle")]
    include_idle: bool,
    /// Samples per second on each CPU (default 49, bcc's).
    #[arg(short = 'F', long = "frequency", value_name = "HZ", default_value_t = 49, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    frequency: u64,
    /// Only these CPUs (0-3,5; default: every CPU).
    #[arg(short = 'C', long = "cpu", value_name = "CPUS")]
    cpu: Option<String>,
    /// `_[k]` after kernel frames (bcc's annotations, for flamegraph's java palette).
    #[arg(short = 'a', long = "annotations")]
    annotations: bool,
    /// Distinct stacks kept (default 16384, bcc's).
    #[arg(long = "stack-storage-size", value_name = "N", default_value_t = 16384, value_parser = clap::value_parser!(u32).range(1..=1_048_576))]
    stack_storage_size: u32,
    /// Distinct (process, stacks) counts kept (default 40960, bcc's).
    #[arg(long = "hash-storage-size", value_name = "N", default_value_t = 40960, value_parser = clap::value_parser!(u32).range(1..=4_194_304))]
    hash_storage_size: u32,
    #[command(flatten)]
    run: SeeArgs,
}

/// bcc's first line: the frequency, what is sampled, until when.
fn banner(args: &OncpuArgs) -> String {
    let threads = match (args.target.pid, args.tid) {
        (Some(pid), _) => format!("PID {pid}"),
        (None, Some(tid)) => format!("TID {tid}"),
        _ => "all threads".to_string(),
    };
    format!(
        "Sampling at {} Hertz of {threads} by {} stack{}",
        args.frequency,
        args.stacks.label(),
        until(args.run.duration)
    )
}

/// The CPUs of `-C`, each online, or a one-line error.
fn cpus(text: Option<&str>) -> anyhow::Result<Option<Vec<u32>>> {
    let Some(cpus) = super::target::parse_cpus(text)? else {
        return Ok(None);
    };
    let online = scry::sys::proc::online_cpus()?;
    if let Some(cpu) = cpus.iter().find(|c| !online.contains(c)) {
        anyhow::bail!("profile-bpf: -C: CPU {cpu} is not online (online: {online:?})");
    }
    Ok(Some(cpus))
}

pub(crate) fn run(args: OncpuArgs) -> anyhow::Result<()> {
    const TOOL: &str = "profile-bpf";
    let settings = OncpuSettings {
        frequency: args.frequency,
        cpus: cpus(args.cpu.as_deref())?,
        pid: args.target.pid,
        tid: args.tid,
        targets: false,
        include_idle: args.include_idle,
        user_stacks: !args.stacks.kernel_stacks_only,
        kernel_stacks: !args.stacks.user_stacks_only,
        stack_storage: args.stack_storage_size,
        hash_storage: args.hash_storage_size,
    };
    let run_opts = RunOptions {
        interval: Some(SEE_EVERY),
        ..args.target.run_until(args.run.duration)
    };
    bpf_tool::check_pid(TOOL, "-p", args.target.pid)?;
    bpf_tool::check_pid(TOOL, "-L", args.tid)?;
    let loading = Instant::now();
    let mut bpf = bpf_tool::load(TOOL, || OncpuBpf::load(&settings))?;
    bpf_tool::print_hooks(TOOL, &bpf.hooks(), args.run.verbose);
    if args.run.verbose {
        eprintln!(
            "{TOOL}: loaded and attached in {:.1} ms",
            loading.elapsed().as_secs_f64() * 1e3
        );
    }
    let mut out = io::stdout().lock();
    if !args.stacks.folded && args.run.export.to.is_none() {
        writeln!(out, "{}", banner(&args))?;
    }
    out.flush()?;
    let halves = args.stacks.halves();
    let mut exported = None;
    run_seeing(
        &run_opts,
        &mut bpf,
        OncpuBpf::fresh_tgids,
        |bpf, resolver| {
            bpf.detach();
            let counts = bpf.read()?;
            let dropped = bpf.dropped()?;
            if dropped > 0 {
                eprintln!(
                    "WARNING: {dropped} samples not counted (the counts map was full). \
                 Consider increasing --hash-storage-size."
                );
            }
            let naming = Instant::now();
            let named = name_sums(TOOL, resolver, &counts);
            if args.run.verbose {
                eprintln!(
                    "{TOOL}: {} counts named in {:.1} ms",
                    counts.len(),
                    naming.elapsed().as_secs_f64() * 1e3
                );
            }
            if args.run.export.to.is_some() {
                exported = Some(named);
                return Ok(());
            }
            let mut entries = offcpu_entries(&counts, &named, halves);
            let missed = entries
                .iter()
                .filter(|e| e.kernel == StackPart::Missed || e.user == StackPart::Missed)
                .count();
            if missed > 0 {
                eprintln!(
                    "WARNING: {missed} stack traces could not be displayed. \
                 Consider increasing --stack-storage-size."
                );
            }
            if args.annotations {
                for e in &mut entries {
                    if let StackPart::Frames(frames) = &mut e.kernel {
                        frames.iter_mut().for_each(|f| f.push_str("_[k]"));
                    }
                }
            }
            write_entries(&mut out, &entries, args.stacks)
        },
    )?;
    // A sample stands for 1/HZ s of CPU.
    let event = (
        "cpu-clock",
        EventKind::Clock,
        1_000_000_000 / args.frequency,
    );
    export_named(&args.run.export, exported, event, TOOL)
}
