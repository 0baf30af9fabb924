//! `scry vfsstat` (bcc's vfsstat and its layout): reads, writes, fsyncs,
//! opens and creations per second, counted in the kernel from the
//! system-call tracepoints, every `interval` seconds (default 1) `count`
//! times; `-p` one process (scry's addition: an exact count of one
//! program). Wiring only: `sys::bpf_vfsstat` → `analysis::vfsstat` →
//! `render::vfsstat`.

use std::io::{self, Write};
use std::time::{Duration, Instant};

use clap::Args;

use super::target::PidArg;
use scry::analysis::vfsstat::VfsInterval;
use scry::capture::bpf_run::{self, RunOptions};
use scry::render::vfsstat;
use scry::sys::bpf_vfsstat::VfsstatBpf;
use scry::sys::localtime::now_hms;

use super::bpf_tool;

#[derive(Args, Debug)]
#[command(mut_arg("pid", |a| a.help("Only this process's calls (ends when it exits)")))]
pub(crate) struct VfsstatArgs {
    #[command(flatten)]
    target: PidArg,
    /// Say which kernel hooks the programs use.
    #[arg(short = 'v', long = "verbose")]
    verbose: bool,
    /// One JSON object per interval instead of the table.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    intervals: bpf_tool::IntervalArgs,
}

pub(crate) fn run(args: VfsstatArgs) -> anyhow::Result<()> {
    bpf_tool::check_pid("vfsstat", "-p", args.target.pid)?;
    let bpf = bpf_tool::load("vfsstat", || VfsstatBpf::load(args.target.pid))?;
    bpf_tool::print_hooks("vfsstat", &bpf.hooks(), args.verbose);
    let opts = RunOptions {
        interval: Some(Duration::from_secs(args.intervals.interval.unwrap_or(1))),
        ..args.intervals.run_options(args.target.pid)
    };
    let mut out = io::BufWriter::new(io::stdout().lock());
    if !args.json {
        vfsstat::header(&mut out)?;
    }
    out.flush()?;
    let mut before = bpf.read()?;
    let mut since = Instant::now();
    bpf_run::run(&opts, |_last| {
        let now = bpf.read()?;
        let interval = VfsInterval::between(&before, &now, since.elapsed().as_secs_f64());
        (before, since) = (now, Instant::now());
        if args.json {
            vfsstat::json(&mut out, now_hms(), &interval)?;
        } else {
            vfsstat::line(&mut out, now_hms(), &interval)?;
        }
        out.flush()
    })?;
    Ok(())
}
