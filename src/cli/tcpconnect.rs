//! `scry tcpconnect` (bcc's tcpconnect, libbpf-tools' flags and layout):
//! each active TCP open (connect), with its process, addresses and
//! destination port; `-c` counts them per source, destination and port
//! instead, printed at the end. From the sock:inet_sock_set_state
//! tracepoint (the process at SYN_SENT, the line when the socket leaves
//! it), so no kprobe is needed; `--cgroup` filters in the kernel, at
//! the connecting task. Wiring only: `sys::bpf_tcp` (mode
//! Connect) → `analysis::net` (-c) → `render::net`.

use clap::Args;

use super::target::PidArg;
use scry::render::net::{ConnectLayout, Stamps, TcpTable, connect_counts};
use scry::sys::bpf_tcp::{TcpMode, TcpSettings};

use super::tcp::{self, FamilyFlags, TcpRun};
use super::{bpf_tool, snoop};

#[derive(Args, Debug)]
pub(crate) struct TcpconnectArgs {
    /// Count connections per source, destination and port; print at the end.
    #[arg(short = 'c', long = "count")]
    count: bool,
    #[command(flatten)]
    target: PidArg,
    /// Only these destination ports (comma-separated, at most 8).
    #[arg(short = 'P', long = "port", value_name = "PORTS")]
    ports: Option<String>,
    /// Show (and, with -c, count by) the source port.
    #[arg(short = 's', long = "source-port")]
    source_port: bool,
    /// Include seconds since the start.
    #[arg(short = 't', long = "timestamp")]
    timestamp: bool,
    /// Only this user.
    #[arg(short = 'u', long = "uid", value_name = "UID")]
    uid: Option<u32>,
    /// Print the user id.
    #[arg(short = 'U', long = "print-uid")]
    print_uid: bool,
    /// Only connections from tasks under this cgroup v2 directory
    /// (/sys/fs/cgroup/...).
    #[arg(long = "cgroup", value_name = "PATH")]
    cgroup: Option<std::path::PathBuf>,
    #[command(flatten)]
    family: FamilyFlags,
    #[command(flatten)]
    maps: tcp::BccMapArgs,
    #[command(flatten)]
    common: snoop::StreamFlags,
}

pub(crate) fn run(args: TcpconnectArgs) -> anyhow::Result<()> {
    args.maps.refuse("tcpconnect", "--cgroup")?;
    bpf_tool::check_pid("tcpconnect", "-p", args.target.pid)?;
    // The directory is checked before anything loads (a refusal there is
    // the directory's, not the kernel's refusal of the programs).
    scry::sys::bpf_execsnoop::open_cgroup(args.cgroup.as_deref())
        .map_err(|e| anyhow::anyhow!("tcpconnect: {e}"))?;
    let ports = tcp::port_lists("tcpconnect", ("", None), ("-P", args.ports.as_deref()))?;
    let settings = TcpSettings {
        mode: TcpMode::Connect,
        family: args.family.family(),
        pid: args.target.pid,
        uid: args.uid,
        cgroup: args.cgroup.clone(),
        ..TcpSettings::default()
    };
    let how = TcpRun::new("tcpconnect", &args.common, settings, ports);
    if !args.count {
        let layout = ConnectLayout {
            stamps: Stamps {
                hms: false,
                secs: args.timestamp,
            },
            uid: args.print_uid,
            sport: args.source_port,
        };
        tcp::run(&how, TcpTable::Connect(layout), |_| true)?;
        return Ok(());
    }
    tcp::run_counted(&how, args.source_port, connect_counts)
}
