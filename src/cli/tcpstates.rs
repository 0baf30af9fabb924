//! `scry tcpstates` (bcc's tcpstates, libbpf-tools' flags and layout):
//! each TCP state change with the time spent in the state left, from the
//! sock:inet_sock_set_state tracepoint. Wiring only: `sys::bpf_tcp` (mode
//! States) → `render::net`.

use clap::Args;

use scry::render::net::TcpTable;
use scry::sys::bpf_tcp::TcpMode;

use super::snoop;
use super::tcp::{self, SessionFlags, TcpRun};

#[derive(Args, Debug)]
pub(crate) struct TcpstatesArgs {
    #[command(flatten)]
    sessions: SessionFlags,
    /// Include the time (HH:MM:SS).
    #[arg(short = 'T', long = "timestamp")]
    time: bool,
    #[command(flatten)]
    common: snoop::StreamFlags,
}

pub(crate) fn run(args: TcpstatesArgs) -> anyhow::Result<()> {
    let (settings, ports) = args.sessions.settings("tcpstates", TcpMode::States)?;
    let how = TcpRun::new("tcpstates", &args.common, settings, ports);
    let layout = args.sessions.layout(args.time, false);
    tcp::run(&how, TcpTable::States(layout), |_| true)?;
    Ok(())
}
