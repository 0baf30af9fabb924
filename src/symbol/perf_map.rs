//! JIT symbols from `/tmp/perf-PID.map` files.
//!
//! The format is perf's: one `START SIZE NAME` line per symbol, START and
//! SIZE in hex (with or without `0x`), NAME the rest of the line (it may hold
//! spaces). Parsed here rather than through blazesym because blazesym only
//! reads the map of a live process, and recordings outlive their processes.
//! Lines that do not parse are skipped and counted: a JIT writes this file
//! while it runs and a torn last line is normal.
//!
//! Invariant: `syms` is sorted by start; on overlap the later line wins for
//! the addresses it covers (a JIT reusing memory appends the new symbol).

use std::io::BufRead;

#[derive(Debug, Clone, PartialEq, Eq)]
struct JitSym {
    start: u64,
    end: u64,
    name: String,
}

/// The symbols of one perf-PID.map file.
#[derive(Debug, Default)]
pub(crate) struct PerfMap {
    syms: Vec<JitSym>,
    /// Lines that were not `START SIZE NAME`.
    pub(crate) malformed_lines: u64,
}

fn hex(s: &str) -> Option<u64> {
    let s = s
        .strip_prefix("0x")
        .or_else(|| s.strip_prefix("0X"))
        .unwrap_or(s);
    u64::from_str_radix(s, 16).ok()
}

impl PerfMap {
    pub(crate) fn parse(text: impl BufRead) -> Self {
        let mut map = PerfMap::default();
        let mut order = 0usize;
        let mut syms: Vec<(usize, JitSym)> = Vec::new();
        for line in text.split(b'\n') {
            let Ok(line) = line else {
                map.malformed_lines += 1;
                break;
            };
            let line = String::from_utf8_lossy(&line);
            let line = line.trim_end_matches('\r');
            if line.trim().is_empty() {
                continue;
            }
            let mut parts = line.splitn(3, ' ');
            let parsed = match (parts.next(), parts.next(), parts.next()) {
                (Some(start), Some(size), Some(name)) if !name.trim().is_empty() => {
                    match (hex(start), hex(size)) {
                        (Some(start), Some(size)) if size > 0 => start
                            .checked_add(size)
                            .map(|end| (start, end, name.trim().to_string())),
                        _ => None,
                    }
                }
                _ => None,
            };
            match parsed {
                Some((start, end, name)) => {
                    syms.push((order, JitSym { start, end, name }));
                    order += 1;
                }
                None => map.malformed_lines += 1,
            }
        }
        // Later lines win: sort by start, then keep the newest at equal start.
        syms.sort_by(|a, b| a.1.start.cmp(&b.1.start).then(b.0.cmp(&a.0)));
        syms.dedup_by_key(|s| s.1.start);
        map.syms = syms.into_iter().map(|(_, s)| s).collect();
        map
    }

    /// Adds a jitdump's code loads (`symbol::jitdump`); at a start both
    /// name, the jitdump's wins.
    pub(crate) fn extend(&mut self, codes: impl IntoIterator<Item = super::jitdump::JitCode>) {
        for c in codes {
            if let Some(end) = c.start.checked_add(c.size) {
                self.syms.push(JitSym {
                    start: c.start,
                    end,
                    name: c.name,
                });
            }
        }
        // Stable: at equal starts the later one stays after; keep it.
        self.syms.sort_by_key(|s| s.start);
        self.syms.reverse();
        self.syms.dedup_by_key(|s| s.start);
        self.syms.reverse();
    }

    /// Read `/tmp/perf-PID.map`; a missing file is an empty map.
    pub(crate) fn for_pid(pid: i32) -> Option<Self> {
        let file = std::fs::File::open(Self::path(pid)).ok()?;
        Some(Self::parse(std::io::BufReader::new(file)))
    }

    pub(crate) fn path(pid: i32) -> String {
        format!("/tmp/perf-{pid}.map")
    }

    /// The JIT symbol covering the absolute address `addr`, and the
    /// address's offset into it (perf's `symoff`).
    pub(crate) fn find(&self, addr: u64) -> Option<(&str, u64)> {
        let idx = self.syms.partition_point(|s| s.start <= addr);
        let sym = self.syms.get(idx.checked_sub(1)?)?;
        (addr < sym.end).then_some((sym.name.as_str(), addr - sym.start))
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.syms.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_lines_and_counts_the_bad_ones() {
        let text = "7f0000001000 40 jit_add\n\
                    0x7f0000002000 0x10 LazyCompile:*foo bar.js:1\n\
                    not a line\n\
                    7f0000003000 zz broken\n\
                    7f0000004000 10\n\
                    7f000000";
        let m = PerfMap::parse(text.as_bytes());
        assert_eq!(m.len(), 2);
        assert_eq!(m.malformed_lines, 4);
        assert_eq!(m.find(0x7f000000103f), Some(("jit_add", 0x3f)));
        assert_eq!(m.find(0x7f0000001040), None);
        assert_eq!(
            m.find(0x7f0000002008),
            Some(("LazyCompile:*foo bar.js:1", 8))
        );
    }
}
