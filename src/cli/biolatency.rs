//! `scry biolatency` (bcc's biolatency, libbpf-tools' flags and layout):
//! block I/O latency (issue to completion; `-Q` from the insert into the
//! queue) as log2 histograms counted in the kernel: one, or one per disk
//! (`-D`), per set of request flags (`-F`), or per both (`-D -F`, labelled
//! `disk = vda\tflags = Write` as libbpf-tools); `-d DISK` one disk; `-c
//! CG` only I/O started under a cgroup (checked at its start, not at its
//! completion as libbpf-tools also does: see `src/bpf/bio.bpf.c`);
//! `-e` bcc's average line after them; `interval [count]` as bcc. Wiring only: `sys::bpf_bio` →
//! `analysis::hist` → `render::hist` (labels from `render::bio`).

use std::io::{self, Write};
use std::time::Duration;

use clap::Args;

use scry::analysis::hist::{Histogram, KeyedHistogram, Scale};
use scry::capture::bpf_run::{self, RunOptions};
use scry::render::bio::{disk_name, flags_label};
use scry::render::funcs::write_average;
use scry::render::hist::{write_keyed, write_keyed_json};
use scry::sys::block::{self, Partition};
use scry::sys::bpf_bio::{self, BioSettings, BiolatencyBpf, split_key};
use scry::sys::bpf_hists::SummedSlots;
use scry::sys::localtime::now_hms;

use super::bpf_tool;

#[derive(Args, Debug)]
#[command(mut_arg("cgroup", |a| a.help("Only I/O started by tasks under this cgroup v2 directory (/sys/fs/cgroup/...)")))]
pub(crate) struct BiolatencyArgs {
    /// Print a timestamp with each interval.
    #[arg(short = 'T', long = "timestamp")]
    timestamp: bool,
    /// Milliseconds (default: microseconds).
    #[arg(short = 'm', long = "milliseconds")]
    milliseconds: bool,
    /// Include the time queued in the kernel (from insert).
    #[arg(short = 'Q', long = "queued")]
    queued: bool,
    /// A histogram per disk.
    #[arg(short = 'D', long = "disk", visible_alias = "disks")]
    per_disk: bool,
    /// A histogram per set of request flags (with -D: per disk and flags).
    #[arg(short = 'F', long = "flag", visible_alias = "flags")]
    per_flag: bool,
    /// Only this disk (a name of /proc/partitions).
    #[arg(short = 'd', long = "disk-name", value_name = "DISK")]
    disk: Option<String>,
    #[command(flatten)]
    cgroup: bpf_tool::CgroupArg,
    /// The average, total and count of the latencies after the
    /// histograms (bcc's extension summary).
    #[arg(short = 'e', long = "extension")]
    extension: bool,
    /// Say which kernel hooks the programs use.
    #[arg(short = 'v', long = "verbose")]
    verbose: bool,
    /// JSON (one document per interval) instead of the histograms.
    #[arg(short = 'j', long)]
    json: bool,
    /// Print every INTERVAL seconds (default: once, at Ctrl-C).
    #[arg(value_name = "INTERVAL", value_parser = clap::value_parser!(u64).range(1..))]
    interval: Option<u64>,
    /// Stop after COUNT intervals.
    #[arg(value_name = "COUNT", value_parser = clap::value_parser!(u64).range(1..))]
    count: Option<u64>,
}

/// The disks, and the dev_t of `-d DISK` (a name /proc/partitions lists).
pub(crate) fn disk_filter(
    tool: &str,
    disk: Option<&str>,
) -> anyhow::Result<(Vec<Partition>, Option<u32>)> {
    let disks = block::partitions().map_err(|e| anyhow::anyhow!("{tool}: {e}"))?;
    let Some(name) = disk else {
        return Ok((disks, None));
    };
    let dev = disks.iter().find(|p| p.name == name).map(|p| p.dev);
    let dev = dev.ok_or_else(|| {
        anyhow::anyhow!("{tool}: -d {name}: no such disk (the names are in /proc/partitions)")
    })?;
    Ok((disks, Some(dev)))
}

pub(crate) fn run(args: BiolatencyArgs) -> anyhow::Result<()> {
    let (disks, dev) = disk_filter("biolatency", args.disk.as_deref())?;
    let settings = BioSettings {
        per_disk: args.per_disk,
        per_flag: args.per_flag,
        queued: args.queued,
        milliseconds: args.milliseconds,
        dev,
    };
    let run_opts = RunOptions {
        interval: args.interval.map(Duration::from_secs),
        count: args.count,
        duration: None,
        pid: None,
    };
    let cgroup = args.cgroup.open("biolatency")?;
    let mut bpf = bpf_tool::load("biolatency", || {
        bpf_bio::load_latency(settings, cgroup.as_ref())
    })?;
    bpf_tool::print_hooks("biolatency", &bpf.hooks(), args.verbose);
    let mut out = io::stdout().lock();
    bpf_tool::write_banner(
        &mut out,
        args.json,
        format_args!("Tracing block device I/O... Hit Ctrl-C to end."),
    )?;
    let unit = if args.milliseconds { "msecs" } else { "usecs" };
    let label = |key: u64| {
        let (dev, flags) = split_key(key);
        match (args.per_disk, args.per_flag) {
            (true, true) => format!("disk = {}\t{}", disk_name(&disks, dev), flags_label(flags)),
            (true, false) => format!("disk = {}\t", disk_name(&disks, dev)),
            (false, true) => flags_label(flags),
            (false, false) => String::new(),
        }
    };
    let mut print = |bpf: &mut BiolatencyBpf, last: bool| -> io::Result<()> {
        if last {
            bpf.detach();
        }
        let read = bpf.read_with(SummedSlots::parse)?;
        let total: u64 = read.iter().map(|h| h.sum).sum();
        let hists: Vec<KeyedHistogram> = read
            .iter()
            .map(|h| &h.slots)
            .map(|h| KeyedHistogram {
                key: h.key,
                label: label(h.key),
                hist: Histogram::from_slots(Scale::Log2, unit, &h.slots),
            })
            .collect();
        if args.json {
            write_keyed_json(&mut out, &hists)?;
            return out.flush();
        }
        writeln!(out)?;
        if args.timestamp {
            let (h, m, s) = now_hms();
            writeln!(out, "{:<8}", format!("{h:02}:{m:02}:{s:02}"))?;
        }
        if !args.per_disk && !args.per_flag && !hists.is_empty() {
            writeln!(out)?;
        }
        write_keyed(&mut out, &hists)?;
        if args.extension {
            let count = hists.iter().map(|h| h.hist.total()).sum();
            write_average(&mut out, (total, count), unit, 1)?;
        }
        out.flush()
    };
    bpf_run::run(&run_opts, |last| print(&mut bpf, last))?;
    Ok(())
}
