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
use std::time::Duration;

use clap::Args;

use scry::analysis::bio::{BioTop, TopSort};
use scry::capture::bpf_run::{self, RunOptions, Wake};
use scry::render::bio::{top_json, top_table};
use scry::sys::bpf_bio::{self, BioSettings};

use super::biolatency::disk_filter;
use super::bpf_tool;
use super::tcptop::summary;

/// libbpf-tools' bound on the rows.
const ROWS_LIMIT: usize = 10240;

#[derive(Args, Debug)]
pub struct BiotopArgs {
    /// Don't clear the screen (scry never does).
    #[arg(short = 'C', long = "noclear")]
    noclear: bool,
    /// Sort by all (I/Os + bytes + µs), io, bytes or time.
    #[arg(short = 's', long = "sort", value_name = "SORT", default_value = "all",
          value_parser = ["all", "io", "bytes", "time"])]
    sort: String,
    /// At most ROWS rows per interval.
    #[arg(short = 'r', long = "rows", value_name = "ROWS", default_value_t = 20,
          value_parser = clap::value_parser!(u64).range(1..))]
    rows: u64,
    /// Only I/O started by this process.
    #[arg(short = 'p', long = "pid", value_name = "PID", value_parser = clap::value_parser!(u32).range(1..))]
    pid: Option<u32>,
    /// Say which kernel hooks the programs use.
    #[arg(short = 'v', long = "verbose")]
    verbose: bool,
    /// One JSON array of rows per interval instead of the table.
    #[arg(long)]
    json: bool,
    /// Print every INTERVAL seconds.
    #[arg(value_name = "INTERVAL", default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    interval: u64,
    /// Stop after COUNT intervals.
    #[arg(value_name = "COUNT", value_parser = clap::value_parser!(u64).range(1..))]
    count: Option<u64>,
}

fn sort_of(name: &str) -> TopSort {
    match name {
        "io" => TopSort::Io,
        "bytes" => TopSort::Bytes,
        "time" => TopSort::Time,
        _ => TopSort::All,
    }
}

pub fn run(args: BiotopArgs) -> anyhow::Result<()> {
    let _ = args.noclear;
    bpf_tool::check_pid("biotop", "-p", args.pid)?;
    let (disks, _) = disk_filter("biotop", None)?;
    let bpf = bpf_tool::load("biotop", || bpf_bio::load_snoop(BioSettings::default()))?;
    bpf_tool::print_hooks("biotop", &bpf.hooks(), args.verbose);
    let mut out = io::BufWriter::new(io::stdout().lock());
    if !args.json {
        writeln!(
            out,
            "Tracing... Output every {} secs. Hit Ctrl-C to end\n",
            args.interval
        )?;
    }
    out.flush()?;
    let top = RefCell::new(BioTop::default());
    let ring = bpf.reader(|e| {
        if args.pid.is_none_or(|p| p == e.pid) {
            top.borrow_mut().add(&e);
        }
    })?;
    let opts = RunOptions {
        interval: Some(Duration::from_secs(args.interval)),
        count: args.count,
        duration: None,
        pid: None,
    };
    let (sort, limit) = (sort_of(&args.sort), (args.rows as usize).min(ROWS_LIMIT));
    bpf_run::run_events(&opts, &[ring.fd()], |wake| {
        ring.consume()?;
        if wake == Wake::Ready {
            return Ok(());
        }
        let rows = top.borrow_mut().take(sort, limit);
        if args.json {
            top_json(&mut out, &rows, &disks)?;
        } else {
            top_table(&mut out, Some(&summary()), &rows, &disks)?;
        }
        out.flush()
    })?;
    Ok(())
}
