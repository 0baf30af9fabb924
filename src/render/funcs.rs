//! funccount's table and funclatency's average line as bcc prints them:
//! `FUNC` left in 36 columns and `COUNT` right in 8 (`%-36s %8s`), one row
//! per function called; `avg = A UNIT, total: T UNIT, count: N` after a
//! blank line and followed by one. JSON: one object per interval.

use std::io::{self, Write};

use crate::analysis::funcs::FuncCount;

pub(crate) fn write_counts(w: &mut impl Write, rows: &[FuncCount]) -> io::Result<()> {
    writeln!(w, "{:<36} {:>8}", "FUNC", "COUNT")?;
    for row in rows {
        writeln!(w, "{:<36} {:>8}", row.function, row.count)?;
    }
    Ok(())
}

/// `{"functions": [{"function", "count"}...]}` on one line.
pub(crate) fn write_counts_json(w: &mut impl Write, rows: &[FuncCount]) -> io::Result<()> {
    serde_json::to_writer(&mut *w, &serde_json::json!({ "functions": rows }))
        .map_err(io::Error::other)?;
    writeln!(w)
}

/// bcc's line under funclatency's histograms: the nanoseconds timed and
/// the calls in `unit` (`div` nanoseconds each, whole units as bcc's
/// `%ld`); nothing when no call was timed.
pub(crate) fn write_average(
    w: &mut impl Write,
    (total_ns, count): (u64, u64),
    unit: &str,
    div: u64,
) -> io::Result<()> {
    if count == 0 {
        return Ok(());
    }
    let div = div.max(1);
    let total = total_ns / div;
    let avg = total_ns / div.saturating_mul(count);
    writeln!(
        w,
        "\navg = {avg} {unit}, total: {total} {unit}, count: {count}\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::golden::text;

    #[test]
    fn bccs_layout() {
        let rows = vec![FuncCount {
            function: "count_alpha".to_string(),
            count: 300,
        }];
        assert_eq!(
            text(|w| write_counts(w, &rows)),
            "FUNC                                    COUNT\ncount_alpha                               300\n"
        );
        assert_eq!(
            text(|w| write_average(w, (10_500_000, 3), "usecs", 1000)),
            "\navg = 3500 usecs, total: 10500 usecs, count: 3\n\n"
        );
        assert_eq!(text(|w| write_average(w, (0, 0), "nsecs", 1)), "");
        let json: serde_json::Value =
            serde_json::from_str(&text(|w| write_counts_json(w, &rows))).unwrap();
        assert_eq!(json["functions"][0]["count"], 300);
    }
}
