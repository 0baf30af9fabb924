//! `scry tcplife` (bcc's tcplife, libbpf-tools' flags and layout): each
//! TCP session when it closes, with its process, ends, bytes sent (acked
//! by the peer) and received, and how long it lived; from the
//! sock:inet_sock_set_state tracepoint, so no kprobe is needed. Wiring
//! only: `sys::bpf_tcp` (mode Life) → `render::net`.

use clap::Args;

use super::target::PidArg;
use scry::render::net::TcpTable;
use scry::sys::bpf_tcp::TcpMode;

use super::tcp::{self, SessionFlags, TcpRun};
use super::{bpf_tool, snoop};

#[derive(Args, Debug)]
#[command(mut_arg("pid", |a| a.help("Only sessions of this process")))]
pub(crate) struct TcplifeArgs {
    #[command(flatten)]
    target: PidArg,
    #[command(flatten)]
    sessions: SessionFlags,
    /// Include the time (HH:MM:SS).
    #[arg(short = 'T', long = "time")]
    time: bool,
    /// Include seconds since the start.
    #[arg(short = 't', long = "timestamp")]
    timestamp: bool,
    #[command(flatten)]
    common: snoop::StreamFlags,
}

pub(crate) fn run(args: TcplifeArgs) -> anyhow::Result<()> {
    bpf_tool::check_pid("tcplife", "-p", args.target.pid)?;
    let (mut settings, ports) = args.sessions.settings("tcplife", TcpMode::Life)?;
    settings.pid = args.target.pid;
    let how = TcpRun::new("tcplife", &args.common, settings, ports);
    let layout = args.sessions.layout(args.time, args.timestamp);
    tcp::run(&how, TcpTable::Life(layout), |_| true)?;
    Ok(())
}
