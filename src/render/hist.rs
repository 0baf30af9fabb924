//! Histograms as bcc's libbpf-tools print them (`print_log2_hist`,
//! `print_linear_hist` of trace_helpers.c), byte for byte: the header
//! `     usecs               : count    distribution`, one row per bucket
//! up to the last non-empty one (log2) or the non-empty ones (linear), and
//! bars of 40 stars scaled to the largest bucket (20, and wider columns,
//! past bucket 32). Also as JSON: the buckets with their bounds.

use std::io::{self, Write};

use crate::analysis::hist::{Histogram, KeyedHistogram, Scale};

/// `val * width / max` stars, padded to `width`.
fn stars(count: u64, max: u64, width: usize) -> String {
    if max == 0 {
        return " ".repeat(width);
    }
    let n = (count.min(max) as u128 * width as u128 / max as u128) as usize;
    format!("{}{}", "*".repeat(n), " ".repeat(width - n))
}

/// Writes one histogram; nothing when it is empty (as bcc).
pub(crate) fn write_hist(w: &mut impl Write, hist: &Histogram) -> io::Result<()> {
    let Some(last) = hist.buckets.iter().rposition(|&c| c > 0) else {
        return Ok(());
    };
    let max = hist.buckets.iter().copied().max().unwrap_or(0);
    match hist.scale {
        Scale::Log2 => {
            let wide = last > 32;
            let (indent, label_width, width, bar) = if wide {
                (15, 29, 20, 20)
            } else {
                (5, 19, 10, 40)
            };
            writeln!(
                w,
                "{:indent$}{:<label_width$} : count    distribution",
                "", hist.unit
            )?;
            for (slot, &count) in hist.buckets.iter().enumerate().take(last + 1) {
                let (low, high) = hist.range(slot);
                writeln!(
                    w,
                    "{low:>width$} -> {high:<width$} : {count:<8} |{}|",
                    stars(count, max, bar)
                )?;
            }
        }
        Scale::Linear { .. } => {
            writeln!(w, "     {:<13} : count     distribution", hist.unit)?;
            for (slot, &count) in hist.buckets.iter().enumerate() {
                if count == 0 {
                    continue;
                }
                let (low, _) = hist.range(slot);
                writeln!(
                    w,
                    "        {low:<10} : {count:<8} |{}|",
                    stars(count, max, 40)
                )?;
            }
        }
    }
    Ok(())
}

/// Histograms per key, each after a blank line and its label (`pid = 12
/// name`), as libbpf-tools' `-P`; an empty label prints the histogram alone.
pub(crate) fn write_keyed(w: &mut impl Write, hists: &[KeyedHistogram]) -> io::Result<()> {
    for keyed in hists {
        if !keyed.label.is_empty() {
            writeln!(w, "\n{}", keyed.label)?;
        }
        write_hist(w, &keyed.hist)?;
    }
    Ok(())
}

/// A histogram's non-empty buckets as JSON: `{"low", "high", "count"}`
/// each.
pub(crate) fn buckets_json(h: &Histogram) -> Vec<serde_json::Value> {
    h.buckets
        .iter()
        .enumerate()
        .filter(|(_, c)| **c > 0)
        .map(|(slot, &count)| {
            let (low, high) = h.range(slot);
            serde_json::json!({"low": low, "high": high, "count": count})
        })
        .collect()
}

/// The histograms as one JSON document: per key, the unit, the total and
/// the non-empty buckets with their bounds.
pub(crate) fn write_keyed_json(w: &mut impl Write, hists: &[KeyedHistogram]) -> io::Result<()> {
    let value: Vec<serde_json::Value> = hists
        .iter()
        .map(|keyed| {
            let h = &keyed.hist;
            let buckets = buckets_json(h);
            serde_json::json!({
                "key": keyed.key,
                "label": keyed.label,
                "unit": h.unit,
                "scale": h.scale,
                "total": h.total(),
                "buckets": buckets,
            })
        })
        .collect();
    serde_json::to_writer_pretty(&mut *w, &value).map_err(io::Error::other)?;
    writeln!(w)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::golden::text;

    /// The rows libbpf-tools' `cpudist 1 1` printed for these counts.
    #[test]
    fn log2_is_libbpf_tools_layout() {
        let h = Histogram::from_slots(Scale::Log2, "usecs", &[0, 1, 11, 14, 278, 449, 0]);
        let expected = r#"
     usecs               : count    distribution
         0 -> 1          : 0        |                                        |
         2 -> 3          : 1        |                                        |
         4 -> 7          : 11       |                                        |
         8 -> 15         : 14       |*                                       |
        16 -> 31         : 278      |************************                |
        32 -> 63         : 449      |****************************************|
"#;
        assert_eq!(
            text(|w| write_hist(w, &h)),
            expected.trim_start_matches('\n')
        );
    }

    #[test]
    fn wide_log2_and_linear_and_empty() {
        let mut slots = vec![0; 34];
        slots[33] = 2;
        slots[0] = 1;
        let h = Histogram::from_slots(Scale::Log2, "nsecs", &slots);
        let out = text(|w| write_hist(w, &h));
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            lines[0],
            "               nsecs                         : count    distribution"
        );
        assert_eq!(
            lines[1],
            "                   0 -> 1                    : 1        |**********          |"
        );
        assert_eq!(
            lines[34],
            "          8589934592 -> 17179869183          : 2        |********************|"
        );
        let lin = Histogram::from_slots(Scale::Linear { base: 0, step: 1 }, "runqlen", &[4, 0, 2]);
        assert_eq!(
            text(|w| write_hist(w, &lin)),
            "     runqlen       : count     distribution\n        0          : 4        |****************************************|\n        2          : 2        |********************                    |\n"
        );
        assert_eq!(text(|w| write_hist(w, &Histogram::log2("usecs"))), "");
    }

    #[test]
    fn keyed_text_and_json() {
        let hists = vec![KeyedHistogram {
            key: 12,
            label: "pid = 12 cat".to_string(),
            hist: Histogram::from_slots(Scale::Log2, "msecs", &[1]),
        }];
        assert_eq!(
            text(|w| write_keyed(w, &hists)),
            "\npid = 12 cat\n     msecs               : count    distribution\n         0 -> 1          : 1        |****************************************|\n"
        );
        let json: serde_json::Value =
            serde_json::from_str(&text(|w| write_keyed_json(w, &hists))).unwrap();
        assert_eq!(json[0]["total"], 1);
        assert_eq!(json[0]["buckets"][0]["high"], 1);
        assert_eq!(json[0]["scale"]["scale"], "log2");
    }
}
