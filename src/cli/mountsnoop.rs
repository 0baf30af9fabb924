//! `scry mountsnoop` (bcc's mountsnoop, libbpf-tools' flags and layout):
//! each mount(2) and umount(2) call with its arguments and result,
//! streamed from the kernel's ring buffer. Wiring only:
//! `sys::bpf_mountsnoop` → `render::mountsnoop`.

use clap::Args;

use super::target::PidArg;
use scry::render::mountsnoop::MountLayout;
use scry::sys::bpf_mountsnoop;

use super::bpf_tool;
use super::snoop;

#[derive(Args, Debug)]
#[command(mut_arg("pid", |a| a.help("Only this process (ends when it exits)")))]
pub(crate) struct MountsnoopArgs {
    #[command(flatten)]
    target: PidArg,
    /// Include the time (HH:MM:SS).
    #[arg(short = 't', long = "timestamp")]
    timestamp: bool,
    /// One field a line (libbpf-tools' detailed mode), with the latency.
    #[arg(long = "detailed")]
    detailed: bool,
    #[command(flatten)]
    common: snoop::StreamFlags,
}

pub(crate) fn run(args: MountsnoopArgs) -> anyhow::Result<()> {
    let pid = args.target.pid;
    bpf_tool::check_pid("mountsnoop", "-p", pid)?;
    let bpf = bpf_tool::load("mountsnoop", || bpf_mountsnoop::load(pid))?;
    let how = snoop::Stream::new("mountsnoop", &args.common, pid);
    let layout = MountLayout {
        timestamp: args.timestamp,
        detailed: args.detailed,
    };
    snoop::run(&how, &args.common, &bpf, &layout, |_| true)
}
