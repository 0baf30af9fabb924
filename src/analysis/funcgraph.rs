//! The kernel's function tracer text (tracefs `trace`) summed per task and
//! function: count, total, max and min, the `func:` rows of trace-cmd
//! profile's report. `function_graph` lines give durations (with the
//! options `sys::ftrace` sets: abstime, proc, tail):
//!
//! ```text
//!    13.475733 |   1)   cat-98    |   0.592 us    |  __x64_sys_getppid();
//!    13.476101 |   1)   cat-98    | ! 245.123 us  |  } /* __x64_sys_read */
//! ```
//!
//! and `function` lines count calls (`cat-98 [001] ..... 13.4757: FUNC <-PARENT`,
//! no duration). Lines of neither shape (headers, context-switch and irq
//! markers, a function's opening `{`) are skipped.
//!
//! Invariant: parsing never panics; what a line lacks it is skipped for.

use std::collections::BTreeMap;

use super::pairs::PairStat;
use crate::data::function_rows::FunctionRow;

/// (tid, function) → its statistic.
pub(crate) type FunctionStats = BTreeMap<(i32, String), PairStat>;

/// The tid after the last '-' of `comm-tid`.
fn tid_of(task: &str) -> Option<i32> {
    task.trim().rsplit_once('-')?.1.parse().ok()
}

/// Seconds with a fraction (`13.475733`) in ns.
fn seconds_ns(text: &str) -> Option<u64> {
    let (s, frac) = text.trim().split_once('.')?;
    let digits = frac.get(..frac.len().min(9))?;
    let frac_ns: u64 = format!("{digits:0<9}").parse().ok()?;
    Some(s.parse::<u64>().ok()?.checked_mul(1_000_000_000)? + frac_ns)
}

/// A duration column (`! 245.123 us`, `0.592 us`) in ns.
fn duration_ns(text: &str) -> Option<u64> {
    let t = text
        .trim()
        .trim_start_matches(['+', '!', '#', '*', '@', '$', ' ']);
    let us = t.strip_suffix("us")?.trim();
    let (whole, frac) = us.split_once('.').unwrap_or((us, "0"));
    let frac3 = format!("{:0<3}", frac.get(..frac.len().min(3))?);
    whole
        .parse::<u64>()
        .ok()?
        .checked_mul(1000)?
        .checked_add(frac3.parse().ok()?)
}

/// One function_graph line: (tid, function, duration, time).
fn graph_line(line: &str) -> Option<(i32, String, u64, u64)> {
    let mut cols = line.split('|');
    let time = seconds_ns(cols.next()?)?;
    let task = cols.next()?.split_once(')')?.1;
    let duration = duration_ns(cols.next()?)?;
    let call = cols.next()?.trim();
    let func = if let Some(f) = call.strip_suffix("();") {
        f
    } else {
        call.strip_prefix("} /*")?.strip_suffix("*/")?.trim()
    };
    Some((tid_of(task)?, func.to_string(), duration, time))
}

/// One function tracer line: (tid, function, time).
fn function_line(line: &str) -> Option<(i32, String, u64)> {
    let (head, call) = line.split_once(": ")?;
    let mut words = head.split_whitespace();
    let task = words.next()?;
    let time = seconds_ns(head.split_whitespace().last()?)?;
    let func = call.split_whitespace().next()?;
    Some((tid_of(task)?, func.to_string(), time))
}

/// Sums the `trace` text of the `function_graph` or `function` tracer.
pub(crate) fn sum_trace(text: &str) -> FunctionStats {
    let mut stats = FunctionStats::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let (tid, func, duration, time) = match graph_line(line) {
            Some(g) => g,
            None => match function_line(line) {
                Some((tid, func, time)) if !line.contains('|') => (tid, func, 0, time),
                _ => continue,
            },
        };
        stats
            .entry((tid, func))
            .or_default()
            .add(duration, time, None);
    }
    stats
}

/// The sums of [`sum_trace`] as the rows `scry record --profile` keeps in
/// its file (`data::function_rows`), in (tid, function) order.
pub(crate) fn function_rows(text: &str) -> Vec<FunctionRow> {
    sum_trace(text)
        .into_iter()
        .map(|((tid, function), s)| FunctionRow {
            tid,
            function,
            sums: [s.count, s.total, s.max, s.max_ts, s.min, s.min_ts],
        })
        .collect()
}

/// The tracer's lines of a `trace` text (its `#` header left out) and the
/// entries the kernel's buffer overwrote before they were read (the
/// header's `entries-in-buffer/entries-written: IN/WRITTEN`).
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct TraceLines<'a> {
    pub(crate) lines: Vec<&'a str>,
    pub(crate) overwritten: u64,
}

/// Splits a `trace` text into [`TraceLines`].
pub(crate) fn trace_lines(text: &str) -> TraceLines<'_> {
    let mut out = TraceLines::default();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix('#') {
            if let Some(counts) = rest
                .trim()
                .strip_prefix("entries-in-buffer/entries-written:")
            {
                let mut nums = counts.split_whitespace().next().unwrap_or("").split('/');
                let kept = nums.next().and_then(|n| n.parse::<u64>().ok());
                let written = nums.next().and_then(|n| n.parse::<u64>().ok());
                if let (Some(kept), Some(written)) = (kept, written) {
                    out.overwritten = written.saturating_sub(kept);
                }
            }
        } else if !line.trim().is_empty() {
            out.lines.push(line);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trace_text_lines_and_overwritten_entries() {
        let text = "# tracer: function\n\
            #\n\
            # entries-in-buffer/entries-written: 2/5   #P:2\n\
            #\n\
            \x20           cat-98    [001] .....    13.4757: vfs_read <-ksys_read\n\
            \n\
            \x20           cat-98    [001] .....    13.4758: vfs_write <-ksys_write\n";
        let t = trace_lines(text);
        assert_eq!(t.overwritten, 3);
        assert_eq!(t.lines.len(), 2);
        assert!(t.lines[1].ends_with("vfs_write <-ksys_write"));
        assert_eq!(
            trace_lines("# entries-in-buffer/entries-written: x/\n").overwritten,
            0
        );
    }

    #[test]
    fn graph_and_function_lines() {
        let text = "# tracer: function_graph\n\
            \x20 13.475733 |   1)   cat-98    |   0.592 us    |  __x64_sys_getppid();\n\
            \x20 13.475800 |   1)   cat-98    |   1.408 us    |  __x64_sys_getppid();\n\
            \x20 13.475900 |   1)   cat-98    |               |  __x64_sys_read() {\n\
            \x20 13.476101 |   0)   cat-98    | ! 245.123 us  |  } /* __x64_sys_read */\n\
            \x20------------------------------------------\n\
            \x20            cat-98    [001] .....    13.4757: vfs_read <-ksys_read\n";
        let s = sum_trace(text);
        let getppid = &s[&(98, "__x64_sys_getppid".to_string())];
        assert_eq!(
            (getppid.count, getppid.total, getppid.max, getppid.min),
            (2, 2000, 1408, 592)
        );
        assert_eq!(s[&(98, "__x64_sys_read".to_string())].total, 245_123);
        assert_eq!(s[&(98, "vfs_read".to_string())].count, 1);
        assert_eq!(s.len(), 3);
        assert!(sum_trace("garbage | | |\n|||||\n: :\n").is_empty());
    }
}
