//! perf report's `--sort` keys and sample filters: names, column headers,
//! parsing (an unknown key is one error line listing the known ones).
//!
//! Keys of a sample (`comm`, `pid`, `tid`, `cpu`, `socket`, `parent`) are the same for
//! every frame of its stack; keys of a frame (`dso`, `sym`, `srcline`) differ
//! along it. `parent` is perf's: the first frame from the leaf whose name
//! matches perf's default parent pattern `^sys_|^do_page_fault`, or
//! `[other]`. `srcline` is `file:line` of the address (its base name, as
//! perf prints it) where DWARF says, else `sym+offset` (decimal) as perf
//! prints addresses it has no line for.

use super::sample::{Frame, ResolvedSample};

/// One of perf's `--sort` keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum SortKey {
    Comm,
    Pid,
    Tid,
    Dso,
    Sym,
    Cpu,
    Socket,
    Parent,
    Srcline,
}

/// Every key, in the order `--sort`'s error lists them.
const ALL_KEYS: [SortKey; 9] = [
    SortKey::Pid,
    SortKey::Tid,
    SortKey::Comm,
    SortKey::Dso,
    SortKey::Sym,
    SortKey::Parent,
    SortKey::Cpu,
    SortKey::Socket,
    SortKey::Srcline,
];

impl SortKey {
    /// perf's column header for this key.
    pub(crate) fn header(self) -> &'static str {
        match self {
            SortKey::Comm => "Command",
            SortKey::Pid => "Pid",
            SortKey::Tid => "Tid",
            SortKey::Dso => "Shared Object",
            SortKey::Sym => "Symbol",
            SortKey::Cpu => "CPU",
            SortKey::Socket => "Socket",
            SortKey::Parent => "Parent symbol",
            SortKey::Srcline => "Source:Line",
        }
    }

    /// The key's name as `--sort` spells it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            SortKey::Comm => "comm",
            SortKey::Pid => "pid",
            SortKey::Tid => "tid",
            SortKey::Dso => "dso",
            SortKey::Sym => "sym",
            SortKey::Cpu => "cpu",
            SortKey::Socket => "socket",
            SortKey::Parent => "parent",
            SortKey::Srcline => "srcline",
        }
    }

    /// The names of every key, comma-separated, for error messages.
    pub(crate) fn known() -> String {
        let names: Vec<&str> = ALL_KEYS.iter().map(|k| k.name()).collect();
        names.join(", ")
    }

    /// The key `--sort` spells `name`.
    pub(crate) fn parse(name: &str) -> Option<SortKey> {
        ALL_KEYS.iter().copied().find(|k| k.name() == name)
    }

    /// Whether the key is the same for every frame of a sample.
    pub(crate) fn of_sample(self) -> bool {
        matches!(
            self,
            SortKey::Comm
                | SortKey::Pid
                | SortKey::Tid
                | SortKey::Cpu
                | SortKey::Socket
                | SortKey::Parent
        )
    }

    /// Parses a comma-separated `--sort` list (`comm,dso,sym`).
    pub(crate) fn parse_list(list: &str) -> Result<Vec<SortKey>, SortKeyError> {
        let mut keys = Vec::new();
        for word in list.split(',').map(str::trim).filter(|w| !w.is_empty()) {
            let key = match word {
                "symbol" => SortKey::Sym,
                other => {
                    SortKey::parse(other).ok_or_else(|| SortKeyError::Unknown(other.to_owned()))?
                }
            };
            if !keys.contains(&key) {
                keys.push(key);
            }
        }
        if keys.is_empty() {
            return Err(SortKeyError::Empty);
        }
        Ok(keys)
    }
}

/// A `--sort` list that does not parse.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SortKeyError {
    #[error("unknown sort key '{0}' (known: {known})", known = SortKey::known())]
    Unknown(String),
    #[error("empty sort key list")]
    Empty,
}

/// perf's filters. Empty lists keep everything.
#[derive(Clone, Debug, Default)]
pub(crate) struct SampleFilter {
    /// `--comm`: keep samples of these commands.
    pub(crate) comms: Vec<String>,
    /// `--pid`: keep samples of these processes.
    pub(crate) pids: Vec<i32>,
    /// `--tid`: keep samples of these threads.
    pub(crate) tids: Vec<i32>,
    /// `--dso`: keep entries in these binaries (base name or full path).
    pub(crate) dsos: Vec<String>,
    /// `--symbols`: keep entries of these symbols (exact names).
    pub(crate) symbols: Vec<String>,
}

impl SampleFilter {
    pub(crate) fn keeps_sample(&self, sample: &ResolvedSample) -> bool {
        (self.comms.is_empty() || self.comms.iter().any(|c| **c == *sample.comm))
            && (self.pids.is_empty() || self.pids.contains(&sample.pid))
            && (self.tids.is_empty() || self.tids.contains(&sample.tid))
    }

    pub(crate) fn keeps_frame(&self, frame: &Frame) -> bool {
        let dso_ok = self.dsos.is_empty()
            || self
                .dsos
                .iter()
                .any(|d| **d == *frame.dso || d == dso_short_name(&frame.dso));
        let sym_ok = self.symbols.is_empty()
            || frame
                .sym
                .as_deref()
                .is_some_and(|s| self.symbols.iter().any(|f| f == s));
        dso_ok && sym_ok
    }
}

/// perf's `--sort dso` name of a binary: its base name (`libc.so.6`); the
/// bracketed pseudo-names (`[kernel.kallsyms]`, `[vdso]`) stay as they are.
pub(crate) fn dso_short_name(dso: &str) -> &str {
    if dso.starts_with('[') {
        return dso;
    }
    dso.rsplit('/').next().unwrap_or(dso)
}

/// perf's default parent pattern, `^sys_|^do_page_fault`.
pub(crate) fn is_parent_name(name: &str) -> bool {
    name.starts_with("sys_") || name.starts_with("do_page_fault")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_sort_list() {
        assert_eq!(
            SortKey::parse_list("comm, dso,symbol").ok(),
            Some(vec![SortKey::Comm, SortKey::Dso, SortKey::Sym])
        );
        assert_eq!(
            SortKey::parse_list("srcline,cpu,parent").ok(),
            Some(vec![SortKey::Srcline, SortKey::Cpu, SortKey::Parent])
        );
        assert_eq!(
            SortKey::parse_list("bogus").unwrap_err().to_string(),
            "unknown sort key 'bogus' (known: pid, tid, comm, dso, sym, parent, cpu, socket, srcline)"
        );
        assert!(SortKey::parse_list("").is_err());
        assert_eq!(dso_short_name("/usr/lib/libc.so.6"), "libc.so.6");
        assert_eq!(dso_short_name("[kernel.kallsyms]"), "[kernel.kallsyms]");
        assert!(is_parent_name("sys_read") && !is_parent_name("do_syscall_64"));
    }
}
