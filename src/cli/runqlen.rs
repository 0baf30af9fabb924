//! `scry runqlen` (bcc's runqlen, libbpf-tools' flags and layout): the
//! length of each CPU's run queue, sampled in the kernel at 99 Hz (`-f`),
//! as a linear histogram, one per CPU with `-C`, or the run queue's
//! occupancy (`-O`); `-T` timestamps, `interval [count]` as bcc,
//! `--json`. Wiring only: `sys::bpf_runqlen` → `analysis::hist` →
//! `render::runqlen`.

use std::io::{self, Write};

use clap::Args;

use scry::analysis::hist::{Histogram, KeyedHistogram, Scale};
use scry::capture::bpf_run;
use scry::render::hist::write_keyed_json;
use scry::render::runqlen::{write_occupancy, write_runqlen};
use scry::sys::bpf_runqlen::{RunqlenBpf, RunqlenSettings};

use super::bpf_tool;

#[derive(Args, Debug)]
pub(crate) struct RunqlenArgs {
    /// A histogram (or occupancy) per CPU.
    #[arg(short = 'C', long = "cpus")]
    cpus: bool,
    /// The run queue's occupancy: the share of samples with a task waiting.
    #[arg(short = 'O', long = "runqocc")]
    runqocc: bool,
    /// Print a timestamp with each interval.
    #[arg(short = 'T', long = "timestamp")]
    timestamp: bool,
    /// Samples per second on each CPU (default 99).
    #[arg(short = 'f', long = "frequency", value_name = "HZ", default_value_t = 99, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    frequency: u64,
    #[command(flatten)]
    table: bpf_tool::TableArgs,
    #[command(flatten)]
    intervals: bpf_tool::IntervalArgs,
}

pub(crate) fn run(args: RunqlenArgs) -> anyhow::Result<()> {
    let settings = RunqlenSettings {
        per_cpu: args.cpus,
        frequency: args.frequency,
    };
    let run_opts = args.intervals.run_options(None);
    let mut bpf = bpf_tool::load("runqlen", || RunqlenBpf::load(settings))?;
    bpf_tool::print_hooks("runqlen", &bpf.hooks(), args.table.verbose);
    let mut out = io::stdout().lock();
    bpf_tool::write_banner(
        &mut out,
        args.table.json,
        format_args!("Sampling run queue length... Hit Ctrl-C to end."),
    )?;
    let mut print = |bpf: &mut RunqlenBpf, last: bool| -> io::Result<()> {
        if last {
            bpf.detach();
        }
        let hists: Vec<KeyedHistogram> = bpf
            .read(args.cpus)?
            .into_iter()
            .map(|(cpu, slots)| KeyedHistogram {
                key: u64::from(cpu),
                label: if args.cpus {
                    format!("cpu = {cpu}")
                } else {
                    String::new()
                },
                hist: Histogram::from_slots(Scale::Linear { base: 0, step: 1 }, "runqlen", &slots),
            })
            .collect();
        if args.table.json {
            write_keyed_json(&mut out, &hists)?;
            return out.flush();
        }
        bpf_tool::write_interval_head(&mut out, args.timestamp)?;
        if args.runqocc {
            write_occupancy(&mut out, &hists, args.cpus)?;
        } else {
            write_runqlen(&mut out, &hists, args.cpus)?;
        }
        out.flush()
    };
    bpf_run::run(&run_opts, |last| print(&mut bpf, last))?;
    Ok(())
}
