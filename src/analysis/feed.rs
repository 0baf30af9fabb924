//! What the three tracepoint feeds (`offcpu_live`, `sched_feed`,
//! `pairs_feed`) share, written once: their handling of every record but
//! samples. A feed implements [`TrackerFeed`] (its tracker, its side-band
//! state, its samples) and gets the record pipeline's `RecordHandler` from
//! the blanket impl here, for file and live input alike.
//!
//! For each non-sample record, in time order: the tracker learns that its
//! CPU reached its time (`seen`); COMM and FORK tell it about tasks and
//! name threads (`data::threads`); a context switch gives the thread
//! switched in; both kinds of loss report are tallied the same way and
//! passed on with their CPU; and everything but switches reaches the
//! feed's resolver, if it has one (its process model).

use linux_perf_event_reader::{
    CommonData, ContextSwitchRecord, EventRecord, ForkOrExitRecord, SampleRecord,
};

use crate::data::handler::{Comm, Lost, LostTally, Mmap, RecordHandler, switched_in};
use crate::data::threads::ThreadNames;
use crate::symbol::Resolver;

/// A tracker of tasks fed by a [`TrackerFeed`].
pub(crate) trait TaskTracker {
    /// `cpu` has reached `time` (every record, in time order).
    fn seen(&mut self, cpu: u32, time: u64);
    /// Task `tid` of process `pid` exists (made by `parent_pid`, on FORK).
    fn task(&mut self, pid: i32, tid: i32, parent_pid: Option<i32>);
    /// Task `tid` was made at `time` (a FORK record): it ran no sooner.
    fn forked(&mut self, _time: u64, _tid: i32) {}
    /// `tid` was switched in on `cpu` at `time` (a context-switch record).
    fn switch_in(&mut self, time: u64, cpu: Option<u32>, tid: i32);
    /// Records of `cpu` were lost: what they may have reached is dropped.
    fn lost(&mut self, cpu: Option<u32>);
}

/// A feed's side-band state, borrowed for one record.
pub(crate) struct SideBand<'a, T> {
    pub(crate) tracker: &'a mut T,
    /// Thread names, for feeds that print them.
    pub(crate) names: Option<&'a mut ThreadNames>,
    pub(crate) lost: &'a mut LostTally,
    /// The resolver of feeds that keep stacks.
    pub(crate) resolver: Option<&'a mut Resolver>,
}

/// An analysis feed: its side band, and what it does with samples.
pub(crate) trait TrackerFeed {
    type Tracker: TaskTracker;
    fn side_band(&mut self) -> SideBand<'_, Self::Tracker>;
    /// One sample, in time order.
    fn sample(&mut self, attr_index: usize, sample: &SampleRecord<'_>);
}

impl<T: TaskTracker> SideBand<'_, T> {
    /// Every non-sample record: its CPU reached its time.
    fn seen(&mut self, id: &CommonData) -> &mut Self {
        if let (Some(cpu), Some(time)) = (id.cpu, id.timestamp) {
            self.tracker.seen(cpu, time);
        }
        self
    }

    fn resolver(&mut self) -> Option<&mut Resolver> {
        self.resolver.as_deref_mut()
    }
}

impl<F: TrackerFeed> RecordHandler for F {
    fn handle_sample(&mut self, attr_index: usize, sample: &SampleRecord<'_>) {
        self.sample(attr_index, sample);
    }

    fn handle_mmap(&mut self, attr_index: usize, mmap: &Mmap<'_>, id: &CommonData) {
        if let Some(r) = self.side_band().seen(id).resolver() {
            r.handle_mmap(attr_index, mmap, id);
        }
    }

    fn handle_comm(&mut self, attr_index: usize, comm: &Comm<'_>, id: &CommonData) {
        let mut side = self.side_band();
        side.seen(id).tracker.task(comm.pid, comm.tid, None);
        if let Some(names) = side.names.as_deref_mut() {
            names.set(comm.tid, comm.name);
        }
        if let Some(r) = side.resolver() {
            r.handle_comm(attr_index, comm, id);
        }
    }

    fn handle_fork(&mut self, attr_index: usize, fork: &ForkOrExitRecord, id: &CommonData) {
        let mut side = self.side_band();
        side.seen(id)
            .tracker
            .task(fork.pid, fork.tid, Some(fork.ppid));
        if let Some(time) = id.timestamp {
            side.tracker.forked(time, fork.tid);
        }
        if let Some(names) = side.names.as_deref_mut() {
            names.fork(fork.tid, fork.ptid);
        }
        if let Some(r) = side.resolver() {
            r.handle_fork(attr_index, fork, id);
        }
    }

    fn handle_exit(&mut self, _attr_index: usize, _exit: &ForkOrExitRecord, id: &CommonData) {
        self.side_band().seen(id);
    }

    fn handle_lost(&mut self, lost: &Lost, id: &CommonData) {
        let mut side = self.side_band();
        side.seen(id);
        side.lost.add(lost);
        side.tracker.lost(id.cpu);
        if let Some(r) = side.resolver() {
            r.handle_lost(lost, id);
        }
    }

    fn handle_switch(&mut self, switch: &ContextSwitchRecord, id: &CommonData) {
        let mut side = self.side_band();
        side.seen(id);
        if let (Some(time), Some(tid)) = (id.timestamp, switched_in(switch, id)) {
            side.tracker.switch_in(time, id.cpu, tid);
        }
    }

    fn handle_other(&mut self, _attr_index: usize, _record: &EventRecord<'_>, id: &CommonData) {
        self.side_band().seen(id);
    }
}
