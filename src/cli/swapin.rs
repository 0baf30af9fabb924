//! `scry swapin` (bcc's swapin and its layout): swap-ins per process
//! every `interval` seconds (default 1) `count` times, each interval's
//! table starting from zero, counted in the kernel on the function that
//! reads a swapped-out folio back (swap_read_folio, or swap_readpage
//! before 6.6: fentry, else kprobe). bcc's `-T` leaves the time out;
//! `-p` (libbpf-tools') one process, ending with it. Wiring only:
//! `sys::bpf_swapin` → `analysis::swapin` → `render::swapin`.

use std::io::{self, Write};

use clap::Args;

use super::target::PidArg;
use scry::analysis::swapin::in_bcc_order;
use scry::capture::bpf_run;
use scry::render::swapin;
use scry::sys::bpf_swapin::SwapinBpf;
use scry::sys::localtime::now_hms;

use super::bpf_tool;

#[derive(Args, Debug)]
#[command(mut_arg("pid", |a| a.help("Only this process's swap-ins (ends when it exits)")))]
pub(crate) struct SwapinArgs {
    /// Do not show the time (HH:MM:SS) before each interval.
    #[arg(short = 'T', long = "notime")]
    notime: bool,
    #[command(flatten)]
    target: PidArg,
    #[command(flatten)]
    out: bpf_tool::TopTailArgs,
}

pub(crate) fn run(args: SwapinArgs) -> anyhow::Result<()> {
    let pid = args.target.pid;
    bpf_tool::check_pid("swapin", "-p", pid)?;
    let mut bpf = bpf_tool::load("swapin", || SwapinBpf::load(pid))?;
    bpf_tool::print_hooks("swapin", &bpf.hooks(), args.out.table.verbose);
    if args.out.table.verbose {
        eprintln!("swapin: counting calls of {}", bpf.function());
    }
    let json = args.out.table.json;
    let mut out = io::BufWriter::new(io::stdout().lock());
    bpf_tool::write_banner(&mut out, json, format_args!("{}", swapin::BANNER))?;
    bpf_run::run(&args.out.every.run_options(pid), |last| {
        if last {
            bpf.detach();
        }
        let rows = in_bcc_order(bpf.take()?);
        if json {
            swapin::json(&mut out, &rows)?;
        } else {
            swapin::table(&mut out, (!args.notime).then(now_hms), &rows)?;
        }
        out.flush()
    })?;
    if !json {
        writeln!(out, "Detaching...")?;
    }
    out.flush()?;
    Ok(())
}
