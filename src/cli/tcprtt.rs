//! `scry tcprtt` (bcc's tcprtt, libbpf-tools' flags and layout): the
//! smoothed round-trip time of TCP sockets as a log2 histogram, counted in
//! the kernel at tcp:tcp_probe (each segment an established socket
//! receives; libbpf-tools' own needs fentry or a kprobe on
//! tcp_rcv_established). `-i` interval, `-d` duration, `-p`/`-P` one local
//! or remote port (`-l`/`-r`, scry's first spelling, still taken), `-a`/`-A`
//! one local or remote address, all filtered in the kernel; `-b`/`-B` one
//! histogram per local or remote address, `-e` each with its average
//! (counted in the kernel too). Wiring only: `sys::bpf_tcprtt` →
//! `analysis::net` → `render::net`.

use std::io::{self, Write};
use std::net::IpAddr;

use clap::Args;

use scry::analysis::net::{AddrSide, rtt_histograms};
use scry::capture::bpf_run;
use scry::render::net::{rtt_hists, rtt_hists_json};
use scry::sys::bpf_tcprtt::{self, TcprttSettings};

use super::bpf_tool::{self, TableArgs};

#[derive(Args, Debug)]
pub(crate) struct TcprttArgs {
    #[command(flatten)]
    times: bpf_tool::TimedArgs,
    /// Print a timestamp with each interval.
    #[arg(short = 'T', long = "timestamp")]
    timestamp: bool,
    /// Milliseconds (default: microseconds).
    #[arg(short = 'm', long = "millisecond")]
    milliseconds: bool,
    /// Only this local port.
    #[arg(short = 'p', short_alias = 'l', long = "lport", value_name = "LPORT", value_parser = clap::value_parser!(u16).range(1..))]
    lport: Option<u16>,
    /// Only this remote port.
    #[arg(short = 'P', short_alias = 'r', long = "rport", value_name = "RPORT", value_parser = clap::value_parser!(u16).range(1..))]
    rport: Option<u16>,
    /// Only this local address (IPv4 or IPv6).
    #[arg(short = 'a', long = "laddr", value_name = "LADDR")]
    laddr: Option<String>,
    /// Only this remote address (IPv4 or IPv6).
    #[arg(short = 'A', long = "raddr", value_name = "RADDR")]
    raddr: Option<String>,
    /// One histogram per local address.
    #[arg(short = 'b', long = "byladdr", conflicts_with = "byraddr")]
    byladdr: bool,
    /// One histogram per remote address.
    #[arg(short = 'B', long = "byraddr")]
    byraddr: bool,
    /// Each histogram's average RTT too.
    #[arg(short = 'e', long = "extension")]
    extension: bool,
    #[command(flatten)]
    table: TableArgs,
}

/// `FLAG TEXT` as an address.
fn address(flag: &str, text: Option<&str>) -> anyhow::Result<Option<IpAddr>> {
    text.map(|t| {
        t.parse()
            .map_err(|_| anyhow::anyhow!("tcprtt: {flag} {t}: not an IPv4 or IPv6 address"))
    })
    .transpose()
}

pub(crate) fn run(args: TcprttArgs) -> anyhow::Result<()> {
    let settings = TcprttSettings {
        lport: args.lport,
        rport: args.rport,
        laddr: address("-a", args.laddr.as_deref())?,
        raddr: address("-A", args.raddr.as_deref())?,
        milliseconds: args.milliseconds,
        by_addr: if args.byladdr {
            Some(AddrSide::Local)
        } else if args.byraddr {
            Some(AddrSide::Remote)
        } else {
            None
        },
    };
    let mut bpf = bpf_tool::load("tcprtt", || bpf_tcprtt::load(settings))?;
    bpf_tool::print_hooks("tcprtt", &bpf.hooks(), args.table.verbose);
    let mut out = io::stdout().lock();
    bpf_tool::write_banner(
        &mut out,
        args.table.json,
        format_args!("Tracing TCP RTT... Hit Ctrl-C to end."),
    )?;
    let opts = args.times.run_options(None);
    let unit = if args.milliseconds { "msecs" } else { "usecs" };
    bpf_run::run(&opts, |last| {
        if last {
            bpf.detach();
        }
        let hists = rtt_histograms(&bpf_tcprtt::read(&bpf)?, unit);
        if args.table.json {
            rtt_hists_json(&mut out, &hists)?;
        } else {
            bpf_tool::write_interval_head(&mut out, args.timestamp)?;
            rtt_hists(&mut out, &hists, settings.by_addr, args.extension)?;
        }
        out.flush()
    })?;
    Ok(())
}
