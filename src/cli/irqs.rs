//! `scry hardirqs` and `scry softirqs` (bcc's tools, libbpf-tools' flags
//! and layout): time spent in each hard interrupt handler or softirq
//! vector, summed in the kernel (`-d`: as histograms, `-C`: events
//! counted instead), `-N` nanoseconds, `-T` timestamps, `-c` one cgroup
//! (libbpf-tools' hardirqs has it; softirqs takes it too), `--cpu` one
//! CPU (bcc's `-c CPU`: `-c` is the cgroup here), `interval
//! [count]` as bcc, `--json`. Both tools take the same flags, so one
//! `IrqsArgs` serves both. Wiring only: `sys::bpf_irqs` →
//! `analysis::irqs` → `render::irqs`.

use std::io::{self, Write};

use anyhow::{anyhow, bail};
use clap::Args;

use scry::analysis::irqs::irq_rows;
use scry::capture::bpf_run;
use scry::render::irqs::{write_irq_hists, write_irq_json, write_irq_table};
use scry::sys::bpf_irqs::{IrqKind, IrqMeasure, IrqSettings, IrqsBpf};

use super::bpf_tool;

#[derive(Args, Debug)]
pub(crate) struct IrqsArgs {
    /// Show event counts instead of time.
    #[arg(short = 'C', long = "count", conflicts_with = "distributed")]
    count: bool,
    /// Show the time as histograms.
    #[arg(short = 'd', long = "distributed")]
    distributed: bool,
    /// Nanoseconds (default: microseconds).
    #[arg(short = 'N', long = "nanoseconds")]
    nanoseconds: bool,
    /// Print a timestamp with each interval.
    #[arg(short = 'T', long = "timestamp")]
    timestamp: bool,
    /// Only this CPU's interrupts (bcc's -c CPU; -c is the cgroup here,
    /// as in libbpf-tools).
    #[arg(long = "cpu", value_name = "CPU")]
    cpu: Option<u32>,
    #[command(flatten)]
    tail: bpf_tool::CgroupTableArgs,
}

pub(crate) fn run(kind: IrqKind, args: IrqsArgs) -> anyhow::Result<()> {
    let (tool, what) = match kind {
        IrqKind::Hard => ("hardirqs", "hard irq"),
        IrqKind::Soft => ("softirqs", "soft irq"),
    };
    let measure = if args.count {
        IrqMeasure::Count
    } else if args.distributed {
        IrqMeasure::Dist
    } else {
        IrqMeasure::Total
    };
    let settings = IrqSettings {
        kind,
        measure,
        nanoseconds: args.nanoseconds,
        cgroup: args.tail.cgroup.cgroup.is_some(),
        cpu: args.cpu,
    };
    if let Some(cpu) = args.cpu {
        let online = scry::sys::proc::online_cpus()
            .map_err(|e| anyhow!("{tool}: --cpu {cpu}: reading the online CPUs: {e}"))?;
        if !online.contains(&cpu) {
            bail!("{tool}: --cpu {cpu}: no such CPU online (online: {online:?})");
        }
    }
    let run_opts = args.tail.intervals.run_options(None);
    let cgroup = args.tail.cgroup.open(tool)?;
    let mut bpf = bpf_tool::load(tool, || IrqsBpf::load(settings))?;
    if let Some(dir) = &cgroup {
        bpf.set_cgroup(dir)?;
    }
    bpf_tool::print_hooks(tool, &bpf.hooks(), args.tail.table.verbose);
    let mut out = io::stdout().lock();
    if !args.tail.table.json {
        let events = if args.count { "events" } else { "event time" };
        writeln!(out, "Tracing {what} {events}... Hit Ctrl-C to end.")?;
    }
    out.flush()?;
    let unit = match (args.count, args.nanoseconds) {
        (true, _) => "count",
        (false, true) => "nsecs",
        (false, false) => "usecs",
    };
    let mut print = |bpf: &mut IrqsBpf, last: bool| -> io::Result<()> {
        if last {
            bpf.detach();
        }
        let rows = irq_rows(kind, &bpf.read()?, unit);
        if args.tail.table.json {
            write_irq_json(&mut out, unit, &rows)?;
            return out.flush();
        }
        bpf_tool::write_interval_head(&mut out, args.timestamp)?;
        if args.distributed {
            write_irq_hists(&mut out, kind, &rows)?;
        } else {
            write_irq_table(&mut out, kind, unit, &rows)?;
        }
        out.flush()
    };
    bpf_run::run(&run_opts, |last| print(&mut bpf, last))?;
    Ok(())
}
