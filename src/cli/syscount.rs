//! `scry syscount` (bcc's syscount, libbpf-tools' flags and layout): system
//! calls counted in the kernel per call or per process (`-P`), with their
//! total latency (`-L`), failed ones only (`-x`), for one process (`-p`),
//! printed every interval (`-i`) or once at the end (Ctrl-C, `-d`, or when
//! the `-p` process exits). Wiring only: `sys::bpf_syscount` →
//! `analysis::syscount` → `render::syscount`.

use std::io::{self, Write};

use clap::Args;

use super::target::PidArg;
use scry::analysis::syscount::{Interval, top_rows};
use scry::capture::bpf_run;
use scry::render::syscount::{SyscountLayout, write_json, write_table};
use scry::sys::bpf_syscount::{SyscountBpf, SyscountSettings};
use scry::sys::localtime::now_hms;

use super::bpf_tool;

#[derive(Args, Debug)]
pub struct SyscountArgs {
    #[command(flatten)]
    target: PidArg,
    #[command(flatten)]
    times: bpf_tool::TimedArgs,
    /// Print only the top TOP rows.
    #[arg(short = 'T', long = "top", value_name = "TOP", default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..))]
    top: u64,
    /// Count only failed calls (a negative return).
    #[arg(short = 'x', long = "failures")]
    failures: bool,
    /// Measure each call's latency and sort by the total.
    #[arg(short = 'L', long = "latency")]
    latency: bool,
    /// Latency in milliseconds (default: microseconds).
    #[arg(short = 'm', long = "milliseconds")]
    milliseconds: bool,
    /// Count per process, not per call.
    #[arg(short = 'P', long = "process")]
    process: bool,
    /// Say which kernel hooks the programs use.
    #[arg(short = 'v', long = "verbose")]
    verbose: bool,
    /// JSON lines instead of the table.
    #[arg(long)]
    json: bool,
}

pub fn run(args: SyscountArgs) -> anyhow::Result<()> {
    let settings = SyscountSettings {
        failed_only: args.failures,
        latency: args.latency,
        by_process: args.process,
        pid: args.target.pid,
    };
    let run_opts = args.times.run_options(args.target.pid);
    let layout = SyscountLayout {
        by_process: args.process,
        latency: args.latency,
        milliseconds: args.milliseconds,
    };
    bpf_tool::check_pid("syscount", "-p", args.target.pid)?;
    let mut bpf = bpf_tool::load("syscount", || SyscountBpf::load(settings))?;
    bpf_tool::print_hooks("syscount", &bpf.hooks(), args.verbose);
    let mut out = io::stdout().lock();
    bpf_tool::write_banner(
        &mut out,
        args.json,
        format_args!(
            "Tracing syscalls, printing top {}... Ctrl+C to quit.",
            args.top
        ),
    )?;
    let mut interval = Interval::default();
    let top = usize::try_from(args.top).unwrap_or(usize::MAX);
    let mut print = |bpf: &mut SyscountBpf, last: bool| -> io::Result<()> {
        if last {
            bpf.detach();
        }
        let read = bpf.read()?;
        let rows = if args.process {
            read
        } else {
            interval.since_last(&read)
        };
        if rows.is_empty() {
            return Ok(());
        }
        let lines = top_rows(&rows, args.process, args.latency, top);
        if args.json {
            write_json(&mut out, &lines)?;
        } else {
            write_table(&mut out, now_hms(), &lines, layout)?;
        }
        out.flush()
    };
    bpf_run::run(&run_opts, |last| print(&mut bpf, last))?;
    Ok(())
}
