//! `scry bitesize` (bcc's bitesize, libbpf-tools' flags and layout): block
//! I/O request sizes as log2 histograms of Kbytes, one per process name,
//! counted in the kernel at block_rq_issue (per tgid there, summed per
//! name here: `analysis::bio`); `-c COMM` one name, `-d DISK` one disk,
//! `interval [count]` as bcc. Wiring only: `sys::bpf_bio` (mode Size) →
//! `analysis::bio` → `render::hist`.

use std::io::{self};

use clap::Args;

use scry::analysis::bio::sizes_by_comm;
use scry::capture::bpf_run;
use scry::sys::bpf_bio::{self, BioSettings};

use super::biolatency::disk_filter;
use super::bpf_tool::{self, IntervalArgs, TableArgs};

/// A task name's bytes in the kernel (TASK_COMM_LEN less its NUL).
const COMM_MAX: usize = 15;

#[derive(Args, Debug)]
pub(crate) struct BitesizeArgs {
    /// Print a timestamp with each interval.
    #[arg(short = 'T', long = "timestamp")]
    timestamp: bool,
    /// Only processes of this name.
    #[arg(short = 'c', long = "comm", value_name = "COMM")]
    comm: Option<String>,
    /// Only this disk (a name of /proc/partitions).
    #[arg(short = 'd', long = "disk", value_name = "DISK")]
    disk: Option<String>,
    #[command(flatten)]
    table: TableArgs,
    #[command(flatten)]
    intervals: IntervalArgs,
}

pub(crate) fn run(args: BitesizeArgs) -> anyhow::Result<()> {
    if let Some(comm) = &args.comm
        && (comm.is_empty() || comm.len() > COMM_MAX)
    {
        anyhow::bail!("bitesize: -c {comm}: a process name is 1 to {COMM_MAX} bytes");
    }
    let (_, dev) = disk_filter("bitesize", args.disk.as_deref())?;
    let settings = BioSettings {
        dev,
        ..BioSettings::default()
    };
    let mut bpf = bpf_tool::load("bitesize", || bpf_bio::load_size(settings))?;
    bpf_tool::print_hooks("bitesize", &bpf.hooks(), args.table.verbose);
    let mut out = io::stdout().lock();
    bpf_tool::write_banner(
        &mut out,
        args.table.json,
        format_args!("Tracing block device I/O... Hit Ctrl-C to end."),
    )?;
    let run_opts = args.intervals.run_options(None);
    bpf_run::run(&run_opts, |last| {
        if last {
            bpf.detach();
        }
        let hists = sizes_by_comm(&bpf.read()?, args.comm.as_deref());
        bpf_tool::write_hists(&mut out, &hists, &args.table, args.timestamp)
    })?;
    Ok(())
}
