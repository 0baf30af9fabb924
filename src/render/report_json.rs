//! `scry report --format json`: the report for programs.
//!
//! The shape is stable (bump `version` on any incompatible change):
//!
//! ```text
//! { "format": "scry-report", "version": 1,
//!   "children": bool, "sort": ["comm","dso","sym"], "lost_samples": u64,
//!   "stack_quality": { "samples", "complete", "truncated", "no_callchain",
//!                      "frames", "unknown_frames" },
//!   "events": [ { "event": index, "name": "cpu-clock", "samples": u64,
//!                 "total_period": u64, "no_ip_samples": u64,
//!                 "entries": [ { "children_percent": f64, "self_percent": f64,
//!                                "children_period", "self_period",
//!                                "children_samples", "self_samples": u64,
//!                                "comm"?: str, "pid"?: i32, "tid"?: i32,
//!                                "dso"?: full path, "dso_short"?: str,
//!                                "sym"?: str|null, "kernel"?: bool,
//!                                "callgraph"?: [node] } ] } ] }
//! node = { "sym": str|null, "dso": str, "period": u64, "percent": f64,
//!          "samples": u64, "children": [node] }
//! ```
//!
//! Keys absent from `--sort` are absent from entries (not null), so a
//! consumer can tell "not asked" from "unknown" (`"sym": null`). Percentages
//! are of the event's total period, as in the text report. Call graphs are
//! written only with `-g`, pruned at the same threshold as the text report.

use std::io::{self, Write};

use serde::Serialize;

use crate::analysis::calltree::CallTree;
use crate::analysis::profile::{Entry, EventProfile, SortKey, dso_short_name};
use crate::analysis::quality::QualitySummary;
use crate::analysis::sample::{FrameKind, FrameTable};

use super::report::ReportInput;

#[derive(Serialize)]
struct Doc<'a> {
    format: &'static str,
    version: u32,
    children: bool,
    sort: Vec<&'static str>,
    lost_samples: u64,
    stack_quality: QualitySummary,
    events: Vec<EventDoc<'a>>,
}

#[derive(Serialize)]
struct EventDoc<'a> {
    event: usize,
    name: &'a str,
    samples: u64,
    total_period: u64,
    no_ip_samples: u64,
    entries: Vec<EntryDoc<'a>>,
}

#[derive(Serialize)]
struct EntryDoc<'a> {
    children_percent: f64,
    self_percent: f64,
    children_period: u64,
    self_period: u64,
    children_samples: u64,
    self_samples: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    comm: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pid: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tid: Option<i32>,
    /// `cpu`: -1 when the samples carry none.
    #[serde(skip_serializing_if = "Option::is_none")]
    cpu: Option<i64>,
    /// `parent`: `null` for perf's `[other]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    parent: Option<Option<&'a str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    srcline: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dso: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dso_short: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    sym: Option<Option<&'a str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    kernel: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    callgraph: Option<Vec<NodeDoc<'a>>>,
}

#[derive(Serialize)]
struct NodeDoc<'a> {
    sym: Option<&'a str>,
    dso: &'a str,
    period: u64,
    percent: f64,
    samples: u64,
    children: Vec<NodeDoc<'a>>,
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

fn percent(total: u64, period: u64) -> f64 {
    if total == 0 {
        0.0
    } else {
        round2(period as f64 * 100.0 / total as f64)
    }
}

fn nodes<'a>(
    tree: &CallTree,
    at: u32,
    frames: &'a FrameTable,
    total: u64,
    threshold: f64,
) -> Vec<NodeDoc<'a>> {
    tree.sorted_children(at)
        .into_iter()
        .filter_map(|c| tree.node(c).map(|n| (c, n)))
        .filter(|(_, n)| total > 0 && n.period as f64 * 100.0 / total as f64 >= threshold)
        .map(|(c, n)| {
            let frame = frames.get(n.frame);
            NodeDoc {
                sym: frame.sym.as_deref(),
                dso: &frame.dso,
                period: n.period,
                percent: percent(total, n.period),
                samples: n.samples,
                children: nodes(tree, c, frames, total, threshold),
            }
        })
        .collect()
}

fn entry_doc<'a>(
    ev: &EventProfile,
    entry: &'a Entry,
    sort: &[SortKey],
    frames: &'a FrameTable,
    tree: Option<&CallTree>,
    threshold: f64,
) -> EntryDoc<'a> {
    let frame = entry.frame.map(|f| frames.get(f));
    let has_dso = sort.contains(&SortKey::Dso);
    let has_sym = sort.contains(&SortKey::Sym);
    EntryDoc {
        children_percent: percent(ev.total_period, entry.children_period),
        self_percent: percent(ev.total_period, entry.self_period),
        children_period: entry.children_period,
        self_period: entry.self_period,
        children_samples: entry.children_samples,
        self_samples: entry.self_samples,
        comm: entry.comm.as_deref(),
        pid: entry.pid,
        tid: entry.tid,
        cpu: entry
            .cpu
            .map(|c| if c == u32::MAX { -1 } else { i64::from(c) }),
        parent: entry
            .parent
            .map(|p| p.and_then(|f| frames.get(f).sym.as_deref())),
        srcline: frame
            .filter(|_| sort.contains(&SortKey::Srcline))
            .map(|f| f.srcline.as_deref().unwrap_or("??:0")),
        dso: frame.filter(|_| has_dso).map(|f| &*f.dso),
        dso_short: frame.filter(|_| has_dso).map(|f| dso_short_name(&f.dso)),
        sym: frame.filter(|_| has_sym).map(|f| f.sym.as_deref()),
        kernel: frame
            .filter(|_| has_dso || has_sym)
            .map(|f| f.kind == FrameKind::Kernel),
        callgraph: tree.map(|t| nodes(t, 0, frames, ev.total_period, threshold)),
    }
}

/// Writes the report as one JSON document followed by a newline.
pub(crate) fn write_json(w: &mut impl Write, input: &ReportInput<'_>) -> io::Result<()> {
    let options = input.options;
    let events = input
        .profile
        .events
        .iter()
        .enumerate()
        .map(|(section, ev)| EventDoc {
            event: ev.event,
            name: input.meta.event_name(ev.event),
            samples: ev.nr_samples,
            total_period: ev.total_period,
            no_ip_samples: ev.no_ip_samples,
            entries: ev
                .entries
                .iter()
                .enumerate()
                .map(|(i, e)| {
                    let tree = input
                        .trees
                        .and_then(|t| t.get(section))
                        .and_then(|t| t.get(i));
                    entry_doc(
                        ev,
                        e,
                        &options.sort,
                        input.frames,
                        tree,
                        options.graph_threshold,
                    )
                })
                .collect(),
        })
        .collect();
    let doc = Doc {
        format: "scry-report",
        version: 1,
        children: input.profile.children,
        sort: options.sort.iter().map(|k| k.name()).collect(),
        lost_samples: input.meta.lost_samples,
        stack_quality: input.meta.quality,
        events,
    };
    serde_json::to_writer_pretty(&mut *w, &doc).map_err(io::Error::from)?;
    writeln!(w)
}
