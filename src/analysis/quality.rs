//! Stack quality: how much of what a report shows rests on complete stacks
//! and named frames. Printed at the top of every report, so that a profile
//! built on broken unwinding never looks trustworthy by accident.

use super::sample::{FrameTable, ResolvedSample, StackQuality};

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Counts over all samples of a file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub(crate) struct QualitySummary {
    pub(crate) samples: u64,
    /// Unwound to the outermost frame.
    pub(crate) complete: u64,
    /// The unwinder stopped early.
    pub(crate) truncated: u64,
    /// No callchain was recorded.
    pub(crate) no_callchain: u64,
    /// A `-g` frame-pointer chain kept unchecked (no unwind tables for the
    /// sampled code, or the stack copy too small): a frameless function's
    /// caller may be missing.
    #[serde(skip_serializing_if = "is_zero")]
    pub(crate) fp_only: u64,
    /// Frames over all samples.
    pub(crate) frames: u64,
    /// Frames without a symbol name.
    pub(crate) unknown_frames: u64,
}

impl QualitySummary {
    pub(crate) fn from_samples(samples: &[ResolvedSample], frames: &FrameTable) -> QualitySummary {
        let unknown: Vec<bool> = (0..frames.len())
            .map(|i| frames.get(super::sample::FrameId(i as u32)).sym.is_none())
            .collect();
        let mut q = QualitySummary::default();
        for sample in samples {
            let n = sample.count;
            q.samples += n;
            match sample.quality {
                StackQuality::Complete => q.complete += n,
                StackQuality::Truncated => q.truncated += n,
                StackQuality::NoCallchain => q.no_callchain += n,
                StackQuality::FramePointerOnly => q.fp_only += n,
            }
            q.frames += sample.stack.len() as u64 * n;
            q.unknown_frames += n * sample
                .stack
                .iter()
                .filter(|f| unknown.get(f.0 as usize).copied().unwrap_or(true))
                .count() as u64;
        }
        q
    }

    fn pct(part: u64, whole: u64) -> f64 {
        if whole == 0 {
            0.0
        } else {
            part as f64 * 100.0 / whole as f64
        }
    }

    /// `stack quality: 98.7% of samples fully unwound, 0.4% [unknown] frames`
    pub(crate) fn line(&self) -> String {
        if self.samples == 0 {
            return "stack quality: no samples".to_string();
        }
        let unknown = Self::pct(self.unknown_frames, self.frames);
        if self.no_callchain == self.samples {
            return format!(
                "stack quality: no callchains recorded (record with -g), {unknown:.1}% [unknown] frames"
            );
        }
        let mut line = format!(
            "stack quality: {:.1}% of samples fully unwound, {unknown:.1}% [unknown] frames",
            Self::pct(self.complete, self.samples)
        );
        if self.truncated > 0 {
            line.push_str(&format!(
                ", {:.1}% truncated",
                Self::pct(self.truncated, self.samples)
            ));
        }
        if self.fp_only > 0 {
            line.push_str(&format!(
                ", {:.1}% frame pointers only",
                Self::pct(self.fp_only, self.samples)
            ));
        }
        if self.no_callchain > 0 {
            line.push_str(&format!(
                ", {:.1}% without callchain",
                Self::pct(self.no_callchain, self.samples)
            ));
        }
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::testing::Builder;

    #[test]
    fn counts_complete_samples_and_unknown_frames() {
        let mut b = Builder::default();
        b.sample("app", 1, &["?", "main"], 3);
        b.sample("app", 1, &["f", "main"], 1);
        if let Some(s) = b.samples.last_mut() {
            s.quality = StackQuality::Truncated;
        }
        let q = QualitySummary::from_samples(&b.samples, &b.frames);
        assert_eq!((q.samples, q.complete, q.truncated), (4, 3, 1));
        assert_eq!((q.frames, q.unknown_frames), (8, 3));
        assert_eq!(
            q.line(),
            "stack quality: 75.0% of samples fully unwound, 37.5% [unknown] frames, 25.0% truncated"
        );
    }
}
