//! `scry tcpaccept` (bcc's tcpaccept, its flags and layout): each
//! accepted TCP connection, named after the process that accepted it:
//! the socket is found at accept(2)'s return from the descriptor it
//! gives (syscalls:sys_exit_accept/accept4), so no kprobe is needed.
//! Wiring only: `sys::bpf_tcp` (mode Accept) → `render::net`.

use clap::Args;

use super::target::PidArg;
use scry::render::net::{Stamps, TcpTable};
use scry::sys::bpf_tcp::{TcpMode, TcpSettings};

use super::tcp::{self, FamilyFlags, TcpRun};
use super::{bpf_tool, snoop};

#[derive(Args, Debug)]
pub(crate) struct TcpacceptArgs {
    /// Include the time (HH:MM:SS).
    #[arg(short = 'T', long = "time")]
    time: bool,
    /// Include seconds since the start.
    #[arg(short = 't', long = "timestamp")]
    timestamp: bool,
    #[command(flatten)]
    target: PidArg,
    /// Only these local ports (comma-separated, at most 8).
    #[arg(short = 'P', long = "port", value_name = "PORTS")]
    ports: Option<String>,
    #[command(flatten)]
    family: FamilyFlags,
    #[command(flatten)]
    common: snoop::StreamFlags,
}

pub(crate) fn run(args: TcpacceptArgs) -> anyhow::Result<()> {
    bpf_tool::check_pid("tcpaccept", "-p", args.target.pid)?;
    let ports = tcp::port_lists("tcpaccept", ("-P", args.ports.as_deref()), ("", None))?;
    let settings = TcpSettings {
        mode: TcpMode::Accept,
        family: args.family.family(),
        pid: args.target.pid,
        ..TcpSettings::default()
    };
    let how = TcpRun::new("tcpaccept", &args.common, settings, ports);
    let stamps = Stamps {
        hms: args.time,
        secs: args.timestamp,
    };
    tcp::run(&how, TcpTable::Accept(stamps), |_| true)?;
    Ok(())
}
