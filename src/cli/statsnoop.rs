//! `scry statsnoop` (bcc's statsnoop, libbpf-tools' flags and layout):
//! each statfs, stat, lstat, statx and newfstatat call with its path and
//! result, streamed from the kernel's ring buffer. Wiring only:
//! `sys::bpf_statsnoop` → `render::statsnoop`.

use clap::Args;

use scry::render::statsnoop::StatLayout;
use scry::sys::bpf_statsnoop::{self, StatSettings};

use super::bpf_tool;
use super::snoop::{self, FailedPidFlags};

#[derive(Args, Debug)]
pub struct StatsnoopArgs {
    /// Include the time (seconds since the start).
    #[arg(short = 't', long = "timestamp")]
    timestamp: bool,
    #[command(flatten)]
    filter: snoop::FailedPidFlags,
    /// Show the system call's name.
    #[arg(short = 's', long = "sys-name")]
    syscall: bool,
    #[command(flatten)]
    common: snoop::StreamFlags,
}

pub fn run(args: StatsnoopArgs) -> anyhow::Result<()> {
    let FailedPidFlags { failed, pid } = args.filter;
    bpf_tool::check_pid("statsnoop", "-p", pid)?;
    let settings = StatSettings {
        pid,
        failed_only: failed,
    };
    let bpf = bpf_tool::load("statsnoop", || bpf_statsnoop::load(settings))?;
    let how = snoop::Stream::new("statsnoop", &args.common, pid);
    let layout = StatLayout {
        timestamp: args.timestamp,
        syscall: args.syscall,
    };
    snoop::run(&how, &args.common, &bpf, &layout, |_| true)
}
