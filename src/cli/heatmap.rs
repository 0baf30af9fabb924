//! `scry heatmap [-i perf.data] [-o heatmap.html]`: a recording's samples
//! → `symbol::resolve_file` (one sample per record, with its time) →
//! `analysis::heatmap`'s sub-second offset map → `render::heatmap`'s page,
//! where selecting cells draws their flame graph (FlameScope).
//!
//! `--latency PAIRS`: the file's tracepoints → `analysis::pairs_file::pairs_of_file`
//! (`analysis::pairs`, every pair kept) → the latency heat map of the
//! pairs asked for: `syscalls` (enter to exit), `wakeup` (wakeup to
//! switch-in), `bio` (block I/O issue to completion: a built-in `-H`
//! hook) or one label of `scry report --profile`; `-H HOOK` draws any
//! pair of the file's tracepoints (trace-cmd's hook syntax).
//!
//! The page is created 0600 (it holds other processes' stacks and names);
//! `-o -` writes to standard output.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;

use scry::analysis::heatmap::{LatencyHeatmap, LatencyPoint, OffsetHeatmap, OffsetOptions};
use scry::render::heatmap::{PageOptions, write_latency_page, write_offset_page};
use scry::symbol::{ResolveOptions, resolve_file};

use scry::analysis::pairs::Hook;
use scry::analysis::pairs_file::{FileWatch, pairs_of_file};

#[derive(Args, Debug)]
pub(crate) struct HeatmapArgs {
    /// Input file (perf.data format). Default perf.data.
    #[arg(short = 'i', long = "input", default_value = "perf.data")]
    input: PathBuf,
    /// Output page; `-` for standard output. Default heatmap.html.
    #[arg(short = 'o', long = "output", default_value = "heatmap.html")]
    output: PathBuf,
    /// Offset map: rows a second is split into (1-1000). Default 50 (20 ms each).
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..=1000))]
    rows: u32,
    /// Offset map: this event's samples. Default: the event of the first sample.
    #[arg(long = "event", value_name = "NAME")]
    event: Option<String>,
    /// Draw the latency heat map of event pairs instead: `syscalls` (enter
    /// to exit, from raw_syscalls or syscalls:sys_enter_*/sys_exit_*),
    /// `wakeup` (sched_waking or sched_wakeup to switch-in), `bio` (block
    /// I/O, block_rq_issue to block_rq_complete of the same sector), or a
    /// label as `scry report --profile` prints it (`sys_read`,
    /// `sched_switch:S`).
    #[arg(long, value_name = "PAIRS", conflicts_with = "hook")]
    latency: Option<String>,
    /// Draw the latency heat map of a custom event pair, in trace-cmd's
    /// hook syntax: START[,MATCH[,PID]]/END[,MATCH][,FLAGS] (flags: g
    /// global, p pinned to a CPU), e.g. `irq:irq_handler_entry,irq/irq:irq_handler_exit,irq`.
    #[arg(short = 'H', long = "hook", value_name = "HOOK", value_parser = parse_hook)]
    hook: Option<Hook>,
    /// Latency map: a column's width in milliseconds. Default: about 100
    /// columns over the recording.
    #[arg(long, value_name = "MS", value_parser = parse_ms)]
    interval: Option<u64>,
    /// Keep raw (mangled) symbol names.
    #[arg(long = "no-demangle")]
    no_demangle: bool,
}

/// A bucket width that is no number of milliseconds in range.
#[derive(Debug, thiserror::Error)]
#[error("'{0}' is not a number of milliseconds in (0, 3600000]")]
struct BadMilliseconds(String);

/// Block I/O latency (`--latency bio`): a request's issue to its
/// completion, matched on its sector in any task (the completion runs in
/// an interrupt, not in the issuer).
const BIO_HOOK: &str = "block:block_rq_issue,sector/block:block_rq_complete,sector,g";

fn parse_hook(text: &str) -> Result<Hook, String> {
    Hook::parse(text).map_err(|e| e.to_string())
}

/// Milliseconds (`50`, `0.5`) → nanoseconds, positive.
fn parse_ms(text: &str) -> Result<u64, BadMilliseconds> {
    match text.parse::<f64>() {
        Ok(ms) if ms > 0.0 && ms <= 3_600_000.0 => Ok((ms * 1e6) as u64),
        _ => Err(BadMilliseconds(text.to_owned())),
    }
}

pub(crate) fn run(args: HeatmapArgs) -> anyhow::Result<()> {
    let mut page = Vec::new();
    match (&args.latency, &args.hook) {
        (_, Some(hook)) => latency_page(&args, &hook.label(), Some(hook.clone()), &mut page)?,
        (Some(pairs), None) if pairs == "bio" => {
            let hook = parse_hook(BIO_HOOK).map_err(anyhow::Error::msg)?;
            latency_page(&args, &hook.label(), Some(hook), &mut page)?
        }
        (Some(pairs), None) => latency_page(&args, pairs, None, &mut page)?,
        (None, None) => offset_page(&args, &mut page)?,
    }
    write_output(&args.output, &page)
}

fn offset_page(args: &HeatmapArgs, page: &mut Vec<u8>) -> anyhow::Result<()> {
    let path = &args.input;
    let options = ResolveOptions {
        demangle: !args.no_demangle,
        ..ResolveOptions::default()
    };
    // The reader's errors name the file.
    let resolved = resolve_file(path, &options)?;
    let event = match &args.event {
        Some(name) => super::flamegraph::event_index(&resolved, name, path)?,
        None => resolved
            .samples
            .first()
            .map(|s| s.event)
            .with_context(|| format!("{} holds no samples", path.display()))?,
    };
    let map = OffsetHeatmap::build(
        &resolved.samples,
        &OffsetOptions {
            rows: args.rows,
            event: Some(event),
        },
    )
    .with_context(|| format!("{}", path.display()))?;
    let name = resolved.events.get(event).map_or("?", |e| e.name.as_str());
    let options = PageOptions {
        title: format!("scry heatmap: {}", path.display()),
        subtitle: format!(
            "{} samples of {name} over {} s; a column is a second, a row {:.0} ms of it",
            map.total(),
            map.columns,
            map.row_ns as f64 / 1e6
        ),
    };
    write_offset_page(&map, &resolved.frames, &options, page)?;
    Ok(())
}

/// The latency page of the pairs labelled `pairs` (with `hook`, that
/// hook's, paired beside the built-in ones).
fn latency_page(
    args: &HeatmapArgs,
    pairs: &str,
    hook: Option<Hook>,
    page: &mut Vec<u8>,
) -> anyhow::Result<()> {
    let path = &args.input;
    let watch = FileWatch {
        hooks: hook.into_iter().collect(),
        ..FileWatch::default()
    };
    let (mut feed, _) = pairs_of_file(path, &watch, true)?;
    feed.engine.finish();
    let log = feed.engine.log.take().unwrap_or_default();
    let wanted: Vec<bool> = log
        .labels
        .iter()
        .map(|label| match pairs {
            "syscalls" => label.starts_with("sys_"),
            "wakeup" => label == "sched_wakeup",
            _ => label == pairs,
        })
        .collect();
    let points: Vec<LatencyPoint> = log
        .pairs
        .iter()
        .filter(|p| wanted[p.0 as usize])
        .map(|p| LatencyPoint {
            end: p.2,
            duration: p.3,
        })
        .collect();
    if points.is_empty() {
        let mut labels = log.labels.clone();
        labels.sort();
        anyhow::bail!(
            "{}: no {pairs} pairs (pairs in the file: {})",
            path.display(),
            if labels.is_empty() {
                "none".to_string()
            } else {
                labels.join(", ")
            }
        );
    }
    let map = LatencyHeatmap::build(&points, args.interval)
        .with_context(|| format!("{}", path.display()))?;
    let options = PageOptions {
        title: format!("scry heatmap --latency {pairs}: {}", path.display()),
        subtitle: format!(
            "{} {pairs} pairs; a column is {:.0} ms, a row a power of two of latency",
            map.total(),
            map.column_ns as f64 / 1e6
        ),
    };
    write_latency_page(&map, pairs, &options, page)?;
    Ok(())
}

fn write_output(out_path: &Path, page: &[u8]) -> anyhow::Result<()> {
    if out_path.as_os_str() == "-" {
        let mut out = std::io::stdout().lock();
        return out
            .write_all(page)
            .and_then(|()| out.flush())
            .context("writing standard output");
    }
    let mut out = BufWriter::new(super::create_private(out_path)?);
    out.write_all(page)
        .and_then(|()| out.flush())
        .with_context(|| format!("writing {}", out_path.display()))?;
    eprintln!("scry: wrote {}", out_path.display());
    Ok(())
}
