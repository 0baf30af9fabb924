//! Maps printed as bpftrace 0.17 prints them: `@name[k1, k2]: value`,
//! sorted by value (counts, sums, integers, min, max), histograms by their
//! total, with the `[lo, hi)  count |@@@@|` rows; `stats` as `count N,
//! average A, total T`. Also the blank lines bpftrace puts after each map
//! (one, or two after `avg`/`stats`), which scripts that read its output
//! rely on.
//!
//! Per-CPU values arrive one slot per CPU and are combined here: summed,
//! or the least/greatest of the slots that were set (min/max).

use super::types::{MapInfo, MapKind, Ty};

/// One element: its key, and its value (per CPU for aggregations).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    pub(crate) key: Vec<u8>,
    pub(crate) values: Vec<Vec<u8>>,
}

/// How a key or value of a type that needs the runner (probe names,
/// stacks) reads.
pub(crate) trait Resolve {
    fn text(&self, ty: Ty, bytes: &[u8]) -> String;
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    bytes
        .get(at..at + 8)
        .and_then(|b| b.try_into().ok())
        .map_or(0, u64::from_le_bytes)
}

/// A NUL-terminated string in `bytes`.
pub(crate) fn c_str(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

pub(crate) fn value_text(ty: Ty, bytes: &[u8], resolve: &dyn Resolve) -> String {
    match ty {
        Ty::Int | Ty::Ptr(_) => (u64_at(bytes, 0) as i64).to_string(),
        Ty::Uint => u64_at(bytes, 0).to_string(),
        Ty::Str(_) => c_str(bytes),
        _ => resolve.text(ty, bytes),
    }
}

/// An integer as an `i64` that sorts as its value does (an unsigned
/// one with its top bit flipped).
fn int_order(ty: Ty, bytes: &[u8]) -> i64 {
    let v = u64_at(bytes, 0);
    if ty == Ty::Uint {
        (v ^ (1 << 63)) as i64
    } else {
        v as i64
    }
}

/// A key as sortable parts: integers by value, the rest by bytes (the
/// order of equal values, which bpftrace leaves to its hash map).
fn key_order(info: &MapInfo, key: &[u8]) -> Vec<(i64, Vec<u8>)> {
    let mut at = 0;
    let mut parts = Vec::new();
    for ty in &info.keys {
        let bytes = key.get(at..at + ty.size()).unwrap_or(&[]);
        parts.push(match ty {
            // Integer keys, signed or not, print and sort as int64 (as
            // bpftrace's do).
            Ty::Int | Ty::Uint => (u64_at(bytes, 0) as i64, Vec::new()),
            _ => (0, bytes.to_vec()),
        });
        at += ty.size();
    }
    parts.push((0, key.get(at..).unwrap_or(&[]).to_vec()));
    parts
}

/// `@name` or `@name[k1, k2]` for a key.
fn key_text(info: &MapInfo, key: &[u8], resolve: &dyn Resolve) -> String {
    if info.keys.is_empty() {
        return info.name.clone();
    }
    let mut at = 0;
    let mut parts = Vec::new();
    for ty in &info.keys {
        let bytes = key.get(at..at + ty.size()).unwrap_or(&[]);
        let ty = if *ty == Ty::Uint { Ty::Int } else { *ty };
        parts.push(value_text(ty, bytes, resolve));
        at += ty.size();
    }
    // Stacks print on lines of their own, as bpftrace's do.
    format!("{}[{}]", info.name, parts.join(", "))
}

/// The combined value of an aggregation's per-CPU slots: (first, second)
/// word (count/total for avg and stats, the value for the others).
fn combine(kind: MapKind, values: &[Vec<u8>]) -> (i64, i64) {
    match kind {
        MapKind::Min | MapKind::Max => {
            let set = values
                .iter()
                .filter(|v| u64_at(v, 8) != 0)
                .map(|v| u64_at(v, 0) as i64);
            let best = if kind == MapKind::Min {
                set.min()
            } else {
                set.max()
            };
            (best.unwrap_or(0), 0)
        }
        _ => values.iter().fold((0i64, 0i64), |(a, b), v| {
            (
                a.wrapping_add(u64_at(v, 0) as i64),
                b.wrapping_add(u64_at(v, 8) as i64),
            )
        }),
    }
}

/// Drops all but the last `top` rows (none when `top` is 0).
fn keep_top<T>(rows: &mut Vec<T>, top: usize) {
    if top > 0 && rows.len() > top {
        rows.drain(..rows.len() - top);
    }
}

/// The text of one map at exit or for `print(@m)` (`print(@m, top)`: its
/// `top` greatest elements).
pub(crate) fn print_map(
    info: &MapInfo,
    entries: &[Entry],
    top: usize,
    resolve: &dyn Resolve,
) -> String {
    let mut entries: Vec<&Entry> = entries.iter().collect();
    entries.sort_by_key(|e| key_order(info, &e.key));
    match info.kind {
        MapKind::Hist | MapKind::Lhist { .. } => print_hists(info, &entries, top, resolve),
        MapKind::Avg | MapKind::Stats => {
            let mut rows: Vec<(i64, String)> = entries
                .iter()
                .map(|e| {
                    let (count, total) = combine(info.kind, &e.values);
                    let avg = if count != 0 { total / count } else { 0 };
                    let value = if info.kind == MapKind::Stats {
                        format!("count {count}, average {avg}, total {total}")
                    } else {
                        avg.to_string()
                    };
                    (
                        total,
                        format!("{}: {value}", key_text(info, &e.key, resolve)),
                    )
                })
                .collect();
            rows.sort_by_key(|r| r.0);
            keep_top(&mut rows, top);
            let lines: Vec<String> = rows.into_iter().map(|r| r.1).collect();
            format!("{}\n\n", lines.join("\n"))
        }
        kind => {
            let mut rows: Vec<(i64, String)> = entries
                .iter()
                .map(|e| {
                    let key = key_text(info, &e.key, resolve);
                    let (sort, value) = match kind {
                        MapKind::Value(ty) => {
                            let bytes = e.values.first().map_or(&[][..], |v| v.as_slice());
                            let sort = if matches!(ty, Ty::Int | Ty::Uint) {
                                int_order(ty, bytes)
                            } else {
                                0
                            };
                            (sort, value_text(ty, bytes, resolve))
                        }
                        _ => {
                            let (v, _) = combine(kind, &e.values);
                            let text = if kind == MapKind::Count {
                                (v as u64).to_string()
                            } else {
                                v.to_string()
                            };
                            (v, text)
                        }
                    };
                    (sort, format!("{key}: {value}"))
                })
                .collect();
            // A keyless count with no element (never counted, or
            // cleared) is 0, as bpftrace prints it; other kinds print
            // nothing.
            if rows.is_empty() && kind == MapKind::Count && info.keys.is_empty() {
                rows.push((0, format!("{}: 0", info.name)));
            }
            rows.sort_by_key(|r| r.0);
            keep_top(&mut rows, top);
            let lines: Vec<String> = rows.into_iter().map(|r| r.1).collect();
            format!("{}\n", lines.join("\n"))
        }
    }
}

fn print_hists(info: &MapInfo, entries: &[&Entry], top: usize, resolve: &dyn Resolve) -> String {
    let user = info.user_key_size();
    let slots = match info.kind {
        MapKind::Lhist { min, max, step } => MapKind::lhist_buckets(min, max, step) as usize + 2,
        _ => 66,
    };
    // Group the bucket elements by their user key.
    let mut groups: Vec<(Vec<u8>, Vec<u64>)> = Vec::new();
    for e in entries {
        let prefix = e.key.get(..user).unwrap_or(&e.key).to_vec();
        let bucket = u64_at(&e.key, user) as usize;
        let count = combine(MapKind::Count, &e.values).0 as u64;
        if groups.last().map(|g| &g.0) != Some(&prefix) {
            groups.push((prefix, vec![0; slots]));
        }
        if let Some(group) = groups.last_mut()
            && bucket < slots
        {
            group.1[bucket] += count;
        }
    }
    groups.sort_by_key(|g| g.1.iter().sum::<u64>());
    keep_top(&mut groups, top);
    let parts: Vec<String> = groups
        .iter()
        .map(|(key, counts)| {
            let rows = match info.kind {
                MapKind::Lhist { min, max, step } => lhist_rows(counts, min, max, step),
                _ => hist_rows(counts),
            };
            format!("{}: \n{rows}", key_text(info, key, resolve))
        })
        .collect();
    format!("{}\n", parts.join("\n"))
}

fn row(header: &str, count: u64, max: u64) -> String {
    let width = (count as f32 / max as f32 * 52.0) as usize;
    format!("{header:<16}{count:>8} |{:<52}|\n", "@".repeat(width))
}

fn hist_label(power: u32) -> String {
    let (power, suffix) = match power {
        40.. => (power - 40, "T"),
        30.. => (power - 30, "G"),
        20.. => (power - 20, "M"),
        10.. => (power - 10, "K"),
        _ => (power, ""),
    };
    format!("{}{suffix}", 1u64 << power)
}

/// The rows of the buckets from the first used to the last, each headed
/// by `header(i)`.
fn rows(counts: &[u64], header: impl Fn(usize) -> String) -> String {
    let (Some(first), Some(last)) = (
        counts.iter().position(|&c| c > 0),
        counts.iter().rposition(|&c| c > 0),
    ) else {
        return String::new();
    };
    let max = counts.iter().copied().max().unwrap_or(1);
    (first..=last)
        .map(|i| row(&header(i), counts[i], max))
        .collect()
}

/// The rows of a log2 histogram, from the first bucket used to the last.
pub(crate) fn hist_rows(counts: &[u64]) -> String {
    rows(counts, |i| match i {
        0 => "(..., 0)".to_string(),
        1 => "[0]".to_string(),
        2 => "[1]".to_string(),
        _ => format!(
            "[{}, {})",
            hist_label(i as u32 - 2),
            hist_label(i as u32 - 1)
        ),
    })
}

fn lhist_label(n: i64) -> String {
    if n == 0 {
        "0".into()
    } else if n % 1_048_576 == 0 {
        format!("{}M", n / 1_048_576)
    } else if n % 1024 == 0 {
        format!("{}K", n / 1024)
    } else {
        n.to_string()
    }
}

/// The rows of a linear histogram, from the first bucket used to the last.
pub(crate) fn lhist_rows(counts: &[u64], min: i64, max: i64, step: i64) -> String {
    let buckets = MapKind::lhist_buckets(min, max, step) as usize;
    rows(counts, |i| {
        if i == 0 {
            format!("(..., {})", lhist_label(min))
        } else if i == buckets + 1 {
            format!("[{}, ...)", lhist_label(max))
        } else {
            let lo = (i as i64 - 1) * step + min;
            format!("[{}, {})", lhist_label(lo), lhist_label(lo + step))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    struct NoNames;
    impl Resolve for NoNames {
        fn text(&self, _: Ty, _: &[u8]) -> String {
            "?".into()
        }
    }

    fn le(v: u64) -> Vec<u8> {
        v.to_le_bytes().to_vec()
    }

    fn pair(a: u64, b: u64) -> Vec<u8> {
        [le(a), le(b)].concat()
    }

    #[test]
    fn counts_sorted_by_value_summed_over_cpus() {
        let info = MapInfo {
            name: "@a".into(),
            kind: MapKind::Count,
            keys: vec![Ty::Int],
        };
        let entries = vec![
            Entry {
                key: le(5),
                values: vec![le(1), le(1)],
            },
            Entry {
                key: le(1),
                values: vec![le(1), le(0)],
            },
        ];
        assert_eq!(
            print_map(&info, &entries, 0, &NoNames),
            "@a[1]: 1\n@a[5]: 2\n"
        );
        assert_eq!(print_map(&info, &entries, 1, &NoNames), "@a[5]: 2\n");
        assert_eq!(print_map(&info, &[], 0, &NoNames), "\n");
    }

    #[test]
    fn hist_as_bpftrace_prints_it() {
        let info = MapInfo {
            name: "@h".into(),
            kind: MapKind::Hist,
            keys: vec![],
        };
        // hist(3) and hist(100): buckets 3 ([2, 4)) and 8 ([64, 128)).
        let entries = vec![
            Entry {
                key: pair(0, 3),
                values: vec![le(1)],
            },
            Entry {
                key: pair(0, 8),
                values: vec![le(1)],
            },
        ];
        let bar = "@".repeat(52);
        let empty = " ".repeat(52);
        let expected = format!(
            "@h: \n[2, 4)                 1 |{bar}|\n[4, 8)                 0 |{empty}|\n\
             [8, 16)                0 |{empty}|\n[16, 32)               0 |{empty}|\n\
             [32, 64)               0 |{empty}|\n[64, 128)              1 |{bar}|\n\n"
        );
        assert_eq!(print_map(&info, &entries, 0, &NoNames), expected);
        assert_eq!(hist_label(10), "1K");
        assert_eq!(hist_label(21), "2M");
    }

    #[test]
    fn lhist_edges_and_stats() {
        let rows = lhist_rows(&[1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1], 0, 100, 10);
        assert!(rows.starts_with("(..., 0)               1 |"), "{rows}");
        assert!(rows.contains("\n[90, 100)              0 |"), "{rows}");
        assert!(rows.ends_with(
            "[100, ...)             1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n"
        ));
        let info = MapInfo {
            name: "@s".into(),
            kind: MapKind::Stats,
            keys: vec![],
        };
        let e = Entry {
            key: le(0),
            values: vec![pair(1, 10), pair(0, 0)],
        };
        assert_eq!(
            print_map(&info, &[e], 0, &NoNames),
            "@s: count 1, average 10, total 10\n\n"
        );
        let info = MapInfo {
            name: "@m".into(),
            kind: MapKind::Min,
            keys: vec![Ty::Str(16)],
        };
        let mut key = b"bash".to_vec();
        key.resize(16, 0);
        let e = Entry {
            key,
            values: vec![pair(0, 0), pair(7, 1), pair(3, 1)],
        };
        assert_eq!(print_map(&info, &[e], 0, &NoNames), "@m[bash]: 3\n");
    }
}
