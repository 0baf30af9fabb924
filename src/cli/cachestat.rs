//! `scry cachestat` (bcc's cachestat and its layout): page-cache hits,
//! misses and dirtied pages every `interval` seconds (default 1) `count`
//! times, with bcc's buffer and cache sizes; `-T` a time column, `--json`
//! one object per interval. Counted on bcc's hooks (fentry, else kprobe)
//! where they attach, else from the filemap and writeback tracepoints;
//! what those cannot see is said once, on stderr. Wiring only: `sys::bpf_cachestat` →
//! `analysis::cachestat` → `render::cachestat`.

use std::io::{self, Write};
use std::time::Duration;

use clap::Args;

use scry::analysis::cachestat::CacheInterval;
use scry::capture::bpf_run::{self, RunOptions};
use scry::render::cachestat;
use scry::sys::bpf_cachestat::CachestatBpf;
use scry::sys::localtime::now_hms;

use super::bpf_tool;

#[derive(Args, Debug)]
#[command(mut_arg("timestamp", |a| a.help("Start each line with the time (HH:MM:SS)")))]
pub(crate) struct CachestatArgs {
    #[command(flatten)]
    every: bpf_tool::StampedIntervalArgs,
}

pub(crate) fn run(args: CachestatArgs) -> anyhow::Result<()> {
    let bpf = bpf_tool::load("cachestat", CachestatBpf::load)?;
    bpf_tool::print_hooks("cachestat", &bpf.hooks(), args.every.table.verbose);
    if !bpf.on_kernel_functions() {
        eprintln!(
            "cachestat: HITS are the pages read() and mmap faults ask of the page cache less the \
             misses (bcc's hooks on mark_page_accessed and the rest do not attach here): writes \
             into cached pages are not counted as hits"
        );
    }
    for what in bpf.missing() {
        eprintln!("cachestat: not counted here: {what}");
    }
    let opts = RunOptions {
        interval: Some(Duration::from_secs(
            args.every.intervals.interval.unwrap_or(1),
        )),
        ..args.every.intervals.run_options(None)
    };
    let mut out = io::BufWriter::new(io::stdout().lock());
    if !args.every.table.json {
        cachestat::header(&mut out, args.every.timestamp)?;
    }
    out.flush()?;
    let mut before = bpf.read()?;
    bpf_run::run(&opts, |_last| {
        let now = bpf.read()?;
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let interval = CacheInterval::between(&before, &now, &meminfo);
        before = now;
        if args.every.table.json {
            cachestat::json(&mut out, now_hms(), &interval)?;
        } else {
            let time = args.every.timestamp.then(now_hms);
            cachestat::line(&mut out, time, &interval)?;
        }
        out.flush()
    })?;
    Ok(())
}
