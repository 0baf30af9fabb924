//! Parsed events (`name::EventSpec`) to what `perf_event_open` takes
//! (`name::ResolvedEvent`): symbolic events by table, tracepoints by id
//! (globs expanded in tracefs directory order, as perf expands them),
//! `PMU/terms/` by sysfs (`sys::pmu` reads, `event::pmu` encodes), uprobes
//! by an [`UprobeLocator`] the caller hands in, kprobes to the kprobe PMU, and tool events to a
//! `dummy` counter that is never opened.
//!
//! A group's roles carry over: an expanded glob's first event keeps its
//! spec's role, the others are members of the same group.

use crate::sys::perf_event::{
    PERF_TYPE_HARDWARE, PERF_TYPE_HW_CACHE, PERF_TYPE_RAW, PERF_TYPE_SOFTWARE, PERF_TYPE_TRACEPOINT,
};

use super::group::GroupRole;
use super::name::{
    EventError, EventKind, EventSpec, EventUnit, LocateError, LocatedFunction, ResolvedEvent,
    UprobeLocator, UprobeSite, matches_glob,
};
use super::pmu::{self, TermError};

/// `perf_event_attr.config` of the software `dummy` event: what perf
/// gives tool events, which open no counter.
const SW_DUMMY: u64 = 9;

/// A locator for commands without uprobe support: every uprobe is refused.
struct NoUprobes;

impl UprobeLocator for NoUprobes {
    fn locate(&self, _binary: &str, _function: &str) -> Result<LocatedFunction, LocateError> {
        Err("this command does not take uprobe events (record, stat and trace do)".into())
    }
}

/// Resolve parsed events to type/config; tracepoint globs expand to every
/// matching tracepoint, in tracefs order. Uprobe events are refused: see
/// `resolve_with`.
pub(crate) fn resolve(specs: &[EventSpec]) -> Result<Vec<ResolvedEvent>, EventError> {
    resolve_with(specs, &NoUprobes)
}

/// As `resolve`, with `uprobe:`/`uretprobe:` events located by `locator`
/// and made `uprobe` PMU counters named as perf probe names events
/// (`probe_libc:malloc`, `probe_libc:malloc__return`).
pub(crate) fn resolve_with(
    specs: &[EventSpec],
    locator: &dyn UprobeLocator,
) -> Result<Vec<ResolvedEvent>, EventError> {
    let mut out = Vec::new();
    let mut all_tracepoints: Option<Vec<(String, String)>> = None;
    let mut uprobe_pmu = None;
    for spec in specs {
        let event = |name: &str, type_: u32, config: u64| ResolvedEvent {
            modifiers: spec.modifiers,
            group: spec.group,
            ..ResolvedEvent::plain(name, type_, config)
        };
        match &spec.kind {
            EventKind::Uprobe {
                binary,
                function,
                retprobe,
            } => {
                let located =
                    locator
                        .locate(binary, function)
                        .map_err(|reason| EventError::Uprobe {
                            event: spec.name.clone(),
                            reason: reason.to_string(),
                        })?;
                let pmu = match uprobe_pmu {
                    Some(p) => p,
                    None => *uprobe_pmu.insert(crate::sys::uprobe::UprobePmu::detect().map_err(
                        |err| EventError::NoUprobePmu {
                            event: spec.name.clone(),
                            err,
                        },
                    )?),
                };
                let suffix = if *retprobe { "__return" } else { "" };
                out.push(ResolvedEvent {
                    uprobe: Some(UprobeSite {
                        path: located.path,
                        file_offset: located.file_offset,
                        retprobe: *retprobe,
                        kernel: false,
                    }),
                    ..event(
                        &format!("{}:{function}{suffix}", located.group),
                        pmu.type_,
                        pmu.config(*retprobe),
                    )
                });
            }
            EventKind::Kprobe {
                function,
                offset,
                retprobe,
            } => {
                let pmu = crate::sys::uprobe::UprobePmu::detect_kprobe().map_err(|err| {
                    EventError::NoKprobePmu {
                        event: spec.name.clone(),
                        err,
                    }
                })?;
                out.push(ResolvedEvent {
                    uprobe: Some(UprobeSite {
                        path: function.into(),
                        file_offset: *offset,
                        retprobe: *retprobe,
                        kernel: true,
                    }),
                    ..event(&spec.name, pmu.type_, pmu.config(*retprobe))
                });
            }
            EventKind::Hardware(c) => out.push(event(&spec.name, PERF_TYPE_HARDWARE, *c)),
            EventKind::Software(c) => out.push(event(&spec.name, PERF_TYPE_SOFTWARE, *c)),
            EventKind::HwCache(c) => out.push(event(&spec.name, PERF_TYPE_HW_CACHE, *c)),
            EventKind::Raw(c) => out.push(event(&spec.name, PERF_TYPE_RAW, *c)),
            EventKind::Tool(tool) => out.push(ResolvedEvent {
                tool: Some(*tool),
                unit: Some(EventUnit {
                    unit: "ns".into(),
                    scale: 1.0,
                }),
                ..event(&spec.name, PERF_TYPE_SOFTWARE, SW_DUMMY)
            }),
            EventKind::Pmu { pmu, terms } => out.push(resolve_pmu(spec, pmu, terms)?),
            EventKind::Tracepoint { subsystem, name } => {
                let is_glob = |s: &str| s.contains(['*', '?']);
                if !is_glob(subsystem) && !is_glob(name) {
                    let id = tracepoint_id(spec, subsystem, name)?;
                    out.push(ResolvedEvent {
                        tracepoint: Some((subsystem.clone(), name.clone())),
                        ..event(&spec.name, PERF_TYPE_TRACEPOINT, id)
                    });
                    continue;
                }
                let tracefs_err = |err| EventError::Tracefs {
                    event: spec.name.clone(),
                    err,
                };
                if all_tracepoints.is_none() {
                    all_tracepoints =
                        Some(crate::sys::tracefs::list_events_dir_order().map_err(tracefs_err)?);
                }
                let first = out.len();
                for (sub, ev) in all_tracepoints.iter().flatten() {
                    if matches_glob(subsystem, sub) && matches_glob(name, ev) {
                        let id = crate::sys::tracefs::event_id(sub, ev).map_err(tracefs_err)?;
                        let mut resolved = event(&format!("{sub}:{ev}"), PERF_TYPE_TRACEPOINT, id);
                        resolved.tracepoint = Some((sub.clone(), ev.clone()));
                        if out.len() > first && spec.group.is_some() {
                            resolved.group = Some(GroupRole::Member);
                        }
                        out.push(resolved);
                    }
                }
                if out.len() == first {
                    return Err(EventError::GlobMatchesNothing(spec.name.clone()));
                }
            }
        }
    }
    Ok(out)
}

fn tracepoint_id(spec: &EventSpec, subsystem: &str, name: &str) -> Result<u64, EventError> {
    match crate::sys::tracefs::event_id(subsystem, name) {
        Ok(id) => Ok(id),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // tracefs itself may be what is missing.
            crate::sys::tracefs::root().map_err(|err| EventError::Tracefs {
                event: spec.name.clone(),
                err,
            })?;
            Err(EventError::NoSuchTracepoint(spec.name.clone()))
        }
        Err(err) => Err(EventError::Tracefs {
            event: spec.name.clone(),
            err,
        }),
    }
}

/// `PMU/terms/` against the PMU's sysfs description. Named as perf names
/// it: the text as written, or `name=`.
fn resolve_pmu(spec: &EventSpec, pmu_name: &str, terms: &str) -> Result<ResolvedEvent, EventError> {
    let info = crate::sys::pmu::read_pmu(pmu_name).map_err(|err| {
        if err.kind() == std::io::ErrorKind::NotFound {
            EventError::NoSuchPmu {
                event: spec.name.clone(),
                pmu: pmu_name.to_string(),
            }
        } else {
            EventError::PmuSysfs {
                event: spec.name.clone(),
                pmu: pmu_name.to_string(),
                err,
            }
        }
    })?;
    let encoded = pmu::encode(&info, terms).map_err(|e| match e {
        TermError::Unknown { term, valid } => EventError::UnknownTerm {
            event: spec.name.clone(),
            term,
            pmu: pmu_name.to_string(),
            valid,
        },
        TermError::Bad(reason) => EventError::BadTerm {
            event: spec.name.clone(),
            reason,
        },
    })?;
    Ok(ResolvedEvent {
        name: encoded.name.unwrap_or_else(|| spec.name.clone()),
        type_: info.type_,
        config: encoded.config,
        config1: encoded.config1,
        config2: encoded.config2,
        modifiers: spec.modifiers,
        group: spec.group,
        // perf prints PMU events without its symbolic units (a
        // `software/config=1/` count is ns, not msec) unless sysfs names one.
        unit: Some(EventUnit {
            unit: encoded.unit.unwrap_or_default(),
            scale: encoded.scale.unwrap_or(1.0),
        }),
        period: encoded.period,
        ..ResolvedEvent::default()
    })
}

/// perf record's answer to `cycles` on a machine without a hardware PMU:
/// `cpu-clock` with the same modifiers, named as perf names it
/// (`cycles:u` → `cpu-clock:uH`, `cycles:k` → `cpu-clock:k`, `cycles:pp`
/// → `cpu-clock:ppH`: perf's `evsel__add_modifiers` on the attributes its
/// modifier parser gives). None for other events.
pub(crate) fn cpu_clock_fallback(event: &ResolvedEvent) -> Option<ResolvedEvent> {
    if event.type_ != PERF_TYPE_HARDWARE || event.config != 0 || event.tool.is_some() {
        return None;
    }
    let mods = event.name.split_once(':').map_or("", |(_, m)| m);
    let (u, k) = (mods.contains('u'), mods.contains('k'));
    let precise = event.modifiers.precise_ip;
    let mut suffix = String::new();
    if !mods.is_empty() {
        if k {
            suffix.push('k');
        }
        if u {
            suffix.push('u');
        }
        suffix.push_str(&"ppp"[..usize::from(precise.min(3))]);
        // perf's exclude_guest: set by `u` and `p`; printed modifiers
        // default to it when any of u, k, p is given.
        let exclude_guest = u || precise > 0;
        let guest_default = u || k || precise > 0;
        if exclude_guest == guest_default {
            suffix.push('H');
            if !exclude_guest {
                suffix.push('G');
            }
        }
    }
    let name = if suffix.is_empty() {
        "cpu-clock".to_string()
    } else {
        format!("cpu-clock:{suffix}")
    };
    Some(ResolvedEvent {
        name,
        type_: PERF_TYPE_SOFTWARE,
        config: 0,
        ..event.clone()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::name::parse_list;

    #[test]
    fn cycles_falls_back_to_cpu_clock_named_as_perf_names_it() {
        // What perf 6.1 record writes for each on a machine without a PMU.
        for (asked, perf) in [
            ("cycles", "cpu-clock"),
            ("cycles:k", "cpu-clock:k"),
            ("cycles:u", "cpu-clock:uH"),
            ("cycles:pp", "cpu-clock:ppH"),
            ("cycles:ku", "cpu-clock:kuH"),
            ("cycles:kpp", "cpu-clock:kppH"),
            ("cycles:upp", "cpu-clock:uppH"),
        ] {
            let event = resolve(&parse_list(asked).unwrap()).unwrap().remove(0);
            let fallback = cpu_clock_fallback(&event).unwrap();
            assert_eq!(fallback.name, perf, "{asked}");
            assert_eq!((fallback.type_, fallback.config), (PERF_TYPE_SOFTWARE, 0));
            assert_eq!(fallback.modifiers, event.modifiers);
        }
        let cs = resolve(&parse_list("cs").unwrap()).unwrap().remove(0);
        assert!(cpu_clock_fallback(&cs).is_none());
    }

    #[test]
    fn tool_events_open_nothing_and_print_ns() {
        let events = resolve(&parse_list("duration_time,user_time,system_time").unwrap()).unwrap();
        assert_eq!(events.len(), 3);
        for e in &events {
            assert!(e.tool.is_some());
            assert_eq!(e.unit.as_ref().map(|u| u.unit.as_str()), Some("ns"));
        }
        assert_eq!(events[0].name, "duration_time");
    }
}
