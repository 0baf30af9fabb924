//! `scry syscount`'s table in libbpf-tools' layout: `[HH:MM:SS]`, then
//! `SYSCALL  COUNT` (or `PID    COMM`, and `TIME (us)` with -L), the rows
//! and a blank line; and the same rows as JSON lines (one object per
//! interval).

use std::io::{self, Write};

use crate::analysis::syscount::SyscountLine;

/// How the table is laid out.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct SyscountLayout {
    pub(crate) by_process: bool,
    pub(crate) latency: bool,
    pub(crate) milliseconds: bool,
}

pub(crate) fn write_table(
    w: &mut impl Write,
    (h, m, s): (u32, u32, u32),
    lines: &[SyscountLine],
    layout: SyscountLayout,
) -> io::Result<()> {
    writeln!(w, "[{h:02}:{m:02}:{s:02}]")?;
    let first = if layout.by_process {
        "PID    COMM"
    } else {
        "SYSCALL"
    };
    let unit = if layout.milliseconds {
        "TIME (ms)"
    } else {
        "TIME (us)"
    };
    if layout.latency {
        writeln!(w, "{first:<22} {:>8} {unit:>16}", "COUNT")?;
    } else {
        writeln!(w, "{first:<22} {:>8}", "COUNT")?;
    }
    let div = if layout.milliseconds { 1e6 } else { 1e3 };
    for line in lines {
        let label = if layout.by_process {
            format!("{:<6} {:<15}", line.key, line.name)
        } else {
            line.name.clone()
        };
        if layout.latency {
            writeln!(
                w,
                "{label:<22} {:>8} {:>16.3}",
                line.count,
                line.total_ns as f64 / div
            )?;
        } else {
            writeln!(w, "{label:<22} {:>8}", line.count)?;
        }
    }
    writeln!(w)
}

/// One JSON object per interval: `{"rows": [...]}` on one line.
pub(crate) fn write_json(w: &mut impl Write, lines: &[SyscountLine]) -> io::Result<()> {
    serde_json::to_writer(&mut *w, &serde_json::json!({ "rows": lines }))
        .map_err(io::Error::other)?;
    writeln!(w)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn libbpf_tools_layout() {
        let lines = vec![SyscountLine {
            key: 39,
            name: "getppid".to_string(),
            count: 1000,
            total_ns: 1_234_567,
        }];
        let mut out = Vec::new();
        write_table(&mut out, (9, 5, 7), &lines, SyscountLayout::default()).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "[09:05:07]\nSYSCALL                   COUNT\ngetppid                    1000\n\n"
        );
        let mut out = Vec::new();
        let layout = SyscountLayout {
            by_process: true,
            latency: true,
            milliseconds: false,
        };
        write_table(&mut out, (0, 0, 0), &lines, layout).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "[00:00:00]\nPID    COMM               COUNT        TIME (us)\n39     getppid             1000         1234.567\n\n"
        );
    }
}
