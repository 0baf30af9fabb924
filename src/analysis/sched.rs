//! Scheduler timelines from sched_switch, sched_wakeup(_new) and switch-in
//! indications: the run-queue latency histogram (bcc's runqlat: from a
//! wakeup, or a preemption, to the switch-in, log2 buckets of µs) and per
//! switch-out timeline rows (perf sched timehist: wait time, scheduling
//! delay, run time).
//!
//! Switch-ins are the first of the tracepoint's `next_pid` and the
//! context-switch records (as in `offcpu`): the kernel does not emit every
//! switch (on the 6.18 VM the tests run on, ftrace and perf alike never see
//! one out of PID 1's tokio-rt-worker threads, and sometimes miss one out
//! of the idle task). A wakeup of a task that is on a CPU is no
//! run-queue wait and is not counted. Every switch-out of a watched task
//! makes one row (as perf prints one per sched_switch); pieces the input
//! did not show (a switch-in before the recording) are `None`. A run whose
//! switch-in the input lacks (no switch emitted, no context-switch
//! records) starts at the latest moment the input allows: the CPU's
//! previous sched_switch (perf sched timehist's start), or the task's own
//! switch-out, wakeup or fork if later; its row says so
//! (`start_inferred`). Such a run holds the task's time on the CPU and
//! whatever ran before it unseen (the hidden task's run, an idle gap), no
//! more. It may begin where the task's previous run ended (its own
//! switch-out), on the same CPU or another.
//!
//! Lost records: task states are forgotten and finished latencies and rows
//! a loss window may reach are dropped (`settle`), counted in
//! `lost_dropped`: nothing is stretched.

use std::collections::HashMap;

use super::hist::Histogram;
use super::offcpu::{Watch, state_letter};
use super::settle::Settle;

/// One switch-out of a watched task (perf sched timehist's line).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub(crate) struct TimehistRow {
    /// When it switched out, ns.
    pub(crate) time: u64,
    pub(crate) cpu: u32,
    pub(crate) tid: i32,
    pub(crate) pid: i32,
    /// Off CPU before this run: last switch-out to this switch-in, ns.
    pub(crate) wait: Option<u64>,
    /// Runnable before this run: wakeup or preemption to switch-in, ns.
    pub(crate) delay: Option<u64>,
    /// This run: switch-in to switch-out, ns.
    pub(crate) run: Option<u64>,
    /// The input lacks this run's switch-in: `run` starts at the latest
    /// moment the input allows, so the task ran for at most `run`.
    pub(crate) start_inferred: bool,
    /// The state it left in (R S D ...).
    pub(crate) state: char,
}

#[derive(Debug, Default)]
struct TaskState {
    /// Last switch-out time.
    out: Option<u64>,
    /// Runnable since (woken or preempted), not yet on a CPU.
    ready: Option<u64>,
    /// On a CPU since, and which.
    on: Option<(u64, u32)>,
    /// This run's wait and delay, found at its switch-in.
    wait: Option<u64>,
    delay: Option<u64>,
    /// Made at (its FORK record).
    born: Option<u64>,
}

#[derive(Debug)]
enum Finished {
    Latency(u64),
    Row(TimehistRow),
}

/// The tracker; see the module doc.
#[derive(Debug, Default)]
pub(crate) struct SchedTracker {
    pub(crate) watch: Watch,
    tgid: HashMap<i32, i32>,
    tasks: HashMap<i32, TaskState>,
    /// The last sched_switch seen on each CPU, ns.
    cpu_switch: HashMap<u32, u64>,
    /// Keep timeline rows (`timehist`), not only the histogram.
    pub(crate) keep_rows: bool,
    /// Run-queue latency, log2 buckets of `runqlat.unit` (usecs or msecs).
    pub(crate) runqlat: Histogram,
    /// Nanoseconds per unit of `runqlat`.
    ns_per_unit: u64,
    pub(crate) rows: Vec<TimehistRow>,
    settle: Settle<Finished>,
    pub(crate) lost_dropped: u64,
}

impl SchedTracker {
    pub(crate) fn new(watch: Watch, keep_rows: bool) -> Self {
        SchedTracker {
            watch,
            keep_rows,
            runqlat: Histogram::log2("usecs"),
            ns_per_unit: 1000,
            ..Default::default()
        }
    }

    /// The histogram in milliseconds (bcc's `-m`), not microseconds.
    pub(crate) fn in_milliseconds(mut self) -> Self {
        self.runqlat.unit = "msecs".to_string();
        self.ns_per_unit = 1_000_000;
        self
    }

    /// A COMM or FORK record (forks of watched processes are watched).
    pub(crate) fn task(&mut self, pid: i32, tid: i32, parent_pid: Option<i32>) {
        self.watch.task(&mut self.tgid, pid, tid, parent_pid);
    }

    /// Task `tid` was made at `time`.
    pub(crate) fn forked(&mut self, time: u64, tid: i32) {
        if self.watched(tid) {
            self.tasks.entry(tid).or_default().born = Some(time);
        }
    }

    fn watched(&self, tid: i32) -> bool {
        self.watch.covers(&self.tgid, tid)
    }

    fn apply(&mut self, f: Finished) {
        match f {
            Finished::Latency(ns) => self.runqlat.add(ns / self.ns_per_unit.max(1)),
            Finished::Row(row) => self.rows.push(row),
        }
    }

    /// Any record of `cpu` at `time` (moves the loss windows on).
    pub(crate) fn seen(&mut self, cpu: u32, time: u64) {
        let mut settled = Vec::new();
        self.settle.seen(cpu, time, |f| settled.push(f));
        for f in settled {
            self.apply(f);
        }
    }

    /// A sched_switch at `time` on `cpu`.
    pub(crate) fn switch(&mut self, time: u64, cpu: u32, prev: i32, prev_state: u64, next: i32) {
        let cpu_since = self.cpu_switch.insert(cpu, time).filter(|&t| t <= time);
        if self.watched(prev) {
            let pid = self.tgid.get(&prev).copied().unwrap_or(prev);
            let state = state_letter(prev_state);
            let keep_rows = self.keep_rows;
            let t = self.tasks.entry(prev).or_default();
            // Without its switch-in, the latest start the input allows.
            let guess = [cpu_since, t.out, t.ready, t.born]
                .into_iter()
                .flatten()
                .max();
            let row = TimehistRow {
                time,
                cpu,
                tid: prev,
                pid,
                wait: t.wait.take(),
                delay: t.delay.take(),
                run: t
                    .on
                    .map(|(since, _)| since)
                    .or(guess)
                    .map(|since| time.saturating_sub(since)),
                start_inferred: t.on.is_none() && guess.is_some(),
                state,
            };
            t.on = None;
            t.out = Some(time);
            t.ready = (state == 'R').then_some(time);
            if keep_rows {
                self.settle.push(time, Finished::Row(row));
            }
        }
        self.switch_in(time, cpu, next);
    }

    /// `tid` got `cpu` at `time` (any indication; repeats are ignored).
    pub(crate) fn switch_in(&mut self, time: u64, cpu: u32, tid: i32) {
        if !self.watched(tid) {
            return;
        }
        let t = self.tasks.entry(tid).or_default();
        if t.on.is_some() {
            return;
        }
        t.on = Some((time, cpu));
        t.wait = t.out.map(|out| time.saturating_sub(out));
        t.delay = t.ready.take().map(|ready| time.saturating_sub(ready));
        if let Some(delay) = t.delay {
            self.settle.push(time, Finished::Latency(delay));
        }
    }

    /// A wakeup of `tid` at `time`.
    pub(crate) fn wakeup(&mut self, time: u64, tid: i32) {
        if !self.watched(tid) {
            return;
        }
        let t = self.tasks.entry(tid).or_default();
        if t.on.is_none() && t.ready.is_none() {
            t.ready = Some(time);
        }
    }

    /// The ring of `cpu` (`None`: unknown) lost records.
    pub(crate) fn lost(&mut self, cpu: Option<u32>) {
        let open = self.tasks.values().filter(|t| t.ready.is_some()).count();
        self.tasks.clear();
        self.cpu_switch.clear();
        let finished = self.settle.lost(cpu).len();
        self.lost_dropped += (open + finished) as u64;
    }

    /// The end of the input.
    pub(crate) fn finish(&mut self) {
        let mut settled = Vec::new();
        self.settle.finish(|f| settled.push(f));
        for f in settled {
            self.apply(f);
        }
        self.rows.sort_by_key(|r| r.time);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_and_latencies() {
        let mut t = SchedTracker::new(
            Watch {
                all: true,
                ..Default::default()
            },
            true,
        );
        t.switch(1_000, 0, 0, 0, 5); // 5 in at 1000
        t.switch(3_000, 0, 5, 1, 0); // 5 sleeps: ran 2000
        t.wakeup(10_000, 5);
        t.switch_in(14_000, 1, 5); // from a switch record: delay 4000
        t.switch(15_000, 1, 5, 0, 6); // preempted: ran 1000
        t.switch(25_000, 1, 6, 1, 5); // back after 10000 runnable
        t.finish();
        assert_eq!(t.runqlat.total(), 2);
        assert_eq!(t.rows.len(), 3, "{:?}", t.rows);
        let r = &t.rows[1];
        assert_eq!(
            (r.wait, r.delay, r.run, r.state),
            (Some(11_000), Some(4_000), Some(1_000), 'R')
        );
        assert_eq!(t.rows[0].run, Some(2_000));
    }

    /// Switches as recorded around a `threads` worker (tid 100 here) whose
    /// slices came to 1.5% over its CPU time on this 6.18 VM (µs from the
    /// first switch): the kernel emits no switch out of PID 1's
    /// tokio-rt-worker threads (75), and sometimes none out of the idle
    /// task. Each such run starts at the last moment the input shows the
    /// worker off that CPU (here its own switch-out), so it holds the
    /// worker's run, and says it was inferred.
    #[test]
    fn runs_after_a_switch_the_kernel_did_not_emit_are_inferred() {
        let mut t = SchedTracker::new(
            Watch {
                all: true,
                ..Default::default()
            },
            true,
        );
        let us = |us: u64| us * 1_000;
        t.forked(us(900), 100);
        t.switch(us(1_000), 0, 0, 0, 100); // idle -> 100
        t.switch(us(139_435), 1, 15, 1026, 0); // rcu_preempt -> idle
        t.switch(us(213_336), 0, 100, 0, 75); // 100 preempted by 75
        // 75 -> 100 is not in the input.
        t.switch(us(237_339), 0, 100, 0, 30_544); // 100 preempted
        t.switch(us(240_000), 0, 30_544, 1, 100); // 100 back on CPU 0
        t.switch(us(243_403), 0, 100, 0, 36); // 100 preempted, moves to CPU 1
        // idle -> 100 on CPU 1 is not in the input: CPU 1's previous switch
        // is older than 100's switch-out on CPU 0, which bounds the run.
        t.switch(us(251_403), 1, 100, 0, 36);
        t.finish();
        let runs: Vec<_> = t
            .rows
            .iter()
            .filter(|r| r.tid == 100)
            .map(|r| {
                (
                    r.run.map(|run| r.time - run),
                    r.time,
                    r.cpu,
                    r.start_inferred,
                )
            })
            .collect();
        assert_eq!(
            runs,
            [
                (Some(us(1_000)), us(213_336), 0, false),
                (Some(us(213_336)), us(237_339), 0, true),
                (Some(us(240_000)), us(243_403), 0, false),
                (Some(us(243_403)), us(251_403), 1, true),
            ]
        );
    }

    #[test]
    fn a_missing_switch_in_starts_at_the_cpus_previous_switch() {
        let mut t = SchedTracker::new(
            Watch {
                all: true,
                ..Default::default()
            },
            true,
        );
        t.switch(1_000, 0, 7, 0, 0); // 7 was on CPU 0 before the input: no run
        t.switch(2_000, 0, 0, 0, 9); // idle -> 9
        t.switch(3_000, 0, 9, 1, 0); // 9 sleeps; the idle -> 5 that followed is lost
        t.switch(50_000, 0, 5, 1, 0); // 5 sleeps: on since 3000 at the latest
        t.switch(60_000, 1, 6, 0, 0); // CPU 1's first switch: unknown
        t.switch(61_000, 1, 0, 0, 0); // idle on CPU 1
        t.forked(70_000, 8);
        t.switch(90_000, 1, 8, 1, 0); // idle -> 8 lost: 8 ran since its fork
        t.switch(91_000, 1, 0, 0, 0);
        t.wakeup(93_000, 5);
        t.switch(99_000, 1, 5, 1, 0); // idle -> 5 lost: 5 ran since its wakeup
        t.forked(100_000, 11);
        t.switch(130_000, 2, 11, 1, 0); // CPU 2's first switch: 11 ran since its fork
        t.finish();
        let runs: Vec<_> = t
            .rows
            .iter()
            .map(|r| (r.tid, r.run, r.start_inferred))
            .collect();
        assert_eq!(
            runs,
            [
                (7, None, false),
                (9, Some(1_000), false),
                (5, Some(47_000), true),
                (6, None, false),
                (8, Some(20_000), true),
                (5, Some(6_000), true),
                (11, Some(30_000), true)
            ]
        );
    }
}
