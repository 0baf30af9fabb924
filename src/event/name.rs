//! Event names as perf spells them, parsed into what the kernel needs:
//! `cpu-clock`, `page-faults:u`, `cycles:pp`, `L1-dcache-load-misses`,
//! `r1a8`, `sched:sched_switch`, `'syscalls:sys_enter_*'`.
//!
//! Parsing is pure; tracepoint names are resolved to ids (and globs
//! expanded) against tracefs by `resolve`, the one function here that
//! touches the system.

use crate::sys::perf_event::{
    PERF_TYPE_HARDWARE, PERF_TYPE_HW_CACHE, PERF_TYPE_RAW, PERF_TYPE_SOFTWARE, PERF_TYPE_TRACEPOINT,
};

/// What kind of counter an event is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EventKind {
    Hardware(u64),
    Software(u64),
    HwCache(u64),
    Raw(u64),
    /// Not yet resolved against tracefs; `name` may be a glob.
    Tracepoint {
        subsystem: String,
        name: String,
    },
}

/// `:u`, `:k`, `:p`... suffixes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Modifiers {
    pub exclude_user: bool,
    pub exclude_kernel: bool,
    pub precise_ip: u8,
}

/// One event the user asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventSpec {
    /// The name as perf would print it (`cpu-clock`, `sched:sched_switch`,
    /// `cycles:u`).
    pub name: String,
    pub kind: EventKind,
    pub modifiers: Modifiers,
}

/// An event resolved to `perf_event_attr.type` and `.config`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResolvedEvent {
    pub name: String,
    pub type_: u32,
    pub config: u64,
    pub modifiers: Modifiers,
    /// `(subsystem, name)` for tracepoints.
    pub tracepoint: Option<(String, String)>,
}

impl ResolvedEvent {
    pub fn is_tracepoint(&self) -> bool {
        self.tracepoint.is_some()
    }
}

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EventError {
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
pub fn symbolic_events() -> impl Iterator<Item = (&'static str, u32, u64)> {
    HARDWARE
        .iter()
        .map(|&(n, c)| (n, PERF_TYPE_HARDWARE, c))
        .chain(SOFTWARE.iter().map(|&(n, c)| (n, PERF_TYPE_SOFTWARE, c)))
}

/// Split `-e` text on commas that are not inside `{}` or `//`.
pub fn split_list(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    let mut in_slash = false;
    for (i, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            '/' => in_slash = !in_slash,
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
pub fn parse_list(text: &str) -> Result<Vec<EventSpec>, EventError> {
    let parts = split_list(text);
    if parts.is_empty() {
        return Err(EventError::Empty);
    }
    parts.into_iter().map(parse).collect()
}

fn parse_modifiers(event: &str, text: &str) -> Result<Modifiers, EventError> {
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

fn lookup(table: &[(&str, u64)], name: &str) -> Option<u64> {
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
pub fn parse(text: &str) -> Result<EventSpec, EventError> {
    let text = text.trim();
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
pub fn matches_glob(pattern: &str, text: &str) -> bool {
    glob_match(pattern, text)
}

/// Resolve parsed events to type/config; tracepoint globs expand to every
/// matching tracepoint, in tracefs order.
pub fn resolve(specs: &[EventSpec]) -> Result<Vec<ResolvedEvent>, EventError> {
    let mut out = Vec::new();
    let mut all_tracepoints: Option<Vec<(String, String)>> = None;
    for spec in specs {
        let (type_, config) = match &spec.kind {
            EventKind::Hardware(c) => (PERF_TYPE_HARDWARE, *c),
            EventKind::Software(c) => (PERF_TYPE_SOFTWARE, *c),
            EventKind::HwCache(c) => (PERF_TYPE_HW_CACHE, *c),
            EventKind::Raw(c) => (PERF_TYPE_RAW, *c),
            EventKind::Tracepoint { subsystem, name } => {
                let is_glob = |s: &str| s.contains(['*', '?']);
                if is_glob(subsystem) || is_glob(name) {
                    if all_tracepoints.is_none() {
                        let list = crate::sys::tracefs::list_events().map_err(|err| {
                            EventError::Tracefs {
                                event: spec.name.clone(),
                                err,
                            }
                        })?;
                        all_tracepoints = Some(list);
                    }
                    let mut matched = 0;
                    for (sub, ev) in all_tracepoints.iter().flatten() {
                        if glob_match(subsystem, sub) && glob_match(name, ev) {
                            let id = crate::sys::tracefs::event_id(sub, ev).map_err(|err| {
                                EventError::Tracefs {
                                    event: spec.name.clone(),
                                    err,
                                }
                            })?;
                            out.push(ResolvedEvent {
                                name: format!("{sub}:{ev}"),
                                type_: PERF_TYPE_TRACEPOINT,
                                config: id,
                                modifiers: spec.modifiers,
                                tracepoint: Some((sub.clone(), ev.clone())),
                            });
                            matched += 1;
                        }
                    }
                    if matched == 0 {
                        return Err(EventError::GlobMatchesNothing(spec.name.clone()));
                    }
                    continue;
                }
                let id = match crate::sys::tracefs::event_id(subsystem, name) {
                    Ok(id) => id,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                        // tracefs itself may be what is missing.
                        crate::sys::tracefs::root().map_err(|err| EventError::Tracefs {
                            event: spec.name.clone(),
                            err,
                        })?;
                        return Err(EventError::NoSuchTracepoint(spec.name.clone()));
                    }
                    Err(err) => {
                        return Err(EventError::Tracefs {
                            event: spec.name.clone(),
                            err,
                        });
                    }
                };
                out.push(ResolvedEvent {
                    name: spec.name.clone(),
                    type_: PERF_TYPE_TRACEPOINT,
                    config: id,
                    modifiers: spec.modifiers,
                    tracepoint: Some((subsystem.clone(), name.clone())),
                });
                continue;
            }
        };
        out.push(ResolvedEvent {
            name: spec.name.clone(),
            type_,
            config,
            modifiers: spec.modifiers,
            tracepoint: None,
        });
    }
    Ok(out)
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
    }
}
