//! Event names as perf spells them, parsed into what the kernel needs:
//! `cpu-clock`, `page-faults:u`, `cycles:pp`, `L1-dcache-load-misses`,
//! `r1a8`, `sched:sched_switch`, `'syscalls:sys_enter_*'`, groups
//! (`'{task-clock,page-faults}:u'`, `event::group`), PMU terms
//! (`cpu/event=0x3c,umask=0/u`, `event::pmu`), perf's tool events
//! (`duration_time`, `user_time`, `system_time`: no counter, scry measures
//! them), and probes made for one run: `uprobe:BINARY:FUNCTION`,
//! `uretprobe:BINARY:FUNCTION`, `kprobe:FUNCTION[+OFFSET]`,
//! `kretprobe:FUNCTION` (bpftrace's spelling; perf has none).
//!
//! Parsing is pure; tracepoint names are resolved to ids (and globs
//! expanded) against tracefs, and PMU names against sysfs, by `resolve`,
//! through `sys::tracefs` and `sys::pmu`. Uprobes resolve through `resolve_with`: where a
//! function is in a binary is the symbol stage's knowledge, handed in as an
//! [`UprobeLocator`]; the event becomes a `uprobe` PMU counter
//! (`ResolvedEvent::uprobe`), which the kernel removes with its last file
//! descriptor, so it never outlives the run, even after SIGKILL.

use std::path::PathBuf;

use crate::sys::perf_event::{PERF_TYPE_HARDWARE, PERF_TYPE_SOFTWARE, perf_event_attr};

pub(crate) use super::group::{GroupRole, group_leader, group_size};
pub(crate) use super::resolve::{resolve, resolve_with};

/// What kind of counter an event is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum EventKind {
    Hardware(u64),
    Software(u64),
    HwCache(u64),
    Raw(u64),
    /// Not yet resolved against tracefs; `name` may be a glob.
    Tracepoint {
        subsystem: String,
        name: String,
    },
    /// `uprobe:BINARY:FUNCTION` (`uretprobe:` for returns): a probe that
    /// lives as long as its counters. `binary` is a path or a library name
    /// (`libc`).
    Uprobe {
        binary: String,
        function: String,
        retprobe: bool,
    },
    /// `kprobe:FUNCTION[+OFFSET]` (`kretprobe:` for returns): a kernel
    /// probe of the kprobe PMU, gone with its counters.
    Kprobe {
        function: String,
        offset: u64,
        retprobe: bool,
    },
    /// `PMU/terms/`: resolved against sysfs (`event::pmu`).
    Pmu {
        pmu: String,
        terms: String,
    },
    /// One of perf's tool events: no counter, scry measures it.
    Tool(ToolEvent),
}

/// perf's tool events: numbers perf stat measures itself, in ns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ToolEvent {
    /// Wall-clock time of the run.
    Duration,
    /// User CPU time of the command (its rusage).
    User,
    /// System CPU time of the command.
    System,
}

const TOOLS: &[(&str, ToolEvent)] = &[
    ("duration_time", ToolEvent::Duration),
    ("user_time", ToolEvent::User),
    ("system_time", ToolEvent::System),
];

/// How counts of an event are printed when not as perf prints its
/// symbolic events (msec for clocks, else a plain number): a PMU event's
/// `.unit`/`.scale` from sysfs, `ns` for tool events.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct EventUnit {
    pub(crate) unit: String,
    pub(crate) scale: f64,
}

/// `:u`, `:k`, `:p`... suffixes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Modifiers {
    pub(crate) exclude_user: bool,
    pub(crate) exclude_kernel: bool,
    pub(crate) precise_ip: u8,
}

/// One event the user asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct EventSpec {
    /// The name as perf would print it (`cpu-clock`, `sched:sched_switch`,
    /// `cycles:u`).
    pub(crate) name: String,
    pub(crate) kind: EventKind,
    pub(crate) modifiers: Modifiers,
    /// Place in a `{...}` group, if any.
    pub(crate) group: Option<GroupRole>,
}

/// An event resolved to `perf_event_attr.type` and `.config`.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct ResolvedEvent {
    pub(crate) name: String,
    pub(crate) type_: u32,
    pub(crate) config: u64,
    /// `config1`/`config2` of PMU events (`cpu/.../`); 0 otherwise.
    pub(crate) config1: u64,
    pub(crate) config2: u64,
    pub(crate) modifiers: Modifiers,
    /// `(subsystem, name)` for tracepoints.
    pub(crate) tracepoint: Option<(String, String)>,
    /// Where a `uprobe` PMU counter probes (`type_` is the PMU's type and
    /// `config` its retprobe bit, or 0).
    pub(crate) uprobe: Option<UprobeSite>,
    /// Place in a `{...}` group: members follow their leader.
    pub(crate) group: Option<GroupRole>,
    /// A tool event: nothing is opened (`type_`/`config` say `dummy`).
    pub(crate) tool: Option<ToolEvent>,
    /// How counts print, when not perf's default for the type.
    pub(crate) unit: Option<EventUnit>,
    /// `period=` of a PMU event: its sampling period in `record`.
    pub(crate) period: Option<u64>,
}

/// A probe point of the `uprobe` PMU: `config1` points at `path` when the
/// counter is opened, `config2` is `file_offset`. The kprobe PMU takes the
/// same attribute: `kernel` is set, `path` is then the kernel function's
/// name and `file_offset` the offset into it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct UprobeSite {
    pub(crate) path: PathBuf,
    pub(crate) file_offset: u64,
    pub(crate) retprobe: bool,
    pub(crate) kernel: bool,
}

impl ResolvedEvent {
    /// A counter of `type_`/`config`, not a tracepoint or probe.
    pub(crate) fn plain(name: &str, type_: u32, config: u64) -> ResolvedEvent {
        ResolvedEvent {
            name: name.to_string(),
            type_,
            config,
            ..ResolvedEvent::default()
        }
    }

    pub(crate) fn is_tracepoint(&self) -> bool {
        self.tracepoint.is_some()
    }

    /// Sets what selects this event in `attr`: type, config and, for a
    /// uprobe, the file offset (`config2`). The path pointer (`config1`) is
    /// set only for the open itself (`sys::uprobe::open_at`), so attributes
    /// written to perf.data never hold a stale pointer.
    pub(crate) fn select_in(&self, attr: &mut perf_event_attr) {
        attr.type_ = self.type_;
        attr.config = self.config;
        attr.__bindgen_anon_3.config1 = self.config1;
        attr.__bindgen_anon_4.config2 = self.config2;
        if let Some(site) = &self.uprobe {
            attr.__bindgen_anon_4.config2 = site.file_offset;
        }
    }
}

/// Where a function is, for `uprobe:` events: implemented by the caller
/// with the symbol stage (this stage reads no ELF).
pub(crate) trait UprobeLocator {
    /// The binary `binary` names (a path, or a library such as `libc`), the
    /// file offset of `function` in it, and the event group perf probe
    /// would use (`probe_libc`). The error is one line for the user (the
    /// implementations live above this stage, with errors of their own).
    fn locate(&self, binary: &str, function: &str) -> Result<LocatedFunction, LocateError>;
}

/// Why a locator could not find a function: the symbol stage's error.
pub(crate) type LocateError = Box<dyn std::error::Error + Send + Sync>;

#[cfg(test)]
mod locate_error_tests {
    #[test]
    fn a_message_is_a_locate_error() {
        let e: super::LocateError = "no such function".into();
        assert_eq!(e.to_string(), "no such function");
    }
}

/// What an [`UprobeLocator`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct LocatedFunction {
    pub(crate) path: PathBuf,
    pub(crate) file_offset: u64,
    /// `probe_BINARY`, as perf probe names the group.
    pub(crate) group: String,
}

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum EventError {
    #[error("unknown event '{0}' (see 'scry list' for the events this machine offers)")]
    Unknown(String),
    #[error("bad modifier '{modifier}' in event '{event}' (allowed: u, k, p, pp, ppp)")]
    BadModifier { event: String, modifier: String },
    #[error("event '{0}': tracepoint not found in tracefs (see 'scry list')")]
    NoSuchTracepoint(String),
    #[error("event '{0}': the pattern matches no tracepoint (see 'scry list')")]
    GlobMatchesNothing(String),
    #[error("event '{event}': cannot read tracefs: {err}")]
    Tracefs { event: String, err: std::io::Error },
    #[error("empty event list")]
    Empty,
    #[error("event '{event}': {reason}")]
    Uprobe { event: String, reason: String },
    #[error(
        "event '{event}': no PMU '{pmu}' on this machine (see {})",
        crate::sys::pmu::DEVICES
    )]
    NoSuchPmu { event: String, pmu: String },
    #[error("event '{event}': unknown term '{term}' for PMU '{pmu}' (valid terms: {valid})")]
    UnknownTerm {
        event: String,
        term: String,
        pmu: String,
        valid: String,
    },
    #[error("event '{event}': {reason}")]
    BadTerm { event: String, reason: String },
    #[error("event '{event}': cannot read PMU '{pmu}' in sysfs: {err}")]
    PmuSysfs {
        event: String,
        pmu: String,
        err: std::io::Error,
    },
    #[error("event group '{0}': {1}")]
    BadGroup(String, String),
    #[error(
        "event '{event}': this kernel has no kprobe PMU (/sys/bus/event_source/devices/kprobe): {err}; \
         define a lasting probe with 'scry probe FUNCTION' and use probe:FUNCTION"
    )]
    NoKprobePmu { event: String, err: std::io::Error },
    #[error(
        "event '{event}': this kernel has no uprobe PMU (/sys/bus/event_source/devices/uprobe): {err}; \
         define a lasting probe with 'scry probe -x BINARY FUNCTION' and use probe_BINARY:FUNCTION"
    )]
    NoUprobePmu { event: String, err: std::io::Error },
}

const HARDWARE: &[(&str, u64)] = &[
    ("cpu-cycles", 0),
    ("cycles", 0),
    ("instructions", 1),
    ("cache-references", 2),
    ("cache-misses", 3),
    ("branch-instructions", 4),
    ("branches", 4),
    ("branch-misses", 5),
    ("bus-cycles", 6),
    ("stalled-cycles-frontend", 7),
    ("idle-cycles-frontend", 7),
    ("stalled-cycles-backend", 8),
    ("idle-cycles-backend", 8),
    ("ref-cycles", 9),
];

const SOFTWARE: &[(&str, u64)] = &[
    ("cpu-clock", 0),
    ("task-clock", 1),
    ("page-faults", 2),
    ("faults", 2),
    ("context-switches", 3),
    ("cs", 3),
    ("cpu-migrations", 4),
    ("migrations", 4),
    ("minor-faults", 5),
    ("major-faults", 6),
    ("alignment-faults", 7),
    ("emulation-faults", 8),
    ("dummy", 9),
    ("bpf-output", 10),
    ("cgroup-switches", 11),
];

/// perf's hardware-cache names: `L1-dcache-load-misses` = cache L1D, op
/// read, result miss: config = id | op << 8 | result << 16.
const CACHES: &[(&str, u64)] = &[
    ("L1-dcache", 0),
    ("L1-icache", 1),
    ("LLC", 2),
    ("dTLB", 3),
    ("iTLB", 4),
    ("branch", 5),
    ("node", 6),
];
const CACHE_OPS: &[(&str, u64)] = &[
    ("load", 0),
    ("loads", 0),
    ("store", 1),
    ("stores", 1),
    ("prefetch", 2),
    ("prefetches", 2),
];
const CACHE_RESULTS: &[(&str, u64)] = &[
    ("misses", 1),
    ("miss", 1),
    ("accesses", 0),
    ("access", 0),
    ("refs", 0),
];

/// Names of the hardware, software and cache events scry knows, for `list`.
pub(crate) fn symbolic_events() -> impl Iterator<Item = (&'static str, u32, u64)> {
    HARDWARE
        .iter()
        .map(|&(n, c)| (n, PERF_TYPE_HARDWARE, c))
        .chain(SOFTWARE.iter().map(|&(n, c)| (n, PERF_TYPE_SOFTWARE, c)))
}

/// Names of perf's tool events, for `list`.
pub(crate) fn tool_events() -> impl Iterator<Item = &'static str> {
    TOOLS.iter().map(|&(n, _)| n)
}

/// Split `-e` text on commas that are not inside `{}` or `//`.
/// The slashes of a uprobe's path (`uprobe:/usr/bin/ls:main`) do not pair.
pub(crate) fn split_list(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    let mut in_slash = false;
    for (i, c) in text.char_indices() {
        let item = text[start..].trim_start();
        let in_uprobe = ["uprobe:", "uretprobe:", "kprobe:", "kretprobe:"]
            .iter()
            .any(|p| item.starts_with(p));
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            '/' if !in_uprobe => in_slash = !in_slash,
            ',' if depth == 0 && !in_slash => {
                out.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&text[start..]);
    out.into_iter()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect()
}

/// Parse a comma-separated list of events.
pub(crate) fn parse_list(text: &str) -> Result<Vec<EventSpec>, EventError> {
    let parts = split_list(text);
    if parts.is_empty() {
        return Err(EventError::Empty);
    }
    let mut out = Vec::with_capacity(parts.len());
    for part in parts {
        if part.starts_with('{') {
            out.extend(super::group::parse_group(part)?);
        } else {
            out.push(parse(part)?);
        }
    }
    Ok(out)
}

pub(crate) fn parse_modifiers(event: &str, text: &str) -> Result<Modifiers, EventError> {
    let mut m = Modifiers::default();
    let (mut u, mut k) = (false, false);
    for c in text.chars() {
        match c {
            'u' => u = true,
            'k' => k = true,
            'p' => m.precise_ip = (m.precise_ip + 1).min(3),
            'P' => m.precise_ip = 3,
            'H' | 'G' | 'h' => {}
            _ => {
                return Err(EventError::BadModifier {
                    event: event.to_string(),
                    modifier: text.to_string(),
                });
            }
        }
    }
    if u || k {
        m.exclude_user = !u;
        m.exclude_kernel = !k;
    }
    Ok(m)
}

pub(crate) fn lookup(table: &[(&str, u64)], name: &str) -> Option<u64> {
    table
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|&(_, c)| c)
}

fn parse_cache(name: &str) -> Option<u64> {
    let lower = name.to_ascii_lowercase();
    for &(cache, id) in CACHES {
        let Some(rest) = lower.strip_prefix(&cache.to_ascii_lowercase()) else {
            continue;
        };
        let mut parts = rest.split('-').filter(|p| !p.is_empty());
        let (op, result) = match (parts.next(), parts.next(), parts.next()) {
            (Some(a), Some(b), None) => (lookup(CACHE_OPS, a)?, lookup(CACHE_RESULTS, b)?),
            (Some(a), None, None) => match (lookup(CACHE_OPS, a), lookup(CACHE_RESULTS, a)) {
                (Some(op), None) => (op, 0),
                (None, Some(result)) => (0, result),
                _ => return None,
            },
            _ => return None,
        };
        return Some(id | op << 8 | result << 16);
    }
    None
}

/// Parse one event name.
pub(crate) fn parse(text: &str) -> Result<EventSpec, EventError> {
    let text = text.trim();
    for (prefix, retprobe) in [("uprobe:", false), ("uretprobe:", true)] {
        if let Some(rest) = text.strip_prefix(prefix) {
            let (binary, function) = rest
                .rsplit_once(':')
                .filter(|(b, f)| !b.is_empty() && !f.is_empty())
                .ok_or_else(|| EventError::Uprobe {
                    event: text.to_string(),
                    reason: format!("expected {prefix}BINARY:FUNCTION"),
                })?;
            return Ok(EventSpec {
                name: text.to_string(),
                kind: EventKind::Uprobe {
                    binary: binary.to_string(),
                    function: function.to_string(),
                    retprobe,
                },
                modifiers: Modifiers::default(),
                group: None,
            });
        }
    }
    for (prefix, retprobe) in [("kprobe:", false), ("kretprobe:", true)] {
        if let Some(rest) = text.strip_prefix(prefix) {
            let bad = |reason: &str| EventError::Uprobe {
                event: text.to_string(),
                reason: reason.to_string(),
            };
            let (function, offset) = match rest.split_once('+') {
                Some((f, off)) => {
                    let off = match off.strip_prefix("0x") {
                        Some(hex) => u64::from_str_radix(hex, 16),
                        None => off.parse(),
                    };
                    (f, off.map_err(|_| bad("the offset is not a number"))?)
                }
                None => (rest, 0),
            };
            let ident = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '.';
            if function.is_empty() || !function.chars().all(ident) {
                return Err(bad(&format!("expected {prefix}FUNCTION[+OFFSET]")));
            }
            if retprobe && offset != 0 {
                return Err(bad("a return probe takes no offset"));
            }
            return Ok(EventSpec {
                name: text.to_string(),
                kind: EventKind::Kprobe {
                    function: function.to_string(),
                    offset,
                    retprobe,
                },
                modifiers: Modifiers::default(),
                group: None,
            });
        }
    }
    if let Some((pmu, terms, mods)) = super::pmu::split(text) {
        return Ok(EventSpec {
            name: text.to_string(),
            kind: EventKind::Pmu {
                pmu: pmu.to_string(),
                terms: terms.to_string(),
            },
            modifiers: parse_modifiers(text, mods)?,
            group: None,
        });
    }
    if let Some(&(_, tool)) = TOOLS.iter().find(|(n, _)| *n == text) {
        return Ok(EventSpec {
            name: text.to_string(),
            kind: EventKind::Tool(tool),
            modifiers: Modifiers::default(),
            group: None,
        });
    }
    // Tracepoints: `subsys:name` (the name may hold globs); `subsys:name:u`
    // is not a thing, so any colon splits a tracepoint unless the part after
    // the first colon is a known modifier set.
    if let Some((left, right)) = text.split_once(':') {
        let is_modifier = !right.is_empty() && right.chars().all(|c| "ukpPHGh".contains(c));
        let symbolic = lookup(HARDWARE, left).is_some()
            || lookup(SOFTWARE, left).is_some()
            || parse_cache(left).is_some();
        if !is_modifier && !symbolic {
            if left.is_empty() || right.is_empty() || right.contains(':') {
                return Err(EventError::Unknown(text.to_string()));
            }
            return Ok(EventSpec {
                name: text.to_string(),
                kind: EventKind::Tracepoint {
                    subsystem: left.to_string(),
                    name: right.to_string(),
                },
                modifiers: Modifiers::default(),
                group: None,
            });
        }
    }
    let (base, modifiers) = match text.split_once(':') {
        Some((base, mods)) => (base, parse_modifiers(text, mods)?),
        None => (text, Modifiers::default()),
    };
    let kind = if let Some(c) = lookup(HARDWARE, base) {
        EventKind::Hardware(c)
    } else if let Some(c) = lookup(SOFTWARE, base) {
        EventKind::Software(c)
    } else if let Some(c) = parse_cache(base) {
        EventKind::HwCache(c)
    } else if let Some(hex) = base
        .strip_prefix('r')
        .filter(|h| !h.is_empty() && h.chars().all(|c| c.is_ascii_hexdigit()))
    {
        EventKind::Raw(
            u64::from_str_radix(hex, 16).map_err(|_| EventError::Unknown(text.to_string()))?,
        )
    } else {
        return Err(EventError::Unknown(text.to_string()));
    };
    Ok(EventSpec {
        name: text.to_string(),
        kind,
        modifiers,
        group: None,
    })
}

fn glob_match(pattern: &str, text: &str) -> bool {
    let (p, t) = (pattern.as_bytes(), text.as_bytes());
    let (mut pi, mut ti, mut star, mut mark) = (0, 0, None, 0);
    while ti < t.len() {
        if pi < p.len() && (p[pi] == b'?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == b'*' {
            star = Some(pi);
            mark = ti;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == b'*' {
        pi += 1;
    }
    pi == p.len()
}

/// Glob matching (`*`, `?`) as used for event names.
pub(crate) fn matches_glob(pattern: &str, text: &str) -> bool {
    glob_match(pattern, text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_software_and_modifiers() {
        let e = parse("page-faults:u").unwrap();
        assert_eq!(e.kind, EventKind::Software(2));
        assert!(e.modifiers.exclude_kernel && !e.modifiers.exclude_user);
        assert_eq!(parse("cs").unwrap().kind, EventKind::Software(3));
        assert_eq!(parse("cycles:pp").unwrap().modifiers.precise_ip, 2);
    }

    #[test]
    fn parses_cache_raw_tracepoint() {
        assert_eq!(
            parse("L1-dcache-load-misses").unwrap().kind,
            EventKind::HwCache(1 << 16)
        );
        assert_eq!(
            parse("LLC-stores").unwrap().kind,
            EventKind::HwCache(2 | 1 << 8)
        );
        assert_eq!(parse("r1a8").unwrap().kind, EventKind::Raw(0x1a8));
        assert_eq!(
            parse("sched:sched_switch").unwrap().kind,
            EventKind::Tracepoint {
                subsystem: "sched".into(),
                name: "sched_switch".into()
            }
        );
    }

    #[test]
    fn rejects_unknown() {
        assert!(matches!(parse("nosuch_event"), Err(EventError::Unknown(_))));
        assert!(matches!(
            parse("cycles:z"),
            Err(EventError::BadModifier { .. })
        ));
        assert!(matches!(parse("a:b:c"), Err(EventError::Unknown(_))));
        let msg = parse("nosuch").unwrap_err().to_string();
        assert!(msg.contains("nosuch") && msg.contains("scry list"));
    }

    #[test]
    fn splits_lists_and_globs() {
        assert_eq!(
            split_list("cpu-clock, sched:*,faults"),
            vec!["cpu-clock", "sched:*", "faults"]
        );
        assert!(glob_match("sys_enter_*", "sys_enter_openat"));
        assert!(!glob_match("sys_enter_*", "sys_exit_openat"));
        assert!(glob_match("*fault*", "page-faults"));
        assert_eq!(
            split_list("uprobe:./calls:work,cpu-clock, uretprobe:/usr/lib/x/libc.so.6:malloc"),
            vec![
                "uprobe:./calls:work",
                "cpu-clock",
                "uretprobe:/usr/lib/x/libc.so.6:malloc"
            ]
        );
    }

    #[test]
    fn parses_uprobes() {
        assert_eq!(
            parse("uretprobe:/usr/bin/a:b:main").unwrap().kind,
            EventKind::Uprobe {
                binary: "/usr/bin/a:b".into(),
                function: "main".into(),
                retprobe: true
            }
        );
        assert!(matches!(
            parse("uprobe:libc"),
            Err(EventError::Uprobe { .. })
        ));
        assert_eq!(
            parse("kprobe:vfs_read+0x10").unwrap().kind,
            EventKind::Kprobe {
                function: "vfs_read".into(),
                offset: 16,
                retprobe: false
            }
        );
        assert!(parse("kretprobe:vfs_read+4").is_err());
        assert!(parse("kprobe:").is_err());
        assert!(matches!(
            parse("uprobe::malloc"),
            Err(EventError::Uprobe { .. })
        ));
        let refused = resolve(&[parse("uprobe:libc:malloc").unwrap()]).unwrap_err();
        assert!(
            refused.to_string().contains("does not take uprobe"),
            "{refused}"
        );
    }
}
