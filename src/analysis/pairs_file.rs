//! The pairs of a perf.data file (`scry record --profile`, or any file
//! with the hook tracepoints), for `scry report --profile` and the latency
//! heat map: the file's tracepoint formats from its TRACING_DATA, each
//! event's role, and every record through the same `PairsFeed` a live
//! `scry profile` runs, with each CPU's records and losses counted.
//!
//! The kernel function rows `scry record --profile` kept (scry's own
//! feature section, `data::function_rows`) join as a live run's
//! function trace does: the same `func: NAME()` rows.
//!
//! System calls pair from `raw_syscalls`, or from the per-call
//! `syscalls:sys_enter_NAME`/`sys_exit_NAME` when the file has no
//! `raw_syscalls` (with both, each call would pair twice).

use std::collections::BTreeMap;
use std::path::Path;

use linux_perf_event_reader::{EventRecord, PerfEventType};

use super::pairs::{Builtin, Hook, PairEngine};
use super::pairs_feed::{HookFieldError, PairsFeed, wanted_fields};
use super::pairs_report::{CpuStat, syscall_names};
use crate::data::handler::dispatch;
use crate::data::reader::{PerfReader, ReadError, Record};
use crate::event::format::{EventFormat, FormatError};
use crate::event::tracing_data_parse::parse_tracing_data;
use crate::symbol::{ResolveOptions, Resolver};

/// Why a file's pairs cannot be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum PairsFileError {
    /// The file (its errors name it).
    #[error("{0}")]
    Read(#[from] ReadError),
    /// No TRACING_DATA section.
    #[error(
        "{file} has no tracepoint formats (TRACING_DATA): record it with 'scry record --profile'"
    )]
    NoTracingData {
        /// The file.
        file: String,
    },
    /// The TRACING_DATA section does not parse.
    #[error("{file}: tracing data: {err}")]
    TracingData {
        /// The file.
        file: String,
        /// What is wrong in it.
        err: FormatError,
    },
    /// A hook's event is not in the file.
    #[error("{file} has no event {event} (hook '{hook}'); events in the file: {events}")]
    NoHookEvent {
        /// The file.
        file: String,
        /// The event the hook names.
        event: String,
        /// The hook's label.
        hook: String,
        /// The file's tracepoints, `system:name`, comma-separated.
        events: String,
    },
    /// Neither sched_switch nor a system call enter.
    #[error(
        "{file} holds none of the profile hooks' events (record it with 'scry record --profile')"
    )]
    NoHooks {
        /// The file.
        file: String,
    },
    /// A field the engine reads is missing.
    #[error("{0}")]
    Fields(#[from] HookFieldError),
}

/// Which tasks a file's report shows (`scry report --profile`): every task
/// unless pids, tids or command names are given; and the custom hooks
/// paired beside the built-in ones.
#[derive(Clone, Debug, Default)]
pub(crate) struct FileWatch {
    /// `-H` hooks (`scry heatmap --latency`): their events must be in the file.
    pub(crate) hooks: Vec<Hook>,
    /// These processes.
    pub(crate) pids: Vec<i32>,
    /// These threads.
    pub(crate) tids: Vec<i32>,
    /// The tasks that take these command names.
    pub(crate) comms: Vec<String>,
}

/// The pairs of a perf.data file: the feed after its last record, not yet
/// finished (`PairEngine::finish` settles the last pairs; every
/// pair kept one by one in `engine.log` when `log`), and the records seen
/// per CPU. System calls pair from `raw_syscalls`, or from the per-call
/// `syscalls:sys_enter_NAME`/`sys_exit_NAME` when the file has no
/// `raw_syscalls` (with both, each call would pair twice).
pub(crate) fn pairs_of_file(
    input: &Path,
    watch: &FileWatch,
    log: bool,
) -> Result<(PairsFeed, BTreeMap<u32, CpuStat>), PairsFileError> {
    // The reader's errors name the file.
    let mut reader = PerfReader::open(input)?;
    let file = || input.display().to_string();
    let blob = reader
        .tracing_data()
        .ok_or_else(|| PairsFileError::NoTracingData { file: file() })?;
    let tracing = parse_tracing_data(blob)
        .map_err(|err| PairsFileError::TracingData { file: file(), err })?;
    let formats: Vec<Option<EventFormat>> = reader
        .events()
        .iter()
        .map(|e| match e.attr.type_ {
            PerfEventType::Tracepoint(id) => tracing.formats.iter().find(|f| f.id == id).cloned(),
            _ => None,
        })
        .collect();
    let mut roles: Vec<Builtin> = formats
        .iter()
        .map(|f| {
            f.as_ref()
                .map_or(Builtin::Other, |f| Builtin::of(&f.system, &f.name))
        })
        .collect();
    if !roles.contains(&Builtin::SysEnter) {
        for (role, f) in roles.iter_mut().zip(&formats) {
            match f.as_ref().filter(|f| f.system == "syscalls") {
                Some(f) if f.name.starts_with("sys_enter_") => *role = Builtin::SysEnter,
                Some(f) if f.name.starts_with("sys_exit_") => *role = Builtin::SysExit,
                _ => {}
            }
        }
    }
    let hook_events = hook_events(&watch.hooks, &formats, &file)?;
    if !roles.contains(&Builtin::SchedSwitch)
        && !roles.contains(&Builtin::SysEnter)
        && hook_events.is_empty()
    {
        return Err(PairsFileError::NoHooks { file: file() });
    }
    let refs: Vec<Option<&EventFormat>> = formats.iter().map(Option::as_ref).collect();
    let wanted = wanted_fields(&refs, &hook_events)?;
    let mut engine = PairEngine::new(roles, hook_events, syscall_names());
    if log {
        engine.log = Some(Default::default());
    }
    engine.all = watch.pids.is_empty() && watch.tids.is_empty() && watch.comms.is_empty();
    engine
        .pids
        .extend(watch.pids.iter().chain(&watch.tids).copied());
    let mut resolver = Resolver::new(&ResolveOptions::default());
    if let Ok(ids) = reader.build_ids_raw() {
        resolver.set_header_build_ids(ids);
    }
    let mut feed = PairsFeed::new(engine, resolver, formats, wanted);
    let mut cpus: BTreeMap<u32, CpuStat> = BTreeMap::new();
    while let Some((record, id)) = reader.next_record_with_id()? {
        let Record::Event { attr_index, record } = record else {
            continue;
        };
        let cpu = match &record {
            EventRecord::Sample(s) => s.cpu,
            _ => id.cpu,
        };
        let lost = match &record {
            EventRecord::Lost(l) => Some(l.count),
            _ => None,
        };
        if let EventRecord::Comm(c) = &record
            && watch
                .comms
                .iter()
                .any(|w| w.as_bytes() == &*c.name.as_slice())
        {
            feed.engine.pids.insert(c.pid);
        }
        dispatch(&mut feed, attr_index, &record, &id);
        if let Some(cpu) = cpu {
            let stat = cpus.entry(cpu).or_insert(CpuStat {
                cpu,
                ..Default::default()
            });
            // The bytes the CPU's ring held for its records, as the live
            // run counts what it drains.
            stat.bytes += reader.last_record_size();
            match lost {
                Some(n) => stat.lost += n,
                None => stat.records += 1,
            }
        }
    }
    // After the records: which tasks are watched is known from them.
    if let Some(functions) = reader.function_rows()? {
        feed.add_function_rows(&functions.rows);
    }
    Ok((feed, cpus))
}

/// Each hook with the indices of its start and end events among the file's
/// (`formats`, by attribute); an event may omit its system (`sched_switch`).
fn hook_events(
    hooks: &[Hook],
    formats: &[Option<EventFormat>],
    file: &dyn Fn() -> String,
) -> Result<Vec<(Hook, usize, usize)>, PairsFileError> {
    let find = |hook: &Hook, event: &str| {
        let (system, name) = match event.split_once(':') {
            Some((system, name)) => (Some(system), name),
            None => (None, event),
        };
        formats
            .iter()
            .position(|f| {
                f.as_ref()
                    .is_some_and(|f| f.name == name && system.is_none_or(|s| s == f.system))
            })
            .ok_or_else(|| {
                let mut events: Vec<String> = formats
                    .iter()
                    .flatten()
                    .map(|f| format!("{}:{}", f.system, f.name))
                    .collect();
                events.dedup();
                PairsFileError::NoHookEvent {
                    file: file(),
                    event: event.to_string(),
                    hook: hook.label(),
                    events: if events.is_empty() {
                        "none".to_string()
                    } else {
                        events.join(", ")
                    },
                }
            })
    };
    hooks
        .iter()
        .map(|h| Ok((h.clone(), find(h, &h.start)?, find(h, &h.end)?)))
        .collect()
}
