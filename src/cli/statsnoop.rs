//! `scry statsnoop` (bcc's statsnoop, libbpf-tools' flags and layout):
//! each statfs, stat, lstat, statx and newfstatat call with its path and
//! result, streamed from the kernel's ring buffer; and `scry filelife`
//! (bcc's filelife): each file deleted with its age. Wiring only:
//! `sys::bpf_statsnoop` / `sys::bpf_filelife` → `render::statsnoop`.

use clap::Args;

use super::target::PidArg;
use scry::render::statsnoop::{LifeLayout, StatLayout};
use scry::sys::bpf_filelife;
use scry::sys::bpf_statsnoop::{self, StatSettings};

use super::bpf_tool;
use super::snoop;

#[derive(Args, Debug)]
pub(crate) struct StatsnoopArgs {
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

pub(crate) fn run(args: StatsnoopArgs) -> anyhow::Result<()> {
    let (failed, pid) = (args.filter.failed, args.filter.target.pid);
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

#[derive(Args, Debug)]
#[command(mut_arg("pid", |a| a.help("Only files this process deletes (ends when it exits)")))]
pub(crate) struct FilelifeArgs {
    #[command(flatten)]
    target: PidArg,
    #[command(flatten)]
    common: snoop::StreamFlags,
}

pub(crate) fn run_filelife(args: FilelifeArgs) -> anyhow::Result<()> {
    bpf_tool::check_pid("filelife", "-p", args.target.pid)?;
    let bpf = bpf_tool::load("filelife", || bpf_filelife::load(args.target.pid))?;
    eprintln!(
        "filelife: from the open/creat and unlink system calls: a file is matched by the name it \
         was created and deleted under (relative names not resolved, renames not followed)"
    );
    let how = snoop::Stream::new("filelife", &args.common, args.target.pid);
    snoop::run(&how, &args.common, &bpf, &LifeLayout, |_| true)
}
