//! `scry tcpretrans` (bcc's tcpretrans, its flags and layout): each
//! retransmitted TCP segment with its connection and the socket's state,
//! from the tcp:tcp_retransmit_skb tracepoint; `-s` adds the segment's
//! sequence number (bcc's SEQ); `-c` counts them per connection instead,
//! printed at the end. The PID is the task current
//! at the retransmit (bcc's too): mostly 0, as retransmits run from the
//! timer. Tail loss probes (`-l`) have no tracepoint (bcc hooks
//! tcp_send_loss_probe with a kprobe): asked for, that is one line and
//! exit 2. Wiring only: `sys::bpf_tcp` (mode Retrans) → `analysis::net`
//! (-c) → `render::net`.

use clap::Args;

use scry::render::net::{TcpTable, retrans_counts};
use scry::sys::bpf_tcp::{TcpMode, TcpSettings};

use super::snoop;
use super::tcp::{self, FamilyFlags, PortLists, TcpRun};

#[derive(Args, Debug)]
pub(crate) struct TcpretransArgs {
    /// Count retransmits per connection; print at the end.
    #[arg(short = 'c', long = "count")]
    count: bool,
    /// Each retransmit's TCP sequence number too (SEQ).
    #[arg(short = 's', long = "sequence")]
    sequence: bool,
    /// Tail loss probes too (not available: they have no tracepoint).
    #[arg(short = 'l', long = "lossprobe")]
    lossprobe: bool,
    #[command(flatten)]
    family: FamilyFlags,
    #[command(flatten)]
    common: snoop::StreamFlags,
}

pub(crate) fn run(args: TcpretransArgs) -> anyhow::Result<()> {
    if args.lossprobe {
        anyhow::bail!(
            "tcpretrans: -l: tail loss probes have no tracepoint (bcc puts a kprobe on \
             tcp_send_loss_probe, and kprobes are not available here)"
        );
    }
    let settings = TcpSettings {
        mode: TcpMode::Retrans,
        family: args.family.family(),
        ..TcpSettings::default()
    };
    let how = TcpRun::new("tcpretrans", &args.common, settings, PortLists::default());
    if !args.count {
        if !args.common.json {
            println!("Tracing retransmits ... Hit Ctrl-C to end");
        }
        tcp::run(
            &how,
            TcpTable::Retrans {
                sequence: args.sequence,
            },
            |_| true,
        )?;
        return Ok(());
    }
    tcp::run_counted(&how, true, retrans_counts)
}
