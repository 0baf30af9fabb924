//! Feeding `PairEngine` from records, live or from a perf.data file (one
//! consumer for both): decodes the fields the engine reads from each
//! tracepoint sample with its event's format, hands side-band records and
//! the samples whose stacks the engine keeps to the resolver, and passes
//! context-switch and lost-records reports on to the engine.

use std::collections::{BTreeMap, HashMap};

use linux_perf_event_reader::{CommonData, ContextSwitchRecord, EventRecord, RecordType};

use crate::event::format::{Endian, EventFormat, FieldKind, FieldValue};
use crate::symbol::Resolver;

use super::pairs::{Hook, Occurrence, PairEngine, Want};

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

/// Per event (by index into `formats`): the fields its samples must yield.
/// Checks the custom hooks' match and pid fields: each must exist and be a
/// number; the error names the field and the event.
pub fn wanted_fields(
    formats: &[Option<&EventFormat>],
    hooks: &[(Hook, usize, usize)],
) -> Result<Vec<Vec<String>>, String> {
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
                return Err(format!(
                    "no format for the event of hook '{}'",
                    hook.label()
                ));
            };
            let Some(f) = format.field(field) else {
                return Err(format!(
                    "event {} has no field '{field}'",
                    format.full_name()
                ));
            };
            if !matches!(f.kind, FieldKind::Scalar) {
                return Err(format!(
                    "field '{field}' of {} is not a number and cannot be matched",
                    format.full_name()
                ));
            }
            wanted[event].push(field.clone());
        }
    }
    Ok(wanted)
}

/// The engine, the resolver and the field layout, fed record by record.
pub struct PairsFeed {
    pub engine: PairEngine,
    pub resolver: Resolver,
    /// Per attribute index: its format, if it is a tracepoint.
    formats: Vec<Option<EventFormat>>,
    wanted: Vec<Vec<String>>,
    /// (attribute, event): attributes the engine sees as another one's
    /// event (one tracepoint opened twice, with complementary filters).
    aliases: Vec<(usize, usize)>,
    /// Task names by tid, from COMM records.
    pub comms: BTreeMap<i32, String>,
    /// Samples without decodable fields.
    pub undecodable: u64,
    /// Lost-records reports seen (LOST, LOST_SAMPLES records).
    pub lost_reports: u64,
}

impl PairsFeed {
    pub fn new(
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
            comms: BTreeMap::new(),
            undecodable: 0,
            lost_reports: 0,
        }
    }

    /// Attribute `attr` is event `event` for the engine (its format and
    /// wanted fields are still its own).
    pub fn alias(&mut self, attr: usize, event: usize) {
        self.aliases.push((attr, event));
    }

    /// One record, in time order; `id`: its sample_id fields (time, tid,
    /// cpu), needed for context-switch and lost records.
    pub fn handle_record(&mut self, attr_index: usize, record: &EventRecord<'_>, id: &CommonData) {
        let EventRecord::Sample(sample) = record else {
            if let (Some(cpu), Some(time)) = (id.cpu, id.timestamp) {
                self.engine.seen(cpu, time);
            }
            match record {
                EventRecord::Comm(c) => {
                    self.engine.task(c.pid, c.tid, None);
                    self.comms.insert(
                        c.tid,
                        String::from_utf8_lossy(&c.name.as_slice()).into_owned(),
                    );
                }
                EventRecord::Fork(f) => self.engine.task(f.pid, f.tid, Some(f.ppid)),
                EventRecord::ContextSwitch(switch) => {
                    let tid = match switch {
                        ContextSwitchRecord::In { .. } => id.tid,
                        ContextSwitchRecord::Out { next_tid, .. } => *next_tid,
                    };
                    if let (Some(time), Some(cpu), Some(tid)) = (id.timestamp, id.cpu, tid) {
                        self.engine.switch_in(time, cpu, tid);
                    }
                    return;
                }
                EventRecord::Lost(_) => {
                    self.lost_reports += 1;
                    self.engine.lost(id.cpu);
                }
                EventRecord::Raw(raw) if raw.record_type == RecordType::LOST_SAMPLES => {
                    self.lost_reports += 1;
                    self.engine.lost(id.cpu);
                }
                _ => {}
            }
            self.resolver.handle_record(attr_index, record);
            return;
        };
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
            if let Some(field) = format.field(name)
                && let Some(FieldValue::Int { value, .. }) = field.value(&raw, Endian::host())
            {
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
            self.resolver.handle_record(attr_index, record);
        }
    }
}
