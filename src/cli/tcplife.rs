//! `scry tcplife` (bcc's tcplife, libbpf-tools' flags and layout): each
//! TCP session when it closes, with its process, ends, bytes sent (acked
//! by the peer) and received, and how long it lived; from the
//! sock:inet_sock_set_state tracepoint, so no kprobe is needed. Wiring
//! only: `sys::bpf_tcp` (mode Life) → `render::net`.

use clap::Args;

use scry::render::net::TcpTable;
use scry::sys::bpf_tcp::TcpMode;

use super::tcp::{self, SessionFlags, TcpRun};
use super::{bpf_tool, snoop};

#[derive(Args, Debug)]
pub struct TcplifeArgs {
    /// Only sessions of this process.
    #[arg(short = 'p', long = "pid", value_name = "PID", value_parser = clap::value_parser!(u32).range(1..))]
    pid: Option<u32>,
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

pub fn run(args: TcplifeArgs) -> anyhow::Result<()> {
    bpf_tool::check_pid("tcplife", "-p", args.pid)?;
    let (mut settings, ports) = args.sessions.settings("tcplife", TcpMode::Life)?;
    settings.pid = args.pid;
    let how = TcpRun::new("tcplife", &args.common, settings, ports);
    let layout = args.sessions.layout(args.time, args.timestamp);
    tcp::run(&how, TcpTable::Life(layout), |_| true)?;
    Ok(())
}
