//! Feeding `SchedTracker` from records, live or from a perf.data file (a
//! `perf sched record` file too): decodes sched_switch and wakeup fields
//! with each event's format; side-band records (tasks, thread names,
//! switch-ins, losses) go through `feed`.

use linux_perf_event_reader::SampleRecord;

use crate::data::threads::ThreadNames;
use crate::event::format::{EventFormat, Field, MissingField};

use super::feed::{SideBand, TaskTracker, TrackerFeed};
use super::sched::SchedTracker;
use crate::data::handler::LostTally;

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

/// The tracker and the field layout of each event, fed record by record.
pub(crate) struct SchedFeed {
    pub(crate) tracker: SchedTracker,
    roles: Vec<Role>,
    pub(crate) undecodable: u64,
    /// Task names by tid, from COMM and FORK records.
    pub(crate) comms: ThreadNames,
    /// Lost-records reports seen, and the records they say were lost.
    pub(crate) lost: LostTally,
}

/// Why the scheduler analysis cannot read the input's events.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SchedFeedError {
    /// A sched event without a field the analysis reads.
    #[error(transparent)]
    Field(#[from] MissingField),
    /// Nothing to analyse.
    #[error("no sched:sched_switch events")]
    NoSwitch,
}

impl SchedFeed {
    /// `formats`: per attribute index, its tracepoint format if any. Wakeups
    /// are sched_wakeup and sched_wakeup_new, or sched_waking where the
    /// input has no sched_wakeup (what `perf sched record` takes).
    pub(crate) fn new(
        tracker: SchedTracker,
        formats: &[Option<&EventFormat>],
    ) -> Result<Self, SchedFeedError> {
        let has_wakeup = formats
            .iter()
            .flatten()
            .any(|f| f.system == "sched" && f.name == "sched_wakeup");
        let mut roles = Vec::new();
        for format in formats {
            let role = match format {
                Some(f) if f.system == "sched" && f.name == "sched_switch" => Role::Switch {
                    prev_pid: f.require_field("prev_pid")?,
                    prev_state: f.require_field("prev_state")?,
                    next_pid: f.require_field("next_pid")?,
                },
                Some(f)
                    if f.system == "sched"
                        && (f.name == "sched_wakeup"
                            || f.name == "sched_wakeup_new"
                            || (f.name == "sched_waking" && !has_wakeup)) =>
                {
                    Role::Wakeup {
                        pid: f.require_field("pid")?,
                    }
                }
                _ => Role::Other,
            };
            roles.push(role);
        }
        if !roles.iter().any(|r| matches!(r, Role::Switch { .. })) {
            return Err(SchedFeedError::NoSwitch);
        }
        Ok(SchedFeed {
            tracker,
            roles,
            undecodable: 0,
            comms: ThreadNames::default(),
            lost: LostTally::default(),
        })
    }
}

impl TaskTracker for SchedTracker {
    fn seen(&mut self, cpu: u32, time: u64) {
        SchedTracker::seen(self, cpu, time);
    }
    fn task(&mut self, pid: i32, tid: i32, parent_pid: Option<i32>) {
        SchedTracker::task(self, pid, tid, parent_pid);
    }
    fn forked(&mut self, time: u64, tid: i32) {
        SchedTracker::forked(self, time, tid);
    }
    fn switch_in(&mut self, time: u64, cpu: Option<u32>, tid: i32) {
        if let Some(cpu) = cpu {
            SchedTracker::switch_in(self, time, cpu, tid);
        }
    }
    fn lost(&mut self, cpu: Option<u32>) {
        SchedTracker::lost(self, cpu);
    }
}

impl TrackerFeed for SchedFeed {
    type Tracker = SchedTracker;

    fn side_band(&mut self) -> SideBand<'_, SchedTracker> {
        SideBand {
            tracker: &mut self.tracker,
            names: Some(&mut self.comms),
            lost: &mut self.lost,
            resolver: None,
        }
    }

    fn sample(&mut self, attr_index: usize, sample: &SampleRecord<'_>) {
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
            }) => match (prev_pid.int(&raw), prev_state.int(&raw), next_pid.int(&raw)) {
                (Some(prev), Some(state), Some(next)) => {
                    self.tracker
                        .switch(time, cpu, prev as i32, state, next as i32)
                }
                _ => self.undecodable += 1,
            },
            Some(Role::Wakeup { pid }) => match pid.int(&raw) {
                Some(pid) => self.tracker.wakeup(time, pid as i32),
                None => self.undecodable += 1,
            },
            _ => {}
        }
    }
}
