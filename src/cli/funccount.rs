//! `scry funccount` (bcc's funccount, for user functions): calls of every
//! function a pattern matches, counted in the kernel by uprobes, printed
//! as bcc's `FUNC COUNT` table at each `-i` interval and at the end; `-c`
//! one CPU. Wiring only: `cli::func_probe` (pattern, target, run) →
//! `sys::bpf_funcs` → `analysis::funcs` → `render::funcs`.

use std::io;

use clap::Args;

use scry::analysis::funcs::{self, Since};
use scry::render::funcs as render;
use scry::sys::bpf_funcs::FuncsMode;

use super::bpf_tool;
use super::func_probe::{self, FuncProbeArgs};

#[derive(Args, Debug)]
pub(crate) struct FunccountArgs {
    /// Count calls on this CPU only.
    #[arg(short = 'c', long = "cpu", value_name = "CPU")]
    cpu: Option<u32>,
    #[command(flatten)]
    probe: FuncProbeArgs,
}

pub(crate) fn run(args: FunccountArgs) -> anyhow::Result<()> {
    let mode = FuncsMode::Count { cpu: args.cpu };
    let no_cgroup = bpf_tool::CgroupArg::default();
    let probed = func_probe::load("funccount", &args.probe, mode, &no_cgroup)?;
    let mut out = io::stdout().lock();
    probed.header(&mut out, &args.probe)?;
    let names = probed.names.clone();
    let mut since = Since::default();
    let probe = &args.probe;
    probed.run(probe, |bpf, _last| {
        let rows = funcs::count_rows(&names, &since.take(&bpf.counts()?));
        if probe.table.json {
            render::write_counts_json(&mut out, &rows)?;
        } else {
            bpf_tool::write_interval_head(&mut out, probe.timestamp)?;
            render::write_counts(&mut out, &rows)?;
        }
        io::Write::flush(&mut out)
    })
}
