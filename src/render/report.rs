//! The `scry report --stdio` layout: perf's header, columns and call graphs.
//!
//! Layout follows `perf report --stdio` so that people and scripts used to
//! it read ours: `#`-comment header (lost samples, `# Samples: 2K of event
//! 'cpu-clock'`, event count), percentage columns 8 wide right-aligned
//! (`Children`/`Self` or `Overhead`), `-n` sample counts 12 wide, text
//! columns left-aligned to their widest value, symbols prefixed `[k]`
//! (kernel) or `[.]` (user). Differences, on purpose: a `# stack quality:`
//! line at the top; unresolved symbols print as `[unknown]` (perf prints the
//! raw address: frames here are interned per function, not per address);
//! perf's `pid` key is a thread key printed `tid:comm`, ours are plain `pid`
//! and `tid` columns; the last column is not padded with trailing blanks.
//!
//! Call graphs (`-g`) use perf's drawing (`---`, `|--NN.NN%--`, ` --`),
//! with branch percentages of the event total and branches under the
//! threshold (default 0.5%) left out, as perf's `graph,0.5` default does.

use std::io::{self, Write};

use crate::analysis::calltree::CallTree;
use crate::analysis::profile::{Entry, EventProfile, Profile, SortKey, dso_short_name};
use crate::analysis::quality::QualitySummary;
use crate::analysis::sample::{FrameId, FrameKind, FrameTable};
use crate::render::report_columns::Column;

/// What to print.
#[derive(Clone, Debug)]
pub(crate) struct ReportOptions {
    /// Column order of the sort keys.
    pub(crate) sort: Vec<SortKey>,
    /// `-n`: a `Samples` column.
    pub(crate) show_samples: bool,
    /// Branches under this percentage of the total are not drawn. Default 0.5.
    pub(crate) graph_threshold: f64,
    /// `-F`: the columns, in order; default perf's (`Column::defaults`).
    pub(crate) fields: Option<Vec<Column>>,
}

impl Default for ReportOptions {
    fn default() -> Self {
        ReportOptions {
            sort: vec![SortKey::Comm, SortKey::Dso, SortKey::Sym],
            show_samples: false,
            graph_threshold: 0.5,
            fields: None,
        }
    }
}

/// What the file says besides its samples.
#[derive(Clone, Debug, Default)]
pub(crate) struct ReportMeta {
    /// Event names, by event index in the file.
    pub(crate) event_names: Vec<String>,
    /// Lost samples (PERF_RECORD_LOST) over the whole file.
    pub(crate) lost_samples: u64,
    pub(crate) quality: QualitySummary,
    /// The stack-quality line to print, when the resolver has a richer one
    /// (with named reasons) than `quality.line()`.
    pub(crate) quality_line: Option<String>,
}

impl ReportMeta {
    pub(crate) fn event_name(&self, event: usize) -> &str {
        self.event_names
            .get(event)
            .map_or("unknown event", String::as_str)
    }
}

/// perf's `convert_unit`: 2134 → "2K".
pub(crate) fn samples_with_unit(n: u64) -> String {
    let (value, unit) = if n > 1_000_000_000 {
        (n / 1_000_000_000, 'G')
    } else if n > 1_000_000 {
        (n / 1_000_000, 'M')
    } else if n > 1000 {
        (n / 1000, 'K')
    } else {
        (n, ' ')
    };
    format!("{value}{unit}")
}

/// The text of a symbol column cell: `[k] name`, `[.] name`.
pub(crate) fn symbol_cell(frame: &crate::analysis::sample::Frame) -> String {
    let marker = match frame.kind {
        FrameKind::Kernel => "[k]",
        FrameKind::User => "[.]",
    };
    format!("{marker} {}", frame.sym.as_deref().unwrap_or("[unknown]"))
}

/// The text of one key cell of an entry.
pub(crate) fn key_cell(key: SortKey, entry: &Entry, frames: &FrameTable) -> String {
    let frame = entry.frame.map(|f| frames.get(f));
    match key {
        SortKey::Comm => entry.comm.as_deref().unwrap_or("").to_string(),
        SortKey::Pid => entry.pid.map_or(String::new(), |p| p.to_string()),
        SortKey::Tid => entry.tid.map_or(String::new(), |t| t.to_string()),
        SortKey::Dso => frame.map_or(String::new(), |f| dso_short_name(&f.dso).to_string()),
        SortKey::Sym => frame.map_or(String::new(), symbol_cell),
        // perf's `%.3d`: a sample without a CPU is -1, `-001`.
        SortKey::Cpu => match entry.cpu {
            Some(u32::MAX) => "-001".to_string(),
            Some(c) => format!("{c:03}"),
            None => String::new(),
        },
        SortKey::Socket => entry.socket.map_or(String::new(), |s| {
            if s < 0 {
                format!("-{:03}", s.unsigned_abs())
            } else {
                format!("{s:03}")
            }
        }),
        SortKey::Parent => match entry.parent {
            Some(Some(f)) => frame_name(frames, f).to_string(),
            Some(None) => "[other]".to_string(),
            None => String::new(),
        },
        SortKey::Srcline => frame
            .map(|f| f.srcline.as_deref().unwrap_or("??:0").to_string())
            .unwrap_or_default(),
    }
}

/// What a report (stdio or JSON) is drawn from.
#[derive(Clone, Copy)]
pub(crate) struct ReportInput<'a> {
    /// The entries, per event.
    pub(crate) profile: &'a Profile,
    /// `trees[section][entry]`, when given: the call graph drawn under
    /// each entry.
    pub(crate) trees: Option<&'a [Vec<CallTree>]>,
    /// The frames the profile's ids name.
    pub(crate) frames: &'a FrameTable,
    /// The header's facts (events, losses, quality).
    pub(crate) meta: &'a ReportMeta,
    /// Sort, columns, call-graph threshold.
    pub(crate) options: &'a ReportOptions,
}

/// Writes the whole stdio report.
pub(crate) fn write_stdio(w: &mut impl Write, input: &ReportInput<'_>) -> io::Result<()> {
    writeln!(w, "# scry report")?;
    match &input.meta.quality_line {
        Some(line) => writeln!(w, "# {line}")?,
        None => writeln!(w, "# {}", input.meta.quality.line())?,
    }
    writeln!(w, "#")?;
    writeln!(w, "# Total Lost Samples: {}", input.meta.lost_samples)?;
    writeln!(w, "#")?;
    if input.profile.events.is_empty() {
        writeln!(w, "# no samples")?;
    }
    for (section, ev) in input.profile.events.iter().enumerate() {
        let section_trees = input.trees.and_then(|t| t.get(section));
        write_section(w, input, ev, section_trees)?;
    }
    Ok(())
}

fn write_section(
    w: &mut impl Write,
    input: &ReportInput<'_>,
    ev: &EventProfile,
    trees: Option<&Vec<CallTree>>,
) -> io::Result<()> {
    let ReportInput {
        profile,
        frames,
        meta,
        options,
        ..
    } = *input;
    writeln!(
        w,
        "# Samples: {} of event '{}'",
        samples_with_unit(ev.nr_samples),
        meta.event_name(ev.event)
    )?;
    writeln!(w, "# Event count (approx.): {}", ev.total_period)?;
    writeln!(w, "#")?;

    // Cells first, then widths: a column is as wide as its widest cell.
    let columns = options
        .fields
        .clone()
        .unwrap_or_else(|| Column::defaults(profile.children, options.show_samples, &options.sort));
    let cells: Vec<Vec<String>> = ev
        .entries
        .iter()
        .map(|e| columns.iter().map(|c| c.cell(ev, e, frames)).collect())
        .collect();
    let widths: Vec<usize> = columns
        .iter()
        .enumerate()
        .map(|(i, c)| {
            cells
                .iter()
                .filter(|_| c.widens())
                .filter_map(|row| row.get(i))
                .map(|c| c.chars().count())
                .chain([c.header().len(), c.min_width()])
                .max()
                .unwrap_or(0)
        })
        .collect();

    let mut header = String::from("#");
    let mut dots = String::from("#");
    for (i, (column, width)) in columns.iter().zip(&widths).enumerate() {
        let sep = if i == 0 { " " } else { "  " };
        if column.right_aligned() {
            header.push_str(&format!("{sep}{:>width$}", column.header()));
        } else {
            header.push_str(&format!("{sep}{:<width$}", column.header()));
        }
        dots.push_str(&format!("{sep}{}", ".".repeat(*width)));
    }
    writeln!(w, "{}", header.trim_end())?;
    writeln!(w, "{dots}")?;
    writeln!(w, "#")?;

    let last = columns.len().saturating_sub(1);
    for (index, row) in cells.iter().enumerate() {
        let mut line = String::new();
        for (i, ((cell, column), width)) in row.iter().zip(&columns).zip(&widths).enumerate() {
            if column.right_aligned() {
                line.push_str(&format!("  {cell:>width$}"));
            } else if i == last {
                line.push_str(&format!("  {cell}"));
            } else {
                line.push_str(&format!("  {cell:<width$}"));
            }
        }
        writeln!(w, "{line}")?;
        if let Some(tree) = trees.and_then(|t| t.get(index)) {
            write_tree(w, tree, frames, ev.total_period, options.graph_threshold)?;
        }
    }
    writeln!(w)?;
    writeln!(w)?;
    Ok(())
}

fn frame_name(frames: &FrameTable, id: FrameId) -> &str {
    frames.get(id).sym.as_deref().unwrap_or("[unknown]")
}

/// Draws one entry's call graph the way perf's `graph` mode does.
pub(crate) fn write_tree(
    w: &mut impl Write,
    tree: &CallTree,
    frames: &FrameTable,
    total: u64,
    threshold: f64,
) -> io::Result<()> {
    let shown = |period: u64| total > 0 && period as f64 * 100.0 / total as f64 >= threshold;
    let root = tree.root();
    let tops: Vec<u32> = tree
        .sorted_children(0)
        .into_iter()
        .filter(|&c| tree.node(c).is_some_and(|n| shown(n.period)))
        .collect();
    let Some(&first) = tops.first() else {
        return Ok(());
    };
    let prefix = " ".repeat(12);
    let single = tops.len() == 1 && tree.node(first).is_some_and(|n| n.period == root.period);
    if single {
        writeln!(w, "{prefix}|")?;
        writeln!(
            w,
            "{prefix}---{}",
            frame_name(frames, tree.nodes[first as usize].frame)
        )?;
        write_children(
            w,
            tree,
            frames,
            first,
            &format!("{prefix}   "),
            total,
            &shown,
        )?;
    } else {
        write_children(w, tree, frames, 0, &prefix, total, &shown)?;
    }
    writeln!(w)?;
    Ok(())
}

/// Children of `node`, drawn from column `prefix.len()` (where the node's
/// own name starts).
fn write_children(
    w: &mut impl Write,
    tree: &CallTree,
    frames: &FrameTable,
    node: u32,
    prefix: &str,
    total: u64,
    shown: &dyn Fn(u64) -> bool,
) -> io::Result<()> {
    let mut at = node;
    loop {
        let Some(parent) = tree.node(at) else {
            return Ok(());
        };
        let kids: Vec<u32> = tree
            .sorted_children(at)
            .into_iter()
            .filter(|&c| tree.node(c).is_some_and(|n| shown(n.period)))
            .collect();
        match kids.as_slice() {
            [] => return Ok(()),
            // One child carrying all of the parent: a straight continuation.
            [only] if tree.node(*only).is_some_and(|n| n.period == parent.period) && at != 0 => {
                writeln!(
                    w,
                    "{prefix}{}",
                    frame_name(frames, tree.nodes[*only as usize].frame)
                )?;
                at = *only;
            }
            _ => {
                let n = kids.len();
                for (i, &kid) in kids.iter().enumerate() {
                    let Some(node) = tree.node(kid) else {
                        continue;
                    };
                    let last = i + 1 == n;
                    let pct = node.period as f64 * 100.0 / total as f64;
                    writeln!(w, "{prefix}|          ")?;
                    let marker = if last { " " } else { "|" };
                    writeln!(
                        w,
                        "{prefix}{marker}--{pct:.2}%--{}",
                        frame_name(frames, node.frame)
                    )?;
                    let child_prefix = format!("{prefix}{marker}          ");
                    write_children(w, tree, frames, kid, &child_prefix, total, shown)?;
                }
                return Ok(());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perf_units() {
        assert_eq!(samples_with_unit(502), "502 ");
        assert_eq!(samples_with_unit(2134), "2K");
        assert_eq!(samples_with_unit(1000), "1000 ");
        assert_eq!(samples_with_unit(3_500_000), "3M");
    }
}
