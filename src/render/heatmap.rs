//! Heat map pages: one self-contained HTML file per map (inline SVG,
//! inline style and script, a Content-Security-Policy that lets the page
//! fetch nothing), from `analysis::heatmap`'s grids.
//!
//! The grid is drawn here, in SVG, with a `<title>` per non-empty cell
//! (its count and range: the browser's tooltip, and the page's status line
//! on hover), so the picture needs no script to be read. The script
//! (`heatmap.js`) adds FlameScope's selection to the offset map: the page
//! carries every cell's stacks as a JSON block (`#heatmap-data`: the frame
//! names once, the distinct stacks root first as name indices, and per
//! cell flat `[stack, samples, ...]` pairs), and the flame graph of a
//! selected range is aggregated and drawn in the page. That decision over
//! pre-rendered SVGs per column: any range, not only whole columns, at the
//! cost of the page holding the stacks (a few MB for 400,000 samples). The
//! JSON escapes `<`, so no name can close its `<script>`.

use std::io::{self, Write};

use serde_json::{Value, json};

use crate::analysis::heatmap::{LatencyHeatmap, OffsetHeatmap};
use crate::model::hash::FxHashMap;
use crate::model::sample::FrameTable;
use crate::render::folded::{FoldedOptions, frame_name};
use crate::render::markup::escape;

const SCRIPT: &str = include_str!("heatmap.js");

/// What a page says about its input.
#[derive(Clone, Debug, Default)]
pub(crate) struct PageOptions {
    /// The page's heading (`scry heatmap: perf.data`).
    pub(crate) title: String,
    /// A line under it (the event, the number of samples).
    pub(crate) subtitle: String,
}

/// The page's layout, in pixels.
const LEFT: u32 = 80;
const TOP: u32 = 10;
const BOTTOM: u32 = 30;
const MAX_WIDTH: u32 = 1100;

/// A cell's colour: white for none, then from pale yellow to dark red,
/// by the square root of its share of the busiest cell (a few busy cells
/// do not wash the rest out).
fn cell_colour(count: u64, max: u64) -> String {
    if count == 0 || max == 0 {
        return "#f4f4f4".to_string();
    }
    let t = (count as f64 / max as f64).sqrt();
    let lerp = |a: f64, b: f64| (a + (b - a) * t).round() as u8;
    format!(
        "rgb({},{},{})",
        lerp(255.0, 170.0),
        lerp(236.0, 0.0),
        lerp(160.0, 0.0)
    )
}

/// A duration for people: `850 ns`, `4.19 µs`, `8.39 ms`, `1.07 s`.
pub(crate) fn human_ns(ns: u64) -> String {
    let v = ns as f64;
    if ns < 1_000 {
        format!("{ns} ns")
    } else if ns < 1_000_000 {
        format!("{:.3} µs", v / 1e3)
    } else if ns < 1_000_000_000 {
        format!("{:.3} ms", v / 1e6)
    } else {
        format!("{:.3} s", v / 1e9)
    }
}

/// One grid: the cells' sizes and what each cell says.
struct Grid<'a> {
    columns: u32,
    rows: u32,
    counts: &'a [u64],
    /// The tooltip of cell (col, row) holding n.
    title: &'a dyn Fn(u32, u32, u64) -> String,
    /// Row labels: (row, text), drawn at the row's top.
    row_labels: Vec<(u32, String)>,
    /// Column labels: (column, text).
    column_labels: Vec<(u32, String)>,
    /// Rows are drawn bottom-up (latency: long at the top).
    bottom_up: bool,
}

impl<'a> Grid<'a> {
    /// A grid without labels, rows drawn top-down.
    fn new(
        columns: u32,
        rows: u32,
        counts: &'a [u64],
        title: &'a dyn Fn(u32, u32, u64) -> String,
    ) -> Self {
        Grid {
            columns,
            rows,
            counts,
            title,
            row_labels: Vec::new(),
            column_labels: Vec::new(),
            bottom_up: false,
        }
    }
}

fn write_grid(w: &mut dyn Write, grid: &Grid) -> io::Result<()> {
    let cell_w = (MAX_WIDTH / grid.columns.max(1)).clamp(2, 30);
    let cell_h = if grid.rows > 40 { 10 } else { 16 };
    let width = LEFT + cell_w * grid.columns + 20;
    let height = TOP + cell_h * grid.rows + BOTTOM;
    let max = grid.counts.iter().copied().max().unwrap_or(0);
    writeln!(
        w,
        r#"<svg id="heatmap" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}">"#
    )?;
    writeln!(
        w,
        r##"<rect x="{LEFT}" y="{TOP}" width="{}" height="{}" fill="#f4f4f4"/>"##,
        cell_w * grid.columns,
        cell_h * grid.rows
    )?;
    let y_of = |row: u32| {
        let r = if grid.bottom_up {
            grid.rows - 1 - row
        } else {
            row
        };
        TOP + r * cell_h
    };
    for col in 0..grid.columns {
        for row in 0..grid.rows {
            let n = grid.counts[(col * grid.rows + row) as usize];
            if n == 0 {
                continue;
            }
            writeln!(
                w,
                r#"<rect class="cell" data-c="{col}" data-r="{row}" data-n="{n}" x="{}" y="{}" width="{cell_w}" height="{cell_h}" fill="{}"><title>{}</title></rect>"#,
                LEFT + col * cell_w,
                y_of(row),
                cell_colour(n, max),
                escape(&(grid.title)(col, row, n))
            )?;
        }
    }
    for (row, text) in &grid.row_labels {
        let y = if grid.bottom_up {
            y_of(*row) + cell_h
        } else {
            y_of(*row) + 9
        };
        writeln!(
            w,
            r#"<text class="axis" x="{}" y="{y}" text-anchor="end">{}</text>"#,
            LEFT - 4,
            escape(text)
        )?;
    }
    for (col, text) in &grid.column_labels {
        writeln!(
            w,
            r#"<text class="axis" x="{}" y="{}">{}</text>"#,
            LEFT + col * cell_w,
            TOP + grid.rows * cell_h + 14,
            escape(text)
        )?;
    }
    writeln!(w, "</svg>")
}

/// Labels every `step`-th of `n` places, `step` chosen so that about
/// `want` are drawn.
fn every(n: u32, want: u32) -> impl Iterator<Item = u32> {
    let step = n.div_ceil(want.max(1)).max(1);
    (0..n).step_by(step as usize)
}

fn write_page(
    w: &mut dyn Write,
    options: &PageOptions,
    grid: &dyn Fn(&mut dyn Write) -> io::Result<()>,
    data: &Value,
    flame: bool,
) -> io::Result<()> {
    let title = escape(&options.title);
    write!(
        w,
        r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'">
<title>{title}</title>
<style>
body {{ font-family: sans-serif; margin: 16px; color: #222; }}
h1 {{ font-size: 18px; margin: 0 0 4px; }}
p {{ margin: 4px 0; font-size: 13px; }}
#status {{ min-height: 1.2em; font-family: monospace; }}
.axis {{ font-size: 10px; fill: #555; }}
rect.cell {{ cursor: crosshair; }}
rect.cell:hover {{ stroke: #000; stroke-width: 1; }}
rect.sel {{ stroke: #1060ff; stroke-width: 2; }}
#flame text {{ font-size: 11px; font-family: monospace; pointer-events: none; }}
#flame g.frame {{ cursor: pointer; }}
</style></head><body>
<h1>{title}</h1>
<p>{}</p>
<p id="status"></p>
"#,
        escape(&options.subtitle)
    )?;
    grid(w)?;
    if flame {
        writeln!(w, r#"<p id="range"></p>"#)?;
        writeln!(
            w,
            r#"<svg id="flame" xmlns="http://www.w3.org/2000/svg" width="1200" height="0"></svg>"#
        )?;
    }
    // `<` only occurs in JSON strings: \u003c keeps the JSON valid and the
    // script element closed only where it should be.
    let json = data.to_string().replace('<', "\\u003c");
    writeln!(
        w,
        r#"<script type="application/json" id="heatmap-data">{json}</script>"#
    )?;
    writeln!(w, "<script>\n{SCRIPT}</script>\n</body></html>")
}

/// The offset heat map page: the grid, and the data its flame graphs are
/// drawn from. `unit` names a count (`samples`).
pub(crate) fn write_offset_page(
    map: &OffsetHeatmap,
    frames: &FrameTable,
    options: &PageOptions,
    w: &mut dyn Write,
) -> io::Result<()> {
    let row_ms = map.row_ns as f64 / 1e6;
    // Names once; stacks root first as name indices, the comm at the root.
    let mut names: Vec<String> = Vec::new();
    let mut index: FxHashMap<String, u32> = FxHashMap::default();
    let mut intern = |name: String| -> u32 {
        let next = names.len() as u32;
        *index.entry(name).or_insert_with_key(|n| {
            names.push(n.clone());
            next
        })
    };
    let named = FoldedOptions {
        annotate_kernel: true,
    };
    let mut frame_ids: FxHashMap<u32, u32> = FxHashMap::default();
    let stacks: Vec<Vec<u32>> = map
        .stacks
        .iter()
        .map(|s| {
            let mut ids = vec![intern(s.comm.replace(' ', "_"))];
            for f in s.frames.iter().rev() {
                let id = match frame_ids.get(&f.0) {
                    Some(&id) => id,
                    None => {
                        let id = intern(frame_name(frames.get(*f), named));
                        frame_ids.insert(f.0, id);
                        id
                    }
                };
                ids.push(id);
            }
            ids
        })
        .collect();
    let cells: Vec<Vec<u64>> = map
        .cells
        .iter()
        .map(|c| c.iter().flat_map(|&(s, n)| [u64::from(s), n]).collect())
        .collect();
    let data = json!({
        "kind": "offset",
        "unit": "samples",
        "hint": "Press on a cell and release on another: the flame graph of the samples between them is drawn below.",
        "columns": map.columns,
        "rows": map.rows,
        "row_ms": row_ms,
        "start_ns": map.start,
        "counts": map.counts,
        "names": names,
        "stacks": stacks,
        "cells": cells,
    });
    write_page(w, options, &|w| write_offset_svg(map, w), &data, true)
}

/// The offset heat map's grid alone, as the page draws it (`<svg
/// id="heatmap">`, a `rect.cell` per non-empty cell with `data-c`,
/// `data-r`, `data-n` and a `<title>`): `scry serve` answers with it.
pub(crate) fn write_offset_svg(map: &OffsetHeatmap, w: &mut dyn Write) -> io::Result<()> {
    let row_ms = map.row_ns as f64 / 1e6;
    let title = |col: u32, row: u32, n: u64| {
        format!(
            "{col} s + {:.0}-{:.0} ms: {n} samples",
            f64::from(row) * row_ms,
            f64::from(row + 1) * row_ms
        )
    };
    let mut grid = Grid::new(map.columns, map.rows, &map.counts, &title);
    grid.row_labels = every(map.rows, 10)
        .map(|r| (r, format!("{:.0} ms", f64::from(r) * row_ms)))
        .collect();
    grid.column_labels = every(map.columns, 20)
        .map(|c| (c, format!("{c} s")))
        .collect();
    write_grid(w, &grid)
}

/// The latency heat map page; `label` says what was paired.
pub(crate) fn write_latency_page(
    map: &LatencyHeatmap,
    label: &str,
    options: &PageOptions,
    w: &mut dyn Write,
) -> io::Result<()> {
    let range = |bucket: u32| {
        let lo = if bucket == 0 { 0 } else { 1u64 << bucket };
        (lo, 1u64 << (bucket + 1))
    };
    let secs = |col: u32| (f64::from(col) * map.column_ns as f64) / 1e9;
    let title = |col: u32, row: u32, n: u64| {
        let (lo, hi) = range(map.min_bucket + row);
        format!(
            "{:.3}-{:.3} s, {} to {}: {n} {label}",
            secs(col),
            secs(col + 1),
            human_ns(lo),
            human_ns(hi)
        )
    };
    let mut grid = Grid::new(map.columns, map.buckets, &map.counts, &title);
    grid.bottom_up = true;
    grid.row_labels = every(map.buckets, 20)
        .map(|r| (r, human_ns(range(map.min_bucket + r).0)))
        .collect();
    grid.column_labels = every(map.columns, 12)
        .map(|c| (c, format!("{:.2} s", secs(c))))
        .collect();
    let data = json!({
        "kind": "latency",
        "unit": label,
        "hint": "x: time, y: latency (log2 buckets), colour: pairs. Hover a cell for its count.",
        "columns": map.columns,
        "column_ns": map.column_ns,
        "min_bucket": map.min_bucket,
        "buckets": map.buckets,
        "start_ns": map.start,
        "counts": map.counts,
    });
    write_page(w, options, &|w| write_grid(w, &grid), &data, false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::heatmap::{LatencyPoint, OffsetOptions};
    use crate::model::sample::{Frame, FrameKind, ResolvedSample, StackQuality};

    #[test]
    fn offset_page_carries_cells_stacks_and_no_raw_angle_brackets() {
        let mut frames = FrameTable::default();
        let frame = |name: &str| Frame {
            sym: Some(name.into()),
            dso: "/bin/x".into(),
            kind: FrameKind::User,
            inlined: false,
            srcline: None,
        };
        let main = frames.intern(frame("main"));
        let hot = frames.intern(frame("hot</script><b>"));
        let sample = |time: u64| ResolvedSample {
            event: 0,
            comm: "my app".into(),
            pid: 1,
            tid: 1,
            cpu: 0,
            time,
            period: 1,
            stack: vec![hot, main].into(),
            quality: StackQuality::Complete,
            count: 1,
        };
        let samples = [sample(0), sample(30_000_000), sample(1_000_000_000)];
        let map = OffsetHeatmap::build(&samples, &OffsetOptions::default()).unwrap();
        let mut page = Vec::new();
        let options = PageOptions {
            title: "t".into(),
            subtitle: "s".into(),
        };
        write_offset_page(&map, &frames, &options, &mut page).unwrap();
        let page = String::from_utf8(page).unwrap();
        assert_eq!(page.matches("</script>").count(), 2, "{page}");
        assert!(page.contains(r#"data-c="0" data-r="1" data-n="1""#));
        assert!(page.contains("<title>1 s + 0-20 ms: 1 samples</title>"));
        let start = page.find(r#"id="heatmap-data">"#).unwrap() + 18;
        let end = start + page[start..].find("</script>").unwrap();
        let data: Value = serde_json::from_str(&page[start..end]).unwrap();
        assert_eq!(data["names"], json!(["my_app", "main", "hot</script><b>"]));
        assert_eq!(data["stacks"], json!([[0, 1, 2]]));
        assert_eq!(data["cells"][0], json!([0, 1]));
        assert_eq!(data["cells"][51], json!([]));
        // Nothing is loaded from elsewhere.
        assert!(!page.contains(" src=") && !page.contains(" href="));
    }

    #[test]
    fn latency_page_labels_buckets_in_human_units() {
        let points = [LatencyPoint {
            end: 10,
            duration: 5_000_000,
        }];
        let map = LatencyHeatmap::build(&points, None).unwrap();
        let mut page = Vec::new();
        write_latency_page(&map, "sys_read", &PageOptions::default(), &mut page).unwrap();
        let page = String::from_utf8(page).unwrap();
        assert!(
            page.contains("<title>0.000-0.001 s, 4.194 ms to 8.389 ms: 1 sys_read</title>"),
            "{page}"
        );
        assert_eq!(human_ns(850), "850 ns");
        assert_eq!(human_ns(1_500_000_000), "1.500 s");
    }
}
