//! `scry exitsnoop` (bcc's exitsnoop, libbpf-tools' flags and layout):
//! each process exit with its age and exit code or signal, streamed from
//! the kernel's ring buffer; `-c` only tasks under one cgroup, as
//! libbpf-tools. Wiring only: `sys::bpf_exitsnoop` →
//! `render::snoop`.

use clap::Args;

use super::target::PidArg;
use scry::render::snoop::ExitLayout;
use scry::sys::bpf_exitsnoop::{self, ExitSettings};

use super::{bpf_tool, snoop};

#[derive(Args, Debug)]
pub(crate) struct ExitsnoopArgs {
    /// Include the time (HH:MM:SS).
    #[arg(short = 't', long = "timestamp")]
    timestamp: bool,
    /// Failed exits only (a non-zero code or a signal).
    #[arg(short = 'x', long = "failed")]
    failed: bool,
    #[command(flatten)]
    target: PidArg,
    /// Each thread's exit, not only the process's.
    #[arg(short = 'T', long = "threaded")]
    threaded: bool,
    #[command(flatten)]
    cgroup: bpf_tool::CgroupArg,
    #[command(flatten)]
    common: snoop::StreamFlags,
}

pub(crate) fn run(args: ExitsnoopArgs) -> anyhow::Result<()> {
    bpf_tool::check_pid("exitsnoop", "-p", args.target.pid)?;
    let cgroup = args.cgroup.open("exitsnoop")?;
    let settings = ExitSettings {
        pid: args.target.pid,
        failed_only: args.failed,
        threads: args.threaded,
        cgroup: cgroup.as_ref(),
    };
    let bpf = bpf_tool::load("exitsnoop", || bpf_exitsnoop::load(settings))?;
    let how = snoop::Stream::new("exitsnoop", &args.common, None);
    let layout = ExitLayout {
        time: args.timestamp,
    };
    snoop::run(&how, &args.common, &bpf, &layout, |_| true)
}
