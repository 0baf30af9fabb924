//! swapin's output in the layout of bcc's swapin.py, taken from its source
//! (bcc's tool cannot run beside it on any kernel here: this host has no
//! kprobes, and the qemu guests no bcc): the banner, then per interval the
//! time (`HH:MM:SS`, unless `-T`), the header and one row per process
//! (`%-16s %-6s %s`: COMM PID COUNT) and a blank line; `Detaching...` at
//! the end. `--json` (scry's) is one array of rows per interval instead.

use std::io::{self, Write};

use serde_json::{Value, json};

use super::snoop::hms;
use crate::analysis::swapin::SwapinCount;

pub(crate) const BANNER: &str = "Counting swap ins. Ctrl-C to end.";

/// One interval's table; `time` the wall clock at its end, if shown.
pub(crate) fn table(
    w: &mut impl Write,
    time: Option<(u32, u32, u32)>,
    rows: &[SwapinCount],
) -> io::Result<()> {
    if let Some(time) = time {
        writeln!(w, "{}", hms(time))?;
    }
    writeln!(w, "{:<16} {:<6} COUNT", "COMM", "PID")?;
    for r in rows {
        writeln!(w, "{:<16} {:<6} {}", r.comm, r.pid, r.count)?;
    }
    writeln!(w)
}

/// One interval as one JSON line: an array of `{pid, comm, count}`.
pub(crate) fn json(w: &mut impl Write, rows: &[SwapinCount]) -> io::Result<()> {
    let rows: Vec<Value> = rows
        .iter()
        .map(|r| json!({ "pid": r.pid, "comm": r.comm, "count": r.count }))
        .collect();
    serde_json::to_writer(&mut *w, &rows)?;
    writeln!(w)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bcc_layout() {
        let rows = [SwapinCount {
            pid: 4106,
            comm: "firefox".into(),
            count: 615,
        }];
        let mut out = Vec::new();
        table(&mut out, Some((0, 10, 50)), &rows).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "00:10:50\nCOMM             PID    COUNT\nfirefox          4106   615\n\n"
        );
        let mut out = Vec::new();
        json(&mut out, &rows).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "[{\"comm\":\"firefox\",\"count\":615,\"pid\":4106}]\n"
        );
    }
}
