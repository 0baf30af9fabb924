//! `scry biotop` (bcc's biotop, libbpf-tools' flags and layout): every
//! interval (1 s by default), the processes that did the most block I/O:
//! requests, Kbytes and average latency per process, direction and disk.
//! Summed in user space from biosnoop's stream (`analysis::bio`), so the
//! process is the one that started each request (block_io_start; where a
//! kernel lacks it, "?"); libbpf-tools' own needs a kprobe. The screen is
//! not cleared (`-C` is accepted for bcc's command lines). Wiring only:
//! `sys::bpf_bio` (mode Snoop) → `analysis::bio` → `render::bio`.

use std::cell::RefCell;
use std::io::{self, Write};

use clap::Args;

use super::target::PidArg;
use scry::analysis::bio::{BioTop, TopSort};
use scry::capture::bpf_run::{self, Wake};
use scry::render::bio::{top_json, top_table};
use scry::sys::bpf_bio::{self, BioSettings};

use super::biolatency::disk_filter;
use super::bpf_tool;

#[derive(Args, Debug)]
#[command(
    mut_arg("pid", |a| a.help("Only I/O started by this process")),
    mut_arg("json", |a| a.help("One JSON array of rows per interval instead of the table")),
)]
pub(crate) struct BiotopArgs {
    /// Don't clear the screen (scry never does).
    #[arg(short = 'C', long = "noclear")]
    noclear: bool,
    /// Sort by all (I/Os + bytes + µs), io, bytes or time.
    #[arg(short = 's', long = "sort", value_name = "SORT", default_value = "all",
          value_parser = ["all", "io", "bytes", "time"])]
    sort: String,
    #[command(flatten)]
    rows: bpf_tool::RowsArg,
    #[command(flatten)]
    target: PidArg,
    #[command(flatten)]
    out: bpf_tool::TopTailArgs,
}

fn sort_of(name: &str) -> TopSort {
    match name {
        "io" => TopSort::Io,
        "bytes" => TopSort::Bytes,
        "time" => TopSort::Time,
        _ => TopSort::All,
    }
}

pub(crate) fn run(args: BiotopArgs) -> anyhow::Result<()> {
    let _ = args.noclear;
    bpf_tool::check_pid("biotop", "-p", args.target.pid)?;
    let (disks, _) = disk_filter("biotop", None)?;
    let bpf = bpf_tool::load("biotop", || {
        bpf_bio::load_snoop(BioSettings::default(), None)
    })?;
    bpf_tool::print_hooks("biotop", &bpf.hooks(), args.out.table.verbose);
    let mut out = io::BufWriter::new(io::stdout().lock());
    args.out.write_banner(&mut out, "\n")?;
    let top = RefCell::new(BioTop::default());
    let ring = bpf.reader(|e| {
        if args.target.pid.is_none_or(|p| p == e.pid) {
            top.borrow_mut().add(&e);
        }
    })?;
    let opts = args.out.every.run_options(None);
    let (sort, limit) = (sort_of(&args.sort), args.rows.rows as usize);
    bpf_run::run_events(&opts, &[ring.fd()], |wake| {
        ring.consume()?;
        if wake == Wake::Ready {
            return Ok(());
        }
        let rows = top.borrow_mut().take(sort, limit);
        if args.out.table.json {
            top_json(&mut out, &rows, &disks)?;
        } else {
            top_table(&mut out, Some(&bpf_tool::loadavg_summary()), &rows, &disks)?;
        }
        out.flush()
    })?;
    Ok(())
}
