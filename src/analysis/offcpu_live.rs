//! Feeding `OffCpuTracker` from records (live or from a file): decodes the
//! sched_switch / sched_wakeup fields it needs with the events' tracefs
//! formats, passes the samples of watched tasks to the resolver, and keeps
//! the tracker's sequence numbers in step with the resolver's samples.
//! Side-band records (tasks, switch-ins, losses) go through `feed`.

use linux_perf_event_reader::SampleRecord;

use crate::data::handler::RecordHandler;
use crate::event::format::{EventFormat, MissingField};
use crate::symbol::Resolver;

use super::feed::{SideBand, TaskTracker, TrackerFeed};
use crate::data::handler::LostTally;

use super::offcpu::{OffCpuTracker, Verdict};

/// Where the needed fields sit in each event's raw data.
#[derive(Debug)]
pub(crate) struct SchedFields {
    /// Attribute index of sched:sched_switch.
    pub(crate) switch_attr: usize,
    prev_pid: crate::event::format::Field,
    prev_state: crate::event::format::Field,
    next_pid: crate::event::format::Field,
    /// Attribute index and `pid` field of sched:sched_wakeup, if recorded.
    wakeup: Option<(usize, crate::event::format::Field)>,
}

impl SchedFields {
    pub(crate) fn new(
        switch_attr: usize,
        switch: &EventFormat,
        wakeup: Option<(usize, &EventFormat)>,
    ) -> Result<Self, MissingField> {
        Ok(SchedFields {
            switch_attr,
            prev_pid: switch.require_field("prev_pid")?,
            prev_state: switch.require_field("prev_state")?,
            next_pid: switch.require_field("next_pid")?,
            wakeup: match wakeup {
                Some((attr, f)) => Some((attr, f.require_field("pid")?)),
                None => None,
            },
        })
    }
}

/// The tracker, the resolver, and the field layout, fed record by record.
pub(crate) struct OffCpuFeed {
    pub(crate) tracker: OffCpuTracker,
    pub(crate) resolver: Resolver,
    fields: SchedFields,
    /// Samples whose raw data could not be decoded.
    pub(crate) undecodable: u64,
    /// Lost-records reports (LOST, LOST_SAMPLES) seen.
    pub(crate) lost: LostTally,
}

impl OffCpuFeed {
    pub(crate) fn new(tracker: OffCpuTracker, resolver: Resolver, fields: SchedFields) -> Self {
        OffCpuFeed {
            tracker,
            resolver,
            fields,
            undecodable: 0,
            lost: LostTally::default(),
        }
    }
}

impl TaskTracker for OffCpuTracker {
    fn seen(&mut self, cpu: u32, time: u64) {
        OffCpuTracker::seen(self, cpu, time);
    }
    fn task(&mut self, pid: i32, tid: i32, parent_pid: Option<i32>) {
        OffCpuTracker::task(self, pid, tid, parent_pid);
    }
    fn switch_in(&mut self, time: u64, _cpu: Option<u32>, tid: i32) {
        OffCpuTracker::switch_in(self, time, tid);
    }
    fn lost(&mut self, cpu: Option<u32>) {
        OffCpuTracker::lost(self, cpu);
    }
}

impl TrackerFeed for OffCpuFeed {
    type Tracker = OffCpuTracker;

    fn side_band(&mut self) -> SideBand<'_, OffCpuTracker> {
        SideBand {
            tracker: &mut self.tracker,
            names: None,
            lost: &mut self.lost,
            resolver: Some(&mut self.resolver),
        }
    }

    fn sample(&mut self, attr_index: usize, sample: &SampleRecord<'_>) {
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
                self.fields.prev_pid.int(&raw),
                self.fields.prev_state.int(&raw),
                self.fields.next_pid.int(&raw),
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
            match pid_field.int(&raw) {
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
            self.resolver.handle_sample(attr_index, sample);
        }
    }
}
