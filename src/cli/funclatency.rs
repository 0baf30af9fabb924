//! `scry funclatency` (bcc's funclatency, for user functions): the time
//! from entry to return of every function a pattern matches, timed in the
//! kernel by a uprobe and a uretprobe on each, as log2 histograms in
//! nanoseconds (`-u` microseconds, `-m` milliseconds), `-c` a cgroup's
//! tasks only (libbpf-tools'): one (`-p` or a
//! command, without `-F`), else one per function and process, as bcc;
//! then bcc's `avg = ...` line. As bcc without `-l`, only the innermost of
//! nested probed calls is timed; `-l LEVEL` times the outermost LEVEL
//! levels of nested or recursive calls (how, and where bcc's differs, is
//! in `src/bpf/funcs.bpf.c`). Wiring only: `cli::func_probe` →
//! `sys::bpf_funcs` → `analysis::funcs` → `render::hist`, `render::funcs`.

use std::io;

use clap::Args;

use scry::analysis::funcs::{self, Since};
use scry::render::funcs as render;
use scry::sys::bpf_funcs::{FuncsMode, MAX_LEVEL};

use super::bpf_tool;
use super::func_probe::{self, FuncProbeArgs};

#[derive(Args, Debug)]
pub(crate) struct FunclatencyArgs {
    /// Microseconds (default: nanoseconds).
    #[arg(short = 'u', long = "microseconds", conflicts_with = "milliseconds")]
    microseconds: bool,
    /// Milliseconds.
    #[arg(short = 'm', long = "milliseconds")]
    milliseconds: bool,
    /// A histogram per function (and process).
    #[arg(short = 'F', long = "function")]
    function: bool,
    /// Time the outermost LEVEL levels of nested or recursive probed calls
    /// (default: the innermost call only).
    #[arg(short = 'l', long = "level", value_name = "LEVEL",
          value_parser = clap::value_parser!(u32).range(1..=i64::from(MAX_LEVEL)))]
    level: Option<u32>,
    #[command(flatten)]
    cgroup: bpf_tool::CgroupArg,
    #[command(flatten)]
    probe: FuncProbeArgs,
}

pub(crate) fn run(args: FunclatencyArgs) -> anyhow::Result<()> {
    let (unit, div) = match (args.microseconds, args.milliseconds) {
        (true, _) => ("usecs", 1_000),
        (_, true) => ("msecs", 1_000_000),
        _ => ("nsecs", 1),
    };
    let probed = func_probe::load(
        "funclatency",
        &args.probe,
        FuncsMode::Latency {
            unit_div: div,
            level: args.level.unwrap_or(0),
        },
        &args.cgroup,
    )?;
    let mut out = io::stdout().lock();
    probed.header(&mut out, &args.probe)?;
    let names = probed.names.clone();
    let single = probed.pid.is_some() && !args.function;
    let mut since = Since::default();
    let probe = &args.probe;
    probed.run(probe, |bpf, _last| {
        let hists = funcs::latency_hists(&bpf.hists()?, &names, unit, single);
        let totals = since.take(&<[u64; 2]>::from(bpf.totals()?));
        bpf_tool::write_hists(&mut out, &hists, &probe.table, probe.timestamp)?;
        if !probe.table.json {
            render::write_average(&mut out, (totals[0], totals[1]), unit, div)?;
        }
        io::Write::flush(&mut out)
    })
}
