//! `scry bindsnoop` (bcc's bindsnoop, libbpf-tools' flags and layout):
//! each IPv4 and IPv6 bind with its process, result, protocol, socket
//! options, bound device, port and address, from the bind system call's
//! tracepoints (libbpf-tools' own needs kprobes on inet_bind and
//! inet6_bind): successful binds, and with `-x` failed ones too. Wiring
//! only: `sys::bpf_sockcall` (Bind) → `render::sockcall`.

use std::path::PathBuf;

use clap::Args;

use super::target::PidArg;
use scry::render::sockcall::BindLayout;
use scry::sys::bpf_sockcall::{self, SockCall, SockcallSettings};

use super::{bpf_tool, snoop, tcp};

#[derive(Args, Debug)]
pub(crate) struct BindsnoopArgs {
    /// Include the time (HH:MM:SS).
    #[arg(short = 't', long = "timestamp")]
    timestamp: bool,
    /// Only processes in this cgroup (a directory under /sys/fs/cgroup).
    #[arg(short = 'c', long = "cgroup", value_name = "PATH")]
    cgroup: Option<PathBuf>,
    /// Failed binds too.
    #[arg(short = 'x', long = "failed")]
    failed: bool,
    #[command(flatten)]
    target: PidArg,
    /// Only these ports (comma-separated, at most 8).
    #[arg(short = 'P', long = "ports", value_name = "PORTS")]
    ports: Option<String>,
    #[command(flatten)]
    common: snoop::StreamFlags,
}

pub(crate) fn run(args: BindsnoopArgs) -> anyhow::Result<()> {
    bpf_tool::check_pid("bindsnoop", "-p", args.target.pid)?;
    let ports = tcp::port_lists("bindsnoop", ("-P", args.ports.as_deref()), ("", None))?;
    let settings = SockcallSettings {
        call: SockCall::Bind,
        pid: args.target.pid,
        include_failed: args.failed,
        cgroup: args.cgroup,
        ports: ports.local,
    };
    let bpf = bpf_tool::load("bindsnoop", || bpf_sockcall::load(&settings))?;
    let how = snoop::Stream::new("bindsnoop", &args.common, args.target.pid);
    let layout = BindLayout {
        time: args.timestamp,
    };
    snoop::run(&how, &args.common, &bpf, &layout, |_| true)
}
