//! hardirqs' and softirqs' text as libbpf-tools prints it: the table
//! (`HARDIRQ` padded to 26, `SOFTIRQ` to 16, then `TOTAL_usecs` or
//! `TOTAL_count` and the totals right-aligned in 11), or with `-d` one
//! histogram per interrupt under `hardirq = NAME` (softirqs: `softirq =
//! NAME`, and a blank line after each); and the same as JSON.

use std::io::{self, Write};

use crate::analysis::irqs::IrqKind;
use crate::analysis::irqs::IrqRow;
use crate::render::hist::{buckets_json, write_hist};

/// The name column's width and heading.
fn column(kind: IrqKind) -> (usize, &'static str) {
    match kind {
        IrqKind::Hard => (26, "HARDIRQ"),
        IrqKind::Soft => (16, "SOFTIRQ"),
    }
}

/// The totals table; `unit` is `usecs`, `nsecs` or `count`.
pub(crate) fn write_irq_table(
    w: &mut impl Write,
    kind: IrqKind,
    unit: &str,
    rows: &[IrqRow],
) -> io::Result<()> {
    let (width, heading) = column(kind);
    writeln!(w, "{heading:<width$} {:>11}", format!("TOTAL_{unit}"))?;
    for row in rows {
        writeln!(w, "{:<width$} {:>11}", row.name, row.total)?;
    }
    Ok(())
}

/// `-d`: a histogram per interrupt.
pub(crate) fn write_irq_hists(
    w: &mut impl Write,
    kind: IrqKind,
    rows: &[IrqRow],
) -> io::Result<()> {
    for row in rows {
        match kind {
            IrqKind::Hard => writeln!(w, "hardirq = {}", row.name)?,
            IrqKind::Soft => writeln!(w, "softirq = {}", row.name)?,
        }
        write_hist(w, &row.hist)?;
        if kind == IrqKind::Soft {
            writeln!(w)?;
        }
    }
    Ok(())
}

/// The rows as one JSON document: name, total, unit and, where there is
/// one, the histogram's non-empty buckets.
pub(crate) fn write_irq_json(w: &mut impl Write, unit: &str, rows: &[IrqRow]) -> io::Result<()> {
    let value: Vec<serde_json::Value> = rows
        .iter()
        .map(|row| {
            serde_json::json!({
                "name": row.name,
                "unit": unit,
                "total": row.total,
                "buckets": buckets_json(&row.hist),
            })
        })
        .collect();
    serde_json::to_writer_pretty(&mut *w, &value).map_err(io::Error::other)?;
    writeln!(w)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::hist::{Histogram, Scale};
    use crate::render::golden::text;

    fn row(name: &str, total: u64, slots: &[u64]) -> IrqRow {
        IrqRow {
            name: name.to_string(),
            total,
            hist: Histogram::from_slots(Scale::Log2, "usecs", slots),
        }
    }

    /// The lines libbpf-tools' `hardirqs 1 1`, `hardirqs -C 1 1` and
    /// `softirqs 1 1` printed.
    #[test]
    fn tables_are_libbpf_tools_layout() {
        let rows = [row("virtio3-rx", 101, &[])];
        assert_eq!(
            text(|w| write_irq_table(w, IrqKind::Hard, "usecs", &rows)),
            "HARDIRQ                    TOTAL_usecs\nvirtio3-rx                         101\n"
        );
        assert_eq!(
            text(|w| write_irq_table(w, IrqKind::Hard, "count", &rows)),
            "HARDIRQ                    TOTAL_count\nvirtio3-rx                         101\n"
        );
        let rows = [row("timer", 269, &[])];
        assert_eq!(
            text(|w| write_irq_table(w, IrqKind::Soft, "usecs", &rows)),
            "SOFTIRQ          TOTAL_usecs\ntimer                    269\n"
        );
    }

    #[test]
    fn hists_have_their_labels_and_json_its_buckets() {
        let rows = [row("block", 0, &[0, 70])];
        let soft = text(|w| write_irq_hists(w, IrqKind::Soft, &rows));
        assert!(soft.starts_with("softirq = block\n     usecs "), "{soft}");
        assert!(soft.ends_with("|\n\n"), "{soft}");
        let hard = text(|w| write_irq_hists(w, IrqKind::Hard, &rows));
        assert!(hard.starts_with("hardirq = block\n") && hard.ends_with("|\n"));
        let json: serde_json::Value =
            serde_json::from_str(&text(|w| write_irq_json(w, "usecs", &rows))).unwrap();
        assert_eq!(json[0]["buckets"][0]["low"], 2);
        assert_eq!(json[0]["buckets"][0]["count"], 70);
    }
}
