//! Feeding `OffCpuTracker` from records (live or from a file): decodes the
//! sched_switch / sched_wakeup fields it needs with the events' tracefs
//! formats, passes side-band records and the samples of watched tasks to
//! the resolver, and keeps the tracker's sequence numbers in step with the
//! resolver's samples. Context-switch records give switch-ins; lost-records
//! reports drop what they may have reached.

use linux_perf_event_reader::{CommonData, ContextSwitchRecord, EventRecord, RecordType};

use crate::event::format::{Endian, EventFormat, FieldValue};
use crate::symbol::Resolver;

use super::offcpu::{OffCpuTracker, Verdict};

/// Where the needed fields sit in each event's raw data.
#[derive(Debug)]
pub struct SchedFields {
    /// Attribute index of sched:sched_switch.
    pub switch_attr: usize,
    prev_pid: crate::event::format::Field,
    prev_state: crate::event::format::Field,
    next_pid: crate::event::format::Field,
    /// Attribute index and `pid` field of sched:sched_wakeup, if recorded.
    wakeup: Option<(usize, crate::event::format::Field)>,
}

impl SchedFields {
    pub fn new(
        switch_attr: usize,
        switch: &EventFormat,
        wakeup: Option<(usize, &EventFormat)>,
    ) -> Result<Self, String> {
        let field = |f: &EventFormat, name: &str| {
            f.field(name)
                .cloned()
                .ok_or_else(|| format!("{} has no field '{name}'", f.full_name()))
        };
        Ok(SchedFields {
            switch_attr,
            prev_pid: field(switch, "prev_pid")?,
            prev_state: field(switch, "prev_state")?,
            next_pid: field(switch, "next_pid")?,
            wakeup: match wakeup {
                Some((attr, f)) => Some((attr, field(f, "pid")?)),
                None => None,
            },
        })
    }
}

fn int(field: &crate::event::format::Field, raw: &[u8]) -> Option<u64> {
    match field.value(raw, Endian::host())? {
        FieldValue::Int { value, .. } => Some(value),
        FieldValue::Bytes { .. } => None,
    }
}

/// The tracker, the resolver, and the field layout, fed record by record.
pub struct OffCpuFeed {
    pub tracker: OffCpuTracker,
    pub resolver: Resolver,
    fields: SchedFields,
    /// Samples whose raw data could not be decoded.
    pub undecodable: u64,
    /// Lost-records reports (LOST, LOST_SAMPLES) seen.
    pub lost_records: u64,
}

impl OffCpuFeed {
    pub fn new(tracker: OffCpuTracker, resolver: Resolver, fields: SchedFields) -> Self {
        OffCpuFeed {
            tracker,
            resolver,
            fields,
            undecodable: 0,
            lost_records: 0,
        }
    }

    /// One record, in time order; `id`: its sample_id fields (time, tid,
    /// cpu), needed for context-switch and lost records.
    pub fn handle_record(&mut self, attr_index: usize, record: &EventRecord<'_>, id: &CommonData) {
        let EventRecord::Sample(sample) = record else {
            if let (Some(cpu), Some(time)) = (id.cpu, id.timestamp) {
                self.tracker.seen(cpu, time);
            }
            match record {
                EventRecord::Comm(c) => self.tracker.task(c.pid, c.tid, None),
                EventRecord::Fork(f) => self.tracker.task(f.pid, f.tid, Some(f.ppid)),
                EventRecord::ContextSwitch(switch) => {
                    let tid = match switch {
                        ContextSwitchRecord::In { .. } => id.tid,
                        ContextSwitchRecord::Out { next_tid, .. } => *next_tid,
                    };
                    if let (Some(time), Some(tid)) = (id.timestamp, tid) {
                        self.tracker.switch_in(time, tid);
                    }
                    return;
                }
                EventRecord::Lost(_) => {
                    self.lost_records += 1;
                    self.tracker.lost(id.cpu);
                }
                EventRecord::Raw(raw) if raw.record_type == RecordType::LOST_SAMPLES => {
                    self.lost_records += 1;
                    self.tracker.lost(id.cpu);
                }
                _ => {}
            }
            self.resolver.handle_record(attr_index, record);
            return;
        };
        let time = sample.timestamp.unwrap_or(0);
        if let Some(cpu) = sample.cpu {
            self.tracker.seen(cpu, time);
        }
        let Some(raw) = sample.raw.map(|r| r.as_slice()) else {
            self.undecodable += 1;
            return;
        };
        let verdict = if attr_index == self.fields.switch_attr {
            match (
                int(&self.fields.prev_pid, &raw),
                int(&self.fields.prev_state, &raw),
                int(&self.fields.next_pid, &raw),
            ) {
                (Some(prev), Some(state), Some(next)) => {
                    self.tracker.switch(time, prev as i32, state, next as i32)
                }
                _ => {
                    self.undecodable += 1;
                    Verdict::Skip
                }
            }
        } else if let Some((wake_attr, pid_field)) = &self.fields.wakeup
            && attr_index == *wake_attr
        {
            match int(pid_field, &raw) {
                Some(pid) => self.tracker.wakeup(pid as i32),
                None => {
                    self.undecodable += 1;
                    Verdict::Skip
                }
            }
        } else {
            Verdict::Skip
        };
        if verdict == Verdict::Resolve {
            self.resolver.handle_record(attr_index, record);
        }
    }
}
