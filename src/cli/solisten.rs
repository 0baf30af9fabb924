//! `scry solisten` (bcc's solisten, libbpf-tools' flags and layout): each
//! listen on an IPv4 or IPv6 socket with its process, result, backlog,
//! protocol, port and address, from the listen system call's tracepoints
//! (libbpf-tools' own needs a kprobe on inet_listen). Wiring only:
//! `sys::bpf_sockcall` (Listen) → `render::sockcall`.

use clap::Args;

use super::target::PidArg;
use scry::render::sockcall::ListenLayout;
use scry::sys::bpf_sockcall::{self, SockCall, SockcallSettings};

use super::{bpf_tool, snoop};

#[derive(Args, Debug)]
pub(crate) struct SolistenArgs {
    #[command(flatten)]
    target: PidArg,
    /// Include the time (HH:MM:SS).
    #[arg(short = 't', long = "timestamp")]
    timestamp: bool,
    #[command(flatten)]
    common: snoop::StreamFlags,
}

pub(crate) fn run(args: SolistenArgs) -> anyhow::Result<()> {
    bpf_tool::check_pid("solisten", "-p", args.target.pid)?;
    let settings = SockcallSettings {
        call: SockCall::Listen,
        pid: args.target.pid,
        include_failed: true,
        ..SockcallSettings::default()
    };
    let bpf = bpf_tool::load("solisten", || bpf_sockcall::load(&settings))?;
    let how = snoop::Stream::new("solisten", &args.common, args.target.pid);
    let layout = ListenLayout {
        time: args.timestamp,
    };
    snoop::run(&how, &args.common, &bpf, &layout, |_| true)
}
