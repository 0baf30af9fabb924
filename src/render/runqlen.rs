//! runqlen's text as libbpf-tools prints it: per histogram (with `-C`,
//! under `cpu = N`) the linear `runqlen` histogram, or with `-O` the
//! occupancy: `runqocc: 12.34%`, per CPU `runqocc, CPU 0     12.34%`.

use std::io::{self, Write};

use crate::analysis::hist::KeyedHistogram;
use crate::render::hist::write_hist;

/// The histograms; `per_cpu`: each under `cpu = KEY`.
pub(crate) fn write_runqlen(
    w: &mut impl Write,
    hists: &[KeyedHistogram],
    per_cpu: bool,
) -> io::Result<()> {
    for keyed in hists {
        if per_cpu {
            writeln!(w, "cpu = {}", keyed.key)?;
        }
        write_hist(w, &keyed.hist)?;
    }
    Ok(())
}

/// `-O`: the share of samples that found a task waiting.
pub(crate) fn write_occupancy(
    w: &mut impl Write,
    hists: &[KeyedHistogram],
    per_cpu: bool,
) -> io::Result<()> {
    for keyed in hists {
        let pct = 100.0 * keyed.hist.share_past_first();
        if per_cpu {
            writeln!(w, "runqocc, CPU {:<3} {pct:6.2}%", keyed.key)?;
        } else {
            writeln!(w, "runqocc: {pct:.2}%")?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::hist::{Histogram, Scale};
    use crate::render::golden::text;

    #[test]
    fn histograms_and_occupancy_are_libbpf_tools_layout() {
        let hists = [KeyedHistogram {
            key: 1,
            label: String::new(),
            hist: Histogram::from_slots(Scale::Linear { base: 0, step: 1 }, "runqlen", &[3, 1]),
        }];
        assert_eq!(
            text(|w| write_runqlen(w, &hists, true)),
            "cpu = 1\n     runqlen       : count     distribution\n        0          : 3        |****************************************|\n        1          : 1        |*************                           |\n"
        );
        assert_eq!(
            text(|w| write_occupancy(w, &hists, false)),
            "runqocc: 25.00%\n"
        );
        assert_eq!(
            text(|w| write_occupancy(w, &hists, true)),
            "runqocc, CPU 1    25.00%\n"
        );
    }
}
