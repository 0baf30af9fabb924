//! `scry syscount`'s table: the kernel's counts (per call number, or per
//! process) turned into rows sorted as bcc sorts them (by count, or by
//! total latency with `-L`), cut to the top N. Per call number the kernel
//! keeps running totals, so an interval's rows are the differences from
//! the previous read (`Interval`); per process the kernel hands each
//! interval's rows once.

use std::collections::HashMap;

use crate::sys::bpf_syscount::SyscountRow;

/// One printed row: a call's name, or a process's `PID COMM`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub(crate) struct SyscountLine {
    /// The call number, or the process id.
    pub(crate) key: u32,
    /// The call's name; for a process, its name.
    pub(crate) name: String,
    pub(crate) count: u64,
    pub(crate) total_ns: u64,
}

/// The name of system call `nr` on this architecture (`[nr]` if unknown).
pub(crate) fn syscall_name(nr: u32) -> String {
    syscalls::Sysno::new(nr as usize).map_or_else(|| format!("[{nr}]"), |s| s.name().to_string())
}

/// The number of system call `name` on this architecture.
pub(crate) fn syscall_number(name: &str) -> Option<u32> {
    syscalls::Sysno::iter()
        .find(|s| s.name() == name)
        .and_then(|s| u32::try_from(s.id()).ok())
}

/// Every system call name of this architecture, sorted (bcc's `-l`).
pub(crate) fn syscall_names() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = syscalls::Sysno::iter().map(|s| s.name()).collect();
    names.sort_unstable();
    names
}

/// An error number given as bcc's `-e` takes it: a name (`ENOENT`) or a
/// positive number.
pub(crate) fn errno_number(text: &str) -> Option<u32> {
    if let Ok(n) = text.parse::<u32>() {
        return (n > 0 && n < 4096).then_some(n);
    }
    (1..4096).find(|&n| syscalls::Errno::new(n as i32).name() == Some(text))
}

/// Running totals per call number, to print each interval's share.
#[derive(Debug, Default)]
pub(crate) struct Interval {
    seen: HashMap<u32, (u64, u64)>,
}

impl Interval {
    /// The rows since the last call (all of them the first time).
    pub(crate) fn since_last(&mut self, totals: &[SyscountRow]) -> Vec<SyscountRow> {
        let mut rows = Vec::new();
        for row in totals {
            let (count, total) = self.seen.get(&row.key).copied().unwrap_or((0, 0));
            if row.count > count {
                rows.push(SyscountRow {
                    count: row.count - count,
                    total_ns: row.total_ns.saturating_sub(total),
                    ..row.clone()
                });
            }
            self.seen.insert(row.key, (row.count, row.total_ns));
        }
        rows
    }
}

/// The rows to print: named, sorted (by count, or by latency), at most
/// `top`. Ties keep the lower key first.
pub(crate) fn top_rows(
    rows: &[SyscountRow],
    by_process: bool,
    by_latency: bool,
    top: usize,
) -> Vec<SyscountLine> {
    let mut lines: Vec<SyscountLine> = rows
        .iter()
        .map(|r| SyscountLine {
            key: r.key,
            name: if by_process {
                r.comm.clone()
            } else {
                syscall_name(r.key)
            },
            count: r.count,
            total_ns: r.total_ns,
        })
        .collect();
    lines.sort_by(|a, b| {
        let (x, y) = if by_latency {
            (a.total_ns, b.total_ns)
        } else {
            (a.count, b.count)
        };
        y.cmp(&x).then(a.key.cmp(&b.key))
    });
    lines.truncate(top);
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(key: u32, count: u64, total_ns: u64) -> SyscountRow {
        SyscountRow {
            key,
            count,
            total_ns,
            comm: String::new(),
        }
    }

    #[test]
    fn intervals_are_differences_and_top_sorts() {
        let mut interval = Interval::default();
        let first = interval.since_last(&[row(110, 5, 50), row(0, 2, 500)]);
        assert_eq!(first.len(), 2);
        let second = interval.since_last(&[row(110, 8, 80), row(0, 2, 500)]);
        assert_eq!(second, vec![row(110, 3, 30)]);
        let lines = top_rows(&first, false, false, 1);
        assert_eq!(lines[0].name, "getppid");
        assert_eq!(lines[0].count, 5);
        let by_latency = top_rows(&first, false, true, 10);
        assert_eq!(by_latency[0].name, "read");
        assert_eq!(syscall_name(5000), "[5000]");
    }

    #[test]
    fn names_and_errors_by_name_or_number() {
        assert_eq!(syscall_number("getppid"), Some(110));
        assert_eq!(syscall_number("no_such_call"), None);
        assert!(syscall_names().contains(&"openat"));
        assert_eq!(errno_number("ENOENT"), Some(2));
        assert_eq!(errno_number("13"), Some(13));
        assert_eq!(errno_number("0"), None);
        assert_eq!(errno_number("ENOPE"), None);
    }
}
