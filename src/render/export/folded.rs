//! Folded stacks (`comm;root;...;leaf count`), as `scry flamegraph
//! --folded` writes them: `analysis::folded` and `render::folded`, behind
//! the exporter trait. One event is folded, the first sample's.

use std::io::Write;

use super::{ExportError, ExportInput, ExportResult, ExportSummary, Exporter};
use crate::analysis::folded::{FoldOptions, FoldedStacks};
use crate::render::folded::{FoldedOptions, folded_lines};

/// The folded-stacks exporter.
pub(crate) struct Folded;

impl Exporter for Folded {
    fn write(&self, input: &ExportInput, out: &mut dyn Write) -> ExportResult {
        let resolved = input.resolved;
        let folded = FoldedStacks::build(&resolved.samples, &FoldOptions::default());
        let lines = folded_lines(&folded, &resolved.frames, FoldedOptions::default());
        if lines.is_empty() {
            return Err(ExportError::NoSamples);
        }
        for line in &lines {
            writeln!(out, "{line}")?;
        }
        let mut summary = ExportSummary::default();
        let others: Vec<String> = (0..resolved.events.len())
            .filter(|&i| i != folded.event && resolved.samples.iter().any(|s| s.event == i))
            .map(|i| input.event(i).name)
            .collect();
        if !others.is_empty() {
            summary.skipped.push(format!(
                "folded stacks hold one event ({}): left out {}",
                input.event(folded.event).name,
                others.join(", ")
            ));
        }
        Ok(summary)
    }
}
