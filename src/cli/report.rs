//! `scry report`: perf report's flags, over `symbol::resolve_file` →
//! `analysis::profile` (+ `calltree` for `-g`) → `render::report`.
//!
//! Defaults are perf's: `--children` when the file has callchains, call
//! graphs printed under entries when it has them (caller order with
//! children, callee order without), branches under 0.5% hidden. Standard
//! output on a terminal without `--stdio` opens the interactive browser.
//!
//! `-F` picks perf's columns (`render::report_columns`); its sort keys are
//! the report's keys unless `-s` names them (then appended, as perf does),
//! and entries are sorted as perf sorts them then: by the `-s` keys if
//! given, else by the `-F` columns in order.

use std::io::{BufWriter, IsTerminal, Write};
use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, ValueEnum};

use scry::analysis::calltree::{CallTree, GraphOrder, build_trees_above};
use scry::analysis::profile::{Profile, ProfileOptions, SampleFilter, SortKey};
use scry::analysis::quality::QualitySummary;
use scry::analysis::sample::StackQuality;
use scry::render::report::{ReportInput, ReportMeta, ReportOptions, write_stdio};
use scry::render::report_columns::{Column, sort_entries};
use scry::render::report_json::write_json;
use scry::symbol::{ResolveOptions, resolve_file};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum Format {
    Text,
    Json,
}

#[derive(Args, Debug)]
pub(crate) struct ReportArgs {
    /// Input file.
    #[arg(short = 'i', long = "input", default_value = "perf.data")]
    input: PathBuf,
    /// Print to standard output even on a terminal (no interactive browser).
    #[arg(long)]
    stdio: bool,
    /// Show the number of samples of each entry.
    #[arg(short = 'n', long = "show-nr-samples")]
    show_nr_samples: bool,
    /// Sort keys, comma-separated: pid, tid, comm, dso, sym, parent, cpu,
    /// srcline. Default comm,dso,sym (or the keys of -F).
    #[arg(short = 's', long = "sort")]
    sort: Option<String>,
    /// Columns, comma-separated: overhead, overhead_sys, overhead_us,
    /// overhead_children, sample, period and sort keys. Default: perf's.
    #[arg(short = 'F', long = "fields")]
    fields: Option<String>,
    /// Print the file's header (host, kernel, command line, events) first.
    #[arg(long)]
    header: bool,
    /// Print only the file's header.
    #[arg(long = "header-only")]
    header_only: bool,
    /// Accumulate callees into callers (Children column). Default when the file has callchains.
    #[arg(long, overrides_with = "no_children")]
    children: bool,
    /// Only self time (Overhead column).
    #[arg(long = "no-children", overrides_with = "children")]
    no_children: bool,
    /// Call graphs under entries: caller, callee or none, optionally with a
    /// threshold percentage (perf style: graph,0.5,caller). Default: caller
    /// with children, callee without, when the file has callchains.
    #[arg(short = 'g', long = "call-graph", value_name = "MODE", num_args = 0..=1, default_missing_value = "graph")]
    call_graph: Option<String>,
    /// Hide entries under this percentage.
    #[arg(long = "percent-limit", value_name = "PCT", default_value_t = 0.0)]
    percent_limit: f64,
    /// Only these commands (comma-separated).
    #[arg(
        short = 'c',
        long = "comms",
        alias = "comm",
        value_name = "COMMS",
        value_delimiter = ','
    )]
    comms: Vec<String>,
    /// Only these processes (comma-separated).
    #[arg(long = "pid", value_name = "PIDS", value_delimiter = ',')]
    pids: Vec<i32>,
    /// Only these threads (comma-separated).
    #[arg(long = "tid", value_name = "TIDS", value_delimiter = ',')]
    tids: Vec<i32>,
    /// Only entries in these binaries (base names or paths, comma-separated).
    #[arg(long = "dso", value_name = "DSOS", value_delimiter = ',')]
    dsos: Vec<String>,
    /// Only entries of these symbols (comma-separated).
    #[arg(long = "symbols", value_name = "SYMS", value_delimiter = ',')]
    symbols: Vec<String>,
    /// Output format: text (perf's layout) or json (for programs; see render::report_json).
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// Keep raw (mangled) symbol names.
    #[arg(long = "no-demangle")]
    no_demangle: bool,
    /// Event-pair latencies per task, as `scry profile` prints them, from a
    /// file of `scry record --profile` (--pid, --tid, --comm pick the tasks).
    #[arg(long)]
    profile: bool,
    /// With --profile: a hook, as `scry profile -H` takes it, paired from the file's
    /// events (default: the hooks the file was recorded with, `scry record -H`).
    #[arg(short = 'H', long = "hook", value_name = "HOOK", requires = "profile")]
    hooks: Vec<String>,
}

/// `-g` resolved against what the file holds.
#[derive(Clone, Copy, Debug)]
struct GraphChoice {
    order: Option<GraphOrder>,
    threshold: f64,
}

/// Parses perf's `-g` words: `graph`, `caller`, `callee`, `none`, a number.
fn parse_graph(text: &str, children: bool) -> anyhow::Result<GraphChoice> {
    let mut choice = GraphChoice {
        order: Some(if children {
            GraphOrder::Caller
        } else {
            GraphOrder::Callee
        }),
        threshold: 0.5,
    };
    for word in text.split(',').map(str::trim).filter(|w| !w.is_empty()) {
        match word {
            "graph" | "fractal" | "flat" | "folded" | "function" | "address" => {}
            "caller" => choice.order = Some(GraphOrder::Caller),
            "callee" => choice.order = Some(GraphOrder::Callee),
            "none" => choice.order = None,
            number => {
                let threshold: f64 = number.parse().ok().filter(|t: &f64| *t >= 0.0).with_context(
                    || {
                        format!(
                            "-g: unknown word '{number}' (expected caller, callee, none, graph or a threshold percentage)"
                        )
                    },
                )?;
                choice.threshold = threshold;
            }
        }
    }
    Ok(choice)
}

pub(crate) fn run(args: ReportArgs) -> anyhow::Result<()> {
    if args.profile {
        let watch = scry::analysis::pairs_file::FileWatch {
            pids: args.pids,
            tids: args.tids,
            comms: args.comms,
            hooks: super::profile::parse_hooks(&args.hooks)?,
        };
        return super::profile::report_file(&args.input, args.format == Format::Json, watch);
    }
    // Validate flags before the (slow) resolving.
    let fields = match &args.fields {
        Some(list) => Some(Column::parse_fields(list).context("-F")?),
        None => None,
    };
    let field_keys: Vec<SortKey> = fields
        .iter()
        .flatten()
        .filter_map(|c| match c {
            Column::Key(k) => Some(*k),
            _ => None,
        })
        .collect();
    let sort_keys = match &args.sort {
        Some(list) => SortKey::parse_list(list).context("--sort")?,
        None if !field_keys.is_empty() => field_keys.clone(),
        None => vec![SortKey::Comm, SortKey::Dso, SortKey::Sym],
    };
    // Entries are told apart by the -s keys and the keys -F shows.
    let mut sort = sort_keys.clone();
    sort.extend(field_keys.iter().filter(|k| !sort_keys.contains(k)));
    // The -s keys -F does not show are appended, as perf appends them.
    let fields = fields.map(|mut columns| {
        for &k in &sort {
            if !field_keys.contains(&k) {
                columns.push(Column::Key(k));
            }
        }
        columns
    });
    if !args.percent_limit.is_finite() || args.percent_limit < 0.0 {
        anyhow::bail!("--percent-limit: expected a percentage >= 0");
    }
    if let Some(g) = &args.call_graph {
        parse_graph(g, true)?;
    }

    if args.header || args.header_only {
        let reader = scry::data::reader::PerfReader::open(&args.input)?;
        let mut out = std::io::stdout().lock();
        scry::render::header::write_header(&mut out, &reader)?;
        out.flush()?;
        if args.header_only {
            return Ok(());
        }
    }

    let resolve_options = ResolveOptions {
        demangle: !args.no_demangle,
        // Merged samples keep the first one's CPU: not with `cpu` as a key.
        merge_samples: !sort.contains(&SortKey::Cpu) && !sort.contains(&SortKey::Socket),
        srcline: sort.contains(&SortKey::Srcline),
        ..ResolveOptions::default()
    };
    // The reader's errors name the file.
    let resolved = resolve_file(&args.input, &resolve_options)?;
    let has_callchains = resolved
        .samples
        .iter()
        .any(|s| s.quality != StackQuality::NoCallchain && s.stack.len() > 1);
    let children = if args.no_children {
        false
    } else {
        args.children || has_callchains
    };
    let graph = match &args.call_graph {
        Some(text) => parse_graph(text, children)?,
        None if has_callchains => parse_graph("", children)?,
        None => GraphChoice {
            order: None,
            threshold: 0.5,
        },
    };

    let options = ProfileOptions {
        sort: sort.clone(),
        children,
        filter: SampleFilter {
            comms: args.comms,
            pids: args.pids,
            tids: args.tids,
            dsos: args.dsos,
            symbols: args.symbols,
        },
        sockets: if sort.contains(&SortKey::Socket) {
            scry::data::reader::PerfReader::open(&args.input)?.cpu_sockets()
        } else {
            Vec::new()
        },
    };
    let mut profile = Profile::build(&resolved.samples, &resolved.frames, &options);
    if let Some(columns) = &fields {
        // perf's order with -F: by the -s keys if given, else by the columns.
        let by: Vec<Column> = match &args.sort {
            Some(_) => sort_keys.iter().map(|&k| Column::Key(k)).collect(),
            None => columns.clone(),
        };
        for ev in &mut profile.events {
            sort_entries(ev, &by, &resolved.frames);
        }
    }
    if args.percent_limit > 0.0 {
        for ev in &mut profile.events {
            ev.retain_above(args.percent_limit, children);
        }
    }
    let trees: Option<Vec<Vec<CallTree>>> = graph.order.map(|order| {
        (0..profile.events.len())
            .map(|section| {
                let ev = &profile.events[section];
                // Entries under the threshold cannot show a branch: skip them.
                let wanted: Vec<usize> = (0..ev.entries.len())
                    .filter(|&i| {
                        let e = &ev.entries[i];
                        let period = if children {
                            e.children_period
                        } else {
                            e.self_period
                        };
                        ev.percent(period) >= graph.threshold
                    })
                    .collect();
                // Nodes under the threshold are never drawn: not built either.
                let min_period = (ev.total_period as f64 * graph.threshold / 100.0).floor() as u64;
                let built = build_trees_above(&profile, section, &wanted, order, min_period);
                let mut all = vec![CallTree::new(); ev.entries.len()];
                for (slot, tree) in wanted.into_iter().zip(built) {
                    all[slot] = tree;
                }
                all
            })
            .collect()
    });

    let quality = QualitySummary::from_samples(&resolved.samples, &resolved.frames);
    let meta = ReportMeta {
        event_names: resolved.events.iter().map(|e| e.name.clone()).collect(),
        lost_samples: resolved.lost,
        quality,
        quality_line: Some(resolved.stats.summary()),
    };
    let report_options = ReportOptions {
        sort,
        show_samples: args.show_nr_samples,
        graph_threshold: graph.threshold,
        fields,
    };

    let stdout = std::io::stdout();
    if args.format == Format::Text && !args.stdio && stdout.is_terminal() {
        let demangle = !args.no_demangle;
        let mut annotate = |request: &scry::render::tui::AnnotateRequest| {
            super::annotate::annotation_lines(
                &args.input,
                &request.symbol,
                &request.event,
                demangle,
            )
        };
        scry::render::tui::browse(
            &resolved.samples,
            &resolved.frames,
            &meta,
            options,
            &mut annotate,
        )
        .context("interactive browser")?;
        return Ok(());
    }
    let mut out = BufWriter::with_capacity(1 << 16, stdout.lock());
    let input = ReportInput {
        profile: &profile,
        trees: trees.as_deref(),
        frames: &resolved.frames,
        meta: &meta,
        options: &report_options,
    };
    match args.format {
        Format::Text => write_stdio(&mut out, &input)?,
        Format::Json => write_json(&mut out, &input)?,
    }
    out.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn graph_words() {
        let g = parse_graph("graph,0.5,caller", false).unwrap();
        assert_eq!((g.order, g.threshold), (Some(GraphOrder::Caller), 0.5));
        let g = parse_graph("", false).unwrap();
        assert_eq!(g.order, Some(GraphOrder::Callee));
        let g = parse_graph("none", true).unwrap();
        assert_eq!(g.order, None);
        let g = parse_graph("callee,2", true).unwrap();
        assert_eq!((g.order, g.threshold), (Some(GraphOrder::Callee), 2.0));
        assert!(parse_graph("sideways", true).is_err());
    }
}
