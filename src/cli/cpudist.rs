//! `scry cpudist` (bcc's cpudist, libbpf-tools' flags and layout): how long
//! tasks ran on a CPU per stretch (`-O`: how long they were off it), as
//! log2 histograms counted in the kernel: one, or one per process (`-P`)
//! or thread (`-L`); `-p` one process, `-c` one cgroup; `interval
//! [count]` as bcc; the idle task left out unless `-I` (bcc's rule);
//! `-e` bcc's average line after the histograms. Wiring
//! only: `sys::bpf_cpudist` → `analysis::hist` → `render::hist`.

use std::io::{self, Write};

use clap::Args;

use super::target::PidArg;
use scry::capture::bpf_run;
use scry::render::funcs::write_average;
use scry::sys::bpf_cpudist::{CpudistBpf, CpudistSettings};

use super::bpf_tool;

#[derive(Args, Debug)]
pub(crate) struct CpudistArgs {
    /// Measure off-CPU time instead of on-CPU time.
    #[arg(short = 'O', long = "offcpu")]
    offcpu: bool,
    /// Print a timestamp with each interval.
    #[arg(short = 'T', long = "timestamp")]
    timestamp: bool,
    /// Milliseconds (default: microseconds).
    #[arg(short = 'm', long = "milliseconds")]
    milliseconds: bool,
    /// A histogram per process.
    #[arg(short = 'P', long = "pids", conflicts_with = "tids")]
    pids: bool,
    /// A histogram per thread.
    #[arg(short = 'L', long = "tids")]
    tids: bool,
    /// Count the CPUs' idle task too (pid 0; default: left out, as bcc).
    #[arg(short = 'I', long = "include-idle")]
    include_idle: bool,
    /// After the histograms, bcc's summary: `avg = A usecs, total: T
    /// usecs, count: N`.
    #[arg(short = 'e', long = "extension")]
    extension: bool,
    #[command(flatten)]
    target: PidArg,
    #[command(flatten)]
    tail: bpf_tool::CgroupTableArgs,
}

pub(crate) fn run(args: CpudistArgs) -> anyhow::Result<()> {
    let settings = CpudistSettings {
        off_cpu: args.offcpu,
        per_process: args.pids,
        per_thread: args.tids,
        milliseconds: args.milliseconds,
        pid: args.target.pid,
        cgroup: args.tail.cgroup.cgroup.is_some(),
        include_idle: args.include_idle,
    };
    let run_opts = args.tail.intervals.run_options(args.target.pid);
    bpf_tool::check_pid("cpudist", "-p", args.target.pid)?;
    let cgroup = args.tail.cgroup.open("cpudist")?;
    let mut bpf = bpf_tool::load("cpudist", || CpudistBpf::load(settings))?;
    if let Some(dir) = &cgroup {
        bpf.set_cgroup(dir)?;
    }
    bpf_tool::print_hooks("cpudist", &bpf.hooks(), args.tail.table.verbose);
    let mut out = io::stdout().lock();
    if !args.tail.table.json {
        let which = if args.offcpu { "off" } else { "on" };
        writeln!(out, "Tracing {which}-CPU time... Hit Ctrl-C to end.")?;
    }
    out.flush()?;
    let unit = if args.milliseconds { "msecs" } else { "usecs" };
    let label = match (args.pids, args.tids) {
        (true, _) => Some("pid"),
        (_, true) => Some("tid"),
        _ => None,
    };
    let mut print = |bpf: &mut CpudistBpf, last: bool| -> io::Result<()> {
        if last {
            bpf.detach();
        }
        let read = bpf.read()?;
        let slots: Vec<_> = read.iter().map(|h| h.slots.clone()).collect();
        let hists = bpf_tool::keyed_hists(&slots, label, unit);
        bpf_tool::write_hists(&mut out, &hists, &args.tail.table, args.timestamp)?;
        if args.extension && !args.tail.table.json {
            let total = read.iter().map(|h| h.sum).sum();
            let count = hists.iter().map(|h| h.hist.total()).sum();
            write_average(&mut out, (total, count), unit, 1)?;
        }
        out.flush()
    };
    bpf_run::run(&run_opts, |last| print(&mut bpf, last))?;
    Ok(())
}
