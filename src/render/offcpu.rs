//! `scry offcpu`'s text report: a summary line (total off-CPU time, by
//! state, switch-outs dropped for want of a switch-in), the stack-quality
//! line, then the heaviest distinct stacks, leaf first, each with its time,
//! share and count.

use std::io::{self, Write};

use crate::analysis::folded::FoldedStacks;
use crate::analysis::sample::{FrameKind, FrameTable};

/// Totals printed in the summary line.
#[derive(Clone, Debug, Default)]
pub(crate) struct OffCpuSummary {
    pub(crate) total_ns: u64,
    pub(crate) switches: u64,
    /// (state letter, ns), largest first.
    pub(crate) by_state: Vec<(char, u64)>,
    pub(crate) unmatched: u64,
    /// Periods dropped because records were lost.
    pub(crate) lost_dropped: u64,
    pub(crate) lost: u64,
    pub(crate) quality_line: String,
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

/// Writes the report: the `top` heaviest stacks of `folded` (periods in ns).
pub(crate) fn write_report(
    w: &mut impl Write,
    summary: &OffCpuSummary,
    folded: &FoldedStacks,
    frames: &FrameTable,
    top: usize,
) -> io::Result<()> {
    let states: Vec<String> = summary
        .by_state
        .iter()
        .map(|(s, ns)| format!("{s} {:.3} ms", ms(*ns)))
        .collect();
    writeln!(
        w,
        "# scry offcpu: {:.3} ms off-CPU in {} switch-outs ({})",
        ms(summary.total_ns),
        summary.switches,
        if states.is_empty() {
            "none".to_string()
        } else {
            states.join(", ")
        }
    )?;
    if summary.unmatched > 0 {
        writeln!(
            w,
            "# {} switch-outs had no switch-in before the end (dropped, not stretched)",
            summary.unmatched
        )?;
    }
    if summary.lost > 0 || summary.lost_dropped > 0 {
        writeln!(
            w,
            "# WARNING: {} events lost; {} off-CPU periods they may have reached were dropped, not stretched",
            summary.lost, summary.lost_dropped
        )?;
    }
    writeln!(w, "# {}", summary.quality_line)?;
    writeln!(w, "#")?;
    writeln!(w, "#   off-CPU ms    share   count  stack (leaf first)")?;
    let mut stacks: Vec<_> = folded.stacks.iter().collect();
    stacks.sort_by(|a, b| b.period.cmp(&a.period).then(a.frames.cmp(&b.frames)));
    let total = summary.total_ns.max(1) as f64;
    for stack in stacks.into_iter().take(top) {
        let comm = folded.comms.get(stack.comm as usize).map_or("?", |c| c);
        writeln!(
            w,
            "{:>14.3} {:>7.2}% {:>7}  {comm}",
            ms(stack.period),
            stack.period as f64 * 100.0 / total,
            stack.samples
        )?;
        for frame in stack.frames.iter().rev() {
            let f = frames.get(*frame);
            let marker = match f.kind {
                FrameKind::Kernel => "[k]",
                FrameKind::User => "[.]",
            };
            writeln!(
                w,
                "{:32}{marker} {}",
                "",
                f.sym.as_deref().unwrap_or("[unknown]")
            )?;
        }
        writeln!(w)?;
    }
    Ok(())
}
