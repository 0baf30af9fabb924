//! klockstat's table as `perf lock contention -b` prints it: `contended`,
//! `total wait`, `max wait`, `avg wait` (each time with its unit, ns, us,
//! ms or s, as perf scales it), `type` and `caller`, one row per caller
//! and lock type (with `-s N` its stack's first N frames under it); or
//! one JSON document (`--json`), times in ns. Per thread (-P):
//! libbpf-tools' layout (`Tid  Comm  Avg Wait  Count  Max Wait  Total
//! Wait`, its time units), or JSON.

use std::io::{self, Write};

use serde_json::json;

use crate::analysis::klockstat::{LockRow, ThreadRow};

/// A time as perf prints it: `123 ns`, `1.23 us`, `45.67 ms`, `1.02 s`.
pub(crate) fn perf_time(ns: u64) -> String {
    let ns_f = ns as f64;
    if ns < 1_000 {
        format!("{ns} ns")
    } else if ns < 1_000_000 {
        format!("{:.2} us", ns_f / 1e3)
    } else if ns < 1_000_000_000 {
        format!("{:.2} ms", ns_f / 1e6)
    } else {
        format!("{:.2} s", ns_f / 1e9)
    }
}

/// The header and one line per row, each followed by up to `stack_lines`
/// frames of its stack (libbpf-tools' -s), innermost first, indented.
pub(crate) fn write_lock_table(
    w: &mut impl Write,
    rows: &[LockRow],
    stack_lines: usize,
) -> io::Result<()> {
    writeln!(
        w,
        " contended   total wait     max wait     avg wait         type   caller\n"
    )?;
    for r in rows {
        writeln!(
            w,
            "{:>10}   {:>10}   {:>10}   {:>10}   {:>10}   {}",
            r.count,
            perf_time(r.total_ns),
            perf_time(r.max_ns),
            perf_time(r.total_ns / r.count.max(1)),
            r.kind,
            r.caller
        )?;
        for frame in r.stack.iter().take(stack_lines) {
            writeln!(w, "{:>16}{frame}", "")?;
        }
    }
    Ok(())
}

/// One JSON document: the rows, largest total first.
pub(crate) fn write_lock_json(w: &mut impl Write, rows: &[LockRow]) -> io::Result<()> {
    write_json_rows(w, rows, |r| {
        json!({
            "caller": r.caller, "type": r.kind, "contended": r.count,
            "total_ns": r.total_ns, "max_ns": r.max_ns, "min_ns": r.min_ns,
            "stack": r.stack,
        })
    })
}

/// One JSON array, an object per row.
fn write_json_rows<T>(
    w: &mut impl Write,
    rows: &[T],
    object: impl Fn(&T) -> serde_json::Value,
) -> io::Result<()> {
    let rows: Vec<serde_json::Value> = rows.iter().map(object).collect();
    serde_json::to_writer_pretty(&mut *w, &rows).map_err(io::Error::other)?;
    writeln!(w)
}

/// A time as libbpf-tools prints it: `812 ns`, `1.2 us`, `45.7 ms`,
/// `1.0 s `, `2.5 m `, `1.0 h `.
fn libbpf_time(ns: u64) -> String {
    const UNITS: [(f64, &str); 5] = [
        (1e9 * 3600.0, "h "),
        (1e9 * 60.0, "m "),
        (1e9, "s "),
        (1e6, "ms"),
        (1e3, "us"),
    ];
    let ns_f = ns as f64;
    UNITS
        .iter()
        .find(|(base, _)| ns_f >= *base)
        .map(|(base, unit)| format!("{:.1} {unit}", ns_f / base))
        .unwrap_or_else(|| format!("{ns} ns"))
}

/// libbpf-tools' -P table: its header, one line per thread.
pub(crate) fn write_thread_table(w: &mut impl Write, rows: &[ThreadRow]) -> io::Result<()> {
    writeln!(
        w,
        "\n                Tid              Comm  Avg Wait    Count   Max Wait   Total Wait"
    )?;
    for r in rows {
        writeln!(
            w,
            "{:>37} {:>9} {:>8} {:>10} {:>12}",
            format!("{}  {:>16}", r.tid, r.comm),
            libbpf_time(r.total_ns / r.count.max(1)),
            r.count,
            libbpf_time(r.max_ns),
            libbpf_time(r.total_ns)
        )?;
    }
    Ok(())
}

/// -P's JSON document: the threads' rows.
pub(crate) fn write_thread_json(w: &mut impl Write, rows: &[ThreadRow]) -> io::Result<()> {
    write_json_rows(w, rows, |r| {
        json!({
            "tid": r.tid, "comm": r.comm, "contended": r.count,
            "total_ns": r.total_ns, "max_ns": r.max_ns, "min_ns": r.min_ns,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::golden::text;

    #[test]
    fn rows_are_perfs_layout() {
        let rows = [LockRow {
            caller: "anon_pipe_write".into(),
            kind: "mutex".into(),
            count: 4,
            total_ns: 45_670_000,
            max_ns: 20_000_000,
            min_ns: 999,
            stack: vec![],
        }];
        assert_eq!(
            text(|w| write_lock_table(w, &rows, 0)),
            " contended   total wait     max wait     avg wait         type   caller\n\n         \
             4     45.67 ms     20.00 ms     11.42 ms        mutex   anon_pipe_write\n"
        );
        assert_eq!(perf_time(999), "999 ns");
        let mut with_stack = rows[0].clone();
        with_stack.stack = vec![
            "mutex_lock".into(),
            "anon_pipe_write".into(),
            "vfs_write".into(),
        ];
        let with_stack = [with_stack];
        let printed = text(|w| write_lock_table(w, &with_stack, 2));
        assert!(
            printed.ends_with(
                "anon_pipe_write\n                mutex_lock\n                anon_pipe_write\n"
            ),
            "{printed}"
        );
    }

    #[test]
    fn threads_are_libbpf_tools_layout() {
        let rows = [ThreadRow {
            tid: 4242,
            comm: "filelock".into(),
            count: 4,
            total_ns: 45_670_000,
            max_ns: 20_000_000,
            min_ns: 999,
        }];
        assert_eq!(
            text(|w| write_thread_table(w, &rows)),
            "\n                Tid              Comm  Avg Wait    Count   Max Wait   Total Wait\n               \
             4242          filelock   11.4 ms        4    20.0 ms      45.7 ms\n"
        );
        assert_eq!(libbpf_time(999), "999 ns");
        assert_eq!(libbpf_time(90_000_000_000), "1.5 m ");
    }
}
