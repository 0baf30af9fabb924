//! Feeding `PairEngine` from records, live or from a perf.data file (one
//! consumer for both): decodes the fields the engine reads from each
//! tracepoint sample with its event's format and hands the samples whose
//! stacks the engine keeps to the resolver; side-band records (tasks,
//! thread names, switch-ins, losses) go through `feed`.

use std::collections::HashMap;

use linux_perf_event_reader::SampleRecord;

use crate::data::function_rows::FunctionRow;
use crate::data::handler::RecordHandler;
use crate::data::threads::ThreadNames;
use crate::event::format::{EventFormat, FieldKind, MissingField};
use crate::symbol::Resolver;

use super::feed::{SideBand, TaskTracker, TrackerFeed};
use super::pairs::{Hook, Occurrence, PairEngine, Want};
use crate::data::handler::LostTally;

/// Fields the built-in hooks read, wherever an event has them.
const BUILTIN_FIELDS: &[&str] = &[
    "prev_pid",
    "prev_state",
    "next_pid",
    "pid",
    "id",
    // syscalls:sys_enter_NAME and sys_exit_NAME's number.
    "__syscall_nr",
    "irq",
    "vec",
];

/// Why a hook's match or pid field cannot be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum HookFieldError {
    /// The hook's event is not a tracepoint with a format.
    #[error("no format for the event of hook '{hook}'")]
    NoFormat { hook: String },
    /// The event has no such field.
    #[error("event {0}")]
    Missing(MissingField),
    /// The field is a string or an array.
    #[error("field '{field}' of {event} is not a number and cannot be matched")]
    NotANumber { event: String, field: String },
}

/// Per event (by index into `formats`): the fields its samples must yield.
/// Checks the custom hooks' match and pid fields: each must exist and be a
/// number; the error names the field and the event.
pub(crate) fn wanted_fields(
    formats: &[Option<&EventFormat>],
    hooks: &[(Hook, usize, usize)],
) -> Result<Vec<Vec<String>>, HookFieldError> {
    let mut wanted: Vec<Vec<String>> = formats
        .iter()
        .map(|f| {
            BUILTIN_FIELDS
                .iter()
                .filter(|n| f.is_some_and(|f| f.field(n).is_some()))
                .map(|n| n.to_string())
                .collect()
        })
        .collect();
    for (hook, start, end) in hooks {
        for (field, event) in [
            (&hook.start_match, *start),
            (&hook.start_pid, *start),
            (&hook.end_match, *end),
        ] {
            let Some(field) = field else { continue };
            let Some(format) = formats.get(event).copied().flatten() else {
                return Err(HookFieldError::NoFormat { hook: hook.label() });
            };
            let Some(f) = format.field(field) else {
                return Err(HookFieldError::Missing(MissingField {
                    event: format.full_name(),
                    field: field.clone(),
                }));
            };
            if !matches!(f.kind, FieldKind::Scalar) {
                return Err(HookFieldError::NotANumber {
                    event: format.full_name(),
                    field: field.clone(),
                });
            }
            wanted[event].push(field.clone());
        }
    }
    Ok(wanted)
}

/// The engine, the resolver and the field layout, fed record by record.
pub(crate) struct PairsFeed {
    pub(crate) engine: PairEngine,
    pub(crate) resolver: Resolver,
    /// Per attribute index: its format, if it is a tracepoint.
    formats: Vec<Option<EventFormat>>,
    wanted: Vec<Vec<String>>,
    /// (attribute, event): attributes the engine sees as another one's
    /// event (one tracepoint opened twice, with complementary filters).
    aliases: Vec<(usize, usize)>,
    /// Task names by tid, from COMM and FORK records.
    pub(crate) comms: ThreadNames,
    /// Samples without decodable fields.
    pub(crate) undecodable: u64,
    /// Lost-records reports seen (LOST, LOST_SAMPLES records).
    pub(crate) lost: LostTally,
}

impl PairsFeed {
    pub(crate) fn new(
        engine: PairEngine,
        resolver: Resolver,
        formats: Vec<Option<EventFormat>>,
        wanted: Vec<Vec<String>>,
    ) -> Self {
        PairsFeed {
            engine,
            resolver,
            formats,
            wanted,
            aliases: Vec::new(),
            comms: ThreadNames::default(),
            undecodable: 0,
            lost: LostTally::default(),
        }
    }

    /// Attribute `attr` is event `event` for the engine (its format and
    /// wanted fields are still its own).
    pub(crate) fn alias(&mut self, attr: usize, event: usize) {
        self.aliases.push((attr, event));
    }

    /// The function tracer's `trace` text summed per task and function
    /// (`funcgraph::sum_trace`), the watched tasks' sums joined to the
    /// engine's as `func: NAME()` rows.
    pub(crate) fn add_function_trace(&mut self, text: &str) {
        for ((tid, func), stat) in super::funcgraph::sum_trace(text) {
            if self.engine.watched(tid) {
                self.engine.add_function(tid, &func, &stat);
            }
        }
    }

    /// The rows a `scry record --profile` file kept of the same trace
    /// (summed by [`super::funcgraph::function_rows`] when it was
    /// recorded), added as [`PairsFeed::add_function_trace`] adds a live
    /// run's: the same `func: NAME()` rows of the watched tasks.
    pub(crate) fn add_function_rows(&mut self, rows: &[FunctionRow]) {
        for row in rows {
            if self.engine.watched(row.tid) {
                let stat = super::pairs::PairStat::from_sums(row.sums);
                self.engine.add_function(row.tid, &row.function, &stat);
            }
        }
    }
}

impl TaskTracker for PairEngine {
    fn seen(&mut self, cpu: u32, time: u64) {
        PairEngine::seen(self, cpu, time);
    }
    fn task(&mut self, pid: i32, tid: i32, parent_pid: Option<i32>) {
        PairEngine::task(self, pid, tid, parent_pid);
    }
    fn switch_in(&mut self, time: u64, cpu: Option<u32>, tid: i32) {
        if let Some(cpu) = cpu {
            PairEngine::switch_in(self, time, cpu, tid);
        }
    }
    fn lost(&mut self, cpu: Option<u32>) {
        PairEngine::lost(self, cpu);
    }
}

impl TrackerFeed for PairsFeed {
    type Tracker = PairEngine;

    fn side_band(&mut self) -> SideBand<'_, PairEngine> {
        SideBand {
            tracker: &mut self.engine,
            names: Some(&mut self.comms),
            lost: &mut self.lost,
            resolver: Some(&mut self.resolver),
        }
    }

    fn sample(&mut self, attr_index: usize, sample: &SampleRecord<'_>) {
        let time = sample.timestamp.unwrap_or(0);
        let cpu = sample.cpu.unwrap_or(0);
        self.engine.seen(cpu, time);
        let (Some(raw), Some(Some(format)), Some(wanted)) = (
            sample.raw.map(|r| r.as_slice()),
            self.formats.get(attr_index),
            self.wanted.get(attr_index),
        ) else {
            self.undecodable += 1;
            return;
        };
        let mut fields: HashMap<&str, u64> = HashMap::new();
        for name in wanted {
            if let Some(value) = format.field(name).and_then(|f| f.int(&raw)) {
                fields.insert(name.as_str(), value);
            }
        }
        let event = self
            .aliases
            .iter()
            .find(|(attr, _)| *attr == attr_index)
            .map_or(attr_index, |&(_, event)| event);
        let occurrence = Occurrence {
            event,
            time,
            cpu,
            tid: sample.tid.unwrap_or(-1),
            fields: &fields,
        };
        if self.engine.handle(&occurrence) == Want::Stack {
            self.resolver.handle_sample(attr_index, sample);
        }
    }
}
