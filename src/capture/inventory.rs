//! What this machine can count, for `scry list`: the symbolic hardware,
//! software and cache events, the PMUs under
//! /sys/bus/event_source/devices with their named events, every tracepoint
//! tracefs offers, and the dynamic probes already defined (uprobe_events,
//! kprobe_events, dynamic_events).
//!
//! Decision: hardware, software and cache events are *tried* (a counting
//! counter opened on scry itself for a moment) so the list says which the
//! machine cannot count (`<not supported>` on virtual machines) instead of
//! hiding them as perf does. Tracepoints are not tried one by one: tracefs
//! listing them is the proof they exist.
//!
//! Invariant: entries come out grouped in `Group` order, sorted by name
//! within a group; an event appears once (its aliases joined on it).

use std::path::Path;

pub(crate) use crate::event::listing::{Group, ListedEvent};
use crate::event::name::{self, EventKind, ResolvedEvent};
use crate::sys::perf_event::{PERF_TYPE_HARDWARE, PERF_TYPE_HW_CACHE};

use super::counting;

/// Everything `list` found, and what it could not look at.
#[derive(Clone, Debug, Default)]
pub(crate) struct Inventory {
    pub(crate) events: Vec<ListedEvent>,
    /// One line per source that could not be read (tracefs missing, ...).
    pub(crate) notes: Vec<String>,
}

const CACHES: &[&str] = &[
    "L1-dcache",
    "L1-icache",
    "LLC",
    "dTLB",
    "iTLB",
    "branch",
    "node",
];
const CACHE_OPS: &[(&str, &str)] = &[
    ("load", "loads"),
    ("store", "stores"),
    ("prefetch", "prefetches"),
];

fn probe(events: &mut [ListedEvent], type_: u32, config: impl Fn(&ListedEvent) -> Option<u64>) {
    for e in events.iter_mut() {
        let Some(config) = config(e) else { continue };
        let resolved = ResolvedEvent::plain(&e.name, type_, config);
        e.unsupported = counting::probe(&resolved)
            .err()
            .map(|e| counting::errno_words(&e));
    }
}

fn symbolic() -> Vec<ListedEvent> {
    // (type, config) → first name, aliases; in the table's order.
    let mut grouped: Vec<(u32, u64, ListedEvent)> = Vec::new();
    for (name, type_, config) in name::symbolic_events() {
        if let Some((_, _, e)) = grouped
            .iter_mut()
            .find(|(t, c, _)| *t == type_ && *c == config)
        {
            e.aliases.push(name.to_string());
            continue;
        }
        let group = if type_ == PERF_TYPE_HARDWARE {
            Group::Hardware
        } else {
            Group::Software
        };
        grouped.push((type_, config, ListedEvent::new(name, group)));
    }
    let mut out = Vec::new();
    for (type_, config, mut e) in grouped {
        let resolved = ResolvedEvent::plain(&e.name, type_, config);
        e.unsupported = counting::probe(&resolved)
            .err()
            .map(|e| counting::errno_words(&e));
        out.push(e);
    }
    let mut cache: Vec<ListedEvent> = Vec::new();
    for c in CACHES {
        for (op, ops) in CACHE_OPS {
            for name in [format!("{c}-{ops}"), format!("{c}-{op}-misses")] {
                cache.push(ListedEvent::new(&name, Group::HardwareCache));
            }
        }
    }
    probe(&mut cache, PERF_TYPE_HW_CACHE, |e| {
        match name::parse(&e.name) {
            Ok(spec) => match spec.kind {
                EventKind::HwCache(config) => Some(config),
                _ => None,
            },
            Err(_) => None,
        }
    });
    out.extend(cache);
    out.extend(name::tool_events().map(|n| ListedEvent::new(n, Group::Tool)));
    out
}

/// PMUs and their named events (`msr/tsc/`).
fn pmus(notes: &mut Vec<String>) -> Vec<ListedEvent> {
    let dir = Path::new("/sys/bus/event_source/devices");
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) => {
            notes.push(format!("cannot read {}: {e}", dir.display()));
            return Vec::new();
        }
    };
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let pmu = entry.file_name().to_string_lossy().into_owned();
        let type_ = std::fs::read_to_string(entry.path().join("type"))
            .map(|t| t.trim().to_string())
            .unwrap_or_default();
        let mut named = 0;
        if let Ok(events) = std::fs::read_dir(entry.path().join("events")) {
            for ev in events.flatten() {
                let ev_name = ev.file_name().to_string_lossy().into_owned();
                // `.scale`, `.unit`, `.per-pkg`, `.snapshot` describe another entry.
                if ev_name.contains('.') {
                    continue;
                }
                let mut e = ListedEvent::new(&format!("{pmu}/{ev_name}/"), Group::KernelPmu);
                e.detail = std::fs::read_to_string(ev.path())
                    .ok()
                    .map(|s| s.trim().to_string());
                out.push(e);
                named += 1;
            }
        }
        if named == 0 {
            let mut e = ListedEvent::new(&format!("{pmu}//"), Group::KernelPmu);
            e.detail = Some(format!("PMU type {type_}"));
            out.push(e);
        }
    }
    out
}

/// Parses one line of uprobe_events / kprobe_events / dynamic_events:
/// `p:group/event target...` → (group, event, definition).
pub(crate) fn parse_probe_line(line: &str) -> Option<(String, String, String)> {
    let line = line.trim();
    let (head, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
    let (_kind, name) = head.split_once(':')?;
    let (group, event) = name.split_once('/')?;
    if group.is_empty() || event.is_empty() {
        return None;
    }
    Some((
        group.to_string(),
        event.to_string(),
        rest.trim().to_string(),
    ))
}

fn probes(root: &Path) -> Vec<ListedEvent> {
    let mut out: Vec<ListedEvent> = Vec::new();
    for (file, kind) in [
        ("uprobe_events", "uprobe"),
        ("kprobe_events", "kprobe"),
        ("dynamic_events", "dynamic"),
    ] {
        let Ok(text) = std::fs::read_to_string(root.join(file)) else {
            continue;
        };
        for line in text.lines() {
            let Some((group, event, def)) = parse_probe_line(line) else {
                continue;
            };
            let name = format!("{group}:{event}");
            if out.iter().any(|e| e.name == name) {
                continue;
            }
            let mut e = ListedEvent::new(&name, Group::DynamicProbe);
            e.detail = Some(format!("{kind} {def}"));
            out.push(e);
        }
    }
    out
}

/// Everything this machine offers. Never fails: a source that cannot be
/// read becomes a note.
pub(crate) fn inventory() -> Inventory {
    let mut inv = Inventory {
        events: symbolic(),
        notes: Vec::new(),
    };
    inv.events.extend(pmus(&mut inv.notes));
    inv.events.push(ListedEvent::new("rNNN", Group::Raw));
    match crate::sys::tracefs::root() {
        Ok(root) => {
            let dynamic = probes(root);
            match crate::sys::tracefs::list_events() {
                Ok(list) => {
                    for (sub, ev) in list {
                        let name = format!("{sub}:{ev}");
                        if !dynamic.iter().any(|d| d.name == name) {
                            inv.events.push(ListedEvent::new(&name, Group::Tracepoint));
                        }
                    }
                }
                Err(e) => inv.notes.push(format!("cannot list tracepoints: {e}")),
            }
            inv.events.extend(dynamic);
        }
        Err(e) => inv.notes.push(format!("no tracepoints listed: {e}")),
    }
    inv.events
        .sort_by(|a, b| a.group.cmp(&b.group).then_with(|| a.name.cmp(&b.name)));
    inv
}

/// Keeps the events `filter` selects: a group keyword (`tracepoint`,
/// `hw`, `sw`, `cache`, `pmu`, `probe`), a glob with a colon
/// (`'sched:*'`) matched whole, or any other word matched anywhere
/// (`fault` = `*fault*`), as perf list does.
pub(crate) fn select(events: Vec<ListedEvent>, filter: Option<&str>) -> Vec<ListedEvent> {
    let Some(filter) = filter else {
        return events;
    };
    if let Some(group) = Group::from_keyword(filter) {
        return events.into_iter().filter(|e| e.group == group).collect();
    }
    let pattern = if filter.contains(':') || filter.starts_with('*') || filter.ends_with('*') {
        filter.to_string()
    } else {
        format!("*{filter}*")
    };
    events.into_iter().filter(|e| e.matches(&pattern)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_lines() {
        assert_eq!(
            parse_probe_line("p:uprobes/p_bash_0x4245c0 /bin/bash:0x00000000000445c0"),
            Some((
                "uprobes".into(),
                "p_bash_0x4245c0".into(),
                "/bin/bash:0x00000000000445c0".into()
            ))
        );
        assert_eq!(
            parse_probe_line("r10:kprobes/myret do_sys_openat2 $retval").map(|p| p.1),
            Some("myret".into())
        );
        assert_eq!(parse_probe_line("garbage"), None);
        assert_eq!(parse_probe_line(""), None);
    }

    #[test]
    fn selection_by_keyword_and_glob() {
        let events = vec![
            ListedEvent::new("page-faults", Group::Software),
            ListedEvent::new("sched:sched_switch", Group::Tracepoint),
            ListedEvent::new("exceptions:page_fault_user", Group::Tracepoint),
        ];
        let names = |v: Vec<ListedEvent>| v.into_iter().map(|e| e.name).collect::<Vec<_>>();
        assert_eq!(names(select(events.clone(), Some("tracepoint"))).len(), 2);
        assert_eq!(
            names(select(events.clone(), Some("sched:*"))),
            vec!["sched:sched_switch"]
        );
        assert_eq!(names(select(events.clone(), Some("*fault*"))).len(), 2);
        assert_eq!(names(select(events, Some("fault"))).len(), 2);
    }

    #[test]
    fn symbolic_names_parse_back() {
        for e in symbolic() {
            for n in std::iter::once(&e.name).chain(&e.aliases) {
                assert!(name::parse(n).is_ok(), "{n} does not parse");
            }
        }
    }
}
