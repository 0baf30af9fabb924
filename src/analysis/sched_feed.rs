//! Feeding `SchedTracker` from records, live or from a perf.data file (a
//! `perf sched record` file too): decodes sched_switch and wakeup fields
//! with each event's format, takes switch-ins from context-switch records
//! and passes lost-records reports on.

use std::collections::BTreeMap;

use linux_perf_event_reader::{CommonData, ContextSwitchRecord, EventRecord, RecordType};

use crate::event::format::{Endian, EventFormat, Field, FieldValue};

use super::sched::SchedTracker;

/// What an event is to the tracker.
#[derive(Debug)]
enum Role {
    Switch {
        prev_pid: Field,
        prev_state: Field,
        next_pid: Field,
    },
    Wakeup {
        pid: Field,
    },
    Other,
}

fn int(field: &Field, raw: &[u8]) -> Option<u64> {
    match field.value(raw, Endian::host())? {
        FieldValue::Int { value, .. } => Some(value),
        FieldValue::Bytes { .. } => None,
    }
}

/// The tracker and the field layout of each event, fed record by record.
pub struct SchedFeed {
    pub tracker: SchedTracker,
    roles: Vec<Role>,
    pub undecodable: u64,
    /// Task names by tid, from COMM records.
    pub comms: BTreeMap<i32, String>,
    /// Lost-records reports seen, and the records they say were lost.
    pub lost_reports: u64,
    pub lost: u64,
}

impl SchedFeed {
    /// `formats`: per attribute index, its tracepoint format if any. Wakeups
    /// are sched_wakeup and sched_wakeup_new, or sched_waking where the
    /// input has no sched_wakeup (what `perf sched record` takes).
    pub fn new(tracker: SchedTracker, formats: &[Option<&EventFormat>]) -> Result<Self, String> {
        let has_wakeup = formats
            .iter()
            .flatten()
            .any(|f| f.system == "sched" && f.name == "sched_wakeup");
        let field = |f: &EventFormat, name: &str| {
            f.field(name)
                .cloned()
                .ok_or_else(|| format!("{} has no field '{name}'", f.full_name()))
        };
        let mut roles = Vec::new();
        for format in formats {
            let role = match format {
                Some(f) if f.system == "sched" && f.name == "sched_switch" => Role::Switch {
                    prev_pid: field(f, "prev_pid")?,
                    prev_state: field(f, "prev_state")?,
                    next_pid: field(f, "next_pid")?,
                },
                Some(f)
                    if f.system == "sched"
                        && (f.name == "sched_wakeup"
                            || f.name == "sched_wakeup_new"
                            || (f.name == "sched_waking" && !has_wakeup)) =>
                {
                    Role::Wakeup {
                        pid: field(f, "pid")?,
                    }
                }
                _ => Role::Other,
            };
            roles.push(role);
        }
        if !roles.iter().any(|r| matches!(r, Role::Switch { .. })) {
            return Err("no sched:sched_switch events".into());
        }
        Ok(SchedFeed {
            tracker,
            roles,
            undecodable: 0,
            comms: BTreeMap::new(),
            lost_reports: 0,
            lost: 0,
        })
    }

    /// One record, in time order; `id`: its sample_id fields (for
    /// non-sample records).
    pub fn handle_record(&mut self, attr_index: usize, record: &EventRecord<'_>, id: &CommonData) {
        let EventRecord::Sample(sample) = record else {
            if let (Some(cpu), Some(time)) = (id.cpu, id.timestamp) {
                self.tracker.seen(cpu, time);
            }
            match record {
                EventRecord::Comm(c) => {
                    self.tracker.task(c.pid, c.tid, None);
                    self.comms.insert(
                        c.tid,
                        String::from_utf8_lossy(&c.name.as_slice()).into_owned(),
                    );
                }
                EventRecord::Fork(f) => {
                    self.tracker.task(f.pid, f.tid, Some(f.ppid));
                    // A new thread has its creator's name until it sets one.
                    if let Some(name) = self.comms.get(&f.ptid).cloned() {
                        self.comms.insert(f.tid, name);
                    }
                }
                EventRecord::ContextSwitch(switch) => {
                    let tid = match switch {
                        ContextSwitchRecord::In { .. } => id.tid,
                        ContextSwitchRecord::Out { next_tid, .. } => *next_tid,
                    };
                    if let (Some(time), Some(cpu), Some(tid)) = (id.timestamp, id.cpu, tid) {
                        self.tracker.switch_in(time, cpu, tid);
                    }
                }
                EventRecord::Lost(l) => {
                    self.lost_reports += 1;
                    self.lost += l.count;
                    self.tracker.lost(id.cpu);
                }
                EventRecord::Raw(raw) if raw.record_type == RecordType::LOST_SAMPLES => {
                    let n = raw.data.as_slice();
                    self.lost_reports += 1;
                    self.lost += n
                        .get(..8)
                        .and_then(|b| b.try_into().ok())
                        .map_or(0, u64::from_ne_bytes);
                    self.tracker.lost(id.cpu);
                }
                _ => {}
            }
            return;
        };
        let time = sample.timestamp.unwrap_or(0);
        let cpu = sample.cpu.unwrap_or(0);
        self.tracker.seen(cpu, time);
        let Some(raw) = sample.raw.map(|r| r.as_slice()) else {
            self.undecodable += 1;
            return;
        };
        match self.roles.get(attr_index) {
            Some(Role::Switch {
                prev_pid,
                prev_state,
                next_pid,
            }) => match (
                int(prev_pid, &raw),
                int(prev_state, &raw),
                int(next_pid, &raw),
            ) {
                (Some(prev), Some(state), Some(next)) => {
                    self.tracker
                        .switch(time, cpu, prev as i32, state, next as i32)
                }
                _ => self.undecodable += 1,
            },
            Some(Role::Wakeup { pid }) => match int(pid, &raw) {
                Some(pid) => self.tracker.wakeup(time, pid as i32),
                None => self.undecodable += 1,
            },
            _ => {}
        }
    }
}
