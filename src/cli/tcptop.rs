//! `scry tcptop` (bcc's tcptop, libbpf-tools' flags and layout): every
//! interval (1 s by default), the TCP connections that moved the most
//! bytes, per process: received and sent KB, summed in the kernel from
//! sock:sock_send_length and sock:sock_recv_length (libbpf-tools' own
//! needs kprobes on tcp_sendmsg and tcp_cleanup_rbuf; what the
//! tracepoints miss is in the program's header). The screen is not
//! cleared (`-C` is accepted for bcc's command lines). Wiring only:
//! `sys::bpf_tcptop` → `analysis::net` → `render::net`.

use std::path::PathBuf;

use clap::Args;

use super::target::PidArg;
use scry::analysis::net::{FlowSort, top_flows};
use scry::render::net::{tcptop_json, tcptop_table};
use scry::sys::bpf_tcptop::{TcptopBpf, TcptopSettings};

use super::bpf_tool;
use super::tcp::{self, FamilyFlags};

#[derive(Args, Debug)]
#[command(mut_arg("json", |a| a.help("One JSON array of rows per interval instead of the table")))]
pub(crate) struct TcptopArgs {
    #[command(flatten)]
    target: PidArg,
    /// Only processes in this cgroup (a directory under /sys/fs/cgroup).
    #[arg(short = 'c', long = "cgroup", value_name = "PATH")]
    cgroup: Option<PathBuf>,
    #[command(flatten)]
    family: FamilyFlags,
    /// Skip the summary line (time and load average).
    #[arg(short = 'S', long = "nosummary")]
    nosummary: bool,
    /// Don't clear the screen (scry never does).
    #[arg(short = 'C', long = "noclear")]
    noclear: bool,
    /// Sort by all (sent + received), sent or received.
    #[arg(short = 's', long = "sort", value_name = "SORT", default_value = "all",
          value_parser = ["all", "sent", "received"])]
    sort: String,
    #[command(flatten)]
    rows: bpf_tool::RowsArg,
    #[command(flatten)]
    maps: tcp::BccMapArgs,
    #[command(flatten)]
    out: bpf_tool::TopTailArgs,
}

pub(crate) fn run(args: TcptopArgs) -> anyhow::Result<()> {
    let _ = args.noclear;
    args.maps.refuse("tcptop", "-c")?;
    bpf_tool::check_pid("tcptop", "-p", args.target.pid)?;
    let settings = TcptopSettings {
        pid: args.target.pid,
        family: args.family.family(),
        cgroup: args.cgroup.clone(),
    };
    let mut bpf = bpf_tool::load("tcptop", || TcptopBpf::load(&settings))?;
    bpf_tool::print_hooks("tcptop", &bpf.hooks(), args.out.table.verbose);
    let sort = match args.sort.as_str() {
        "sent" => FlowSort::Sent,
        "received" => FlowSort::Received,
        _ => FlowSort::All,
    };
    args.out.run(args.target.pid, |out, last| {
        if last {
            bpf.detach();
        }
        let flows = top_flows(bpf.take()?, sort, args.rows.rows as usize);
        if args.out.table.json {
            tcptop_json(out, &flows)
        } else {
            let head = (!args.nosummary).then(bpf_tool::loadavg_summary);
            tcptop_table(out, head.as_deref(), &flows)
        }
    })
}
