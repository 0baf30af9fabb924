//! Off-CPU time: how long each task spent switched out, and where (the
//! stack at the moment it switched out), optionally joined with the stack
//! of whoever woke it (offwaketime).
//!
//! Input is the system-wide `sched:sched_switch` stream (with call chains)
//! and, for `--wakeup`, `sched:sched_wakeup`. Each switch-out of a watched
//! task becomes one sample whose period is filled in, in nanoseconds, at
//! the task's next switch-in: the first of the sched_switch tracepoint's
//! `next_pid`, the PERF_RECORD_SWITCH_CPU_WIDE switch-out record's next
//! task and its switch-in record (in that order in time; the later ones
//! find nothing open). On 6.18 the tracepoint misses some idle -> task
//! switches, the switch records do not; the tracepoint, when present, is
//! nearest to where the kernel starts charging CPU time to the task.
//!
//! A switch-out never followed by a switch-in (the recording ended) is
//! dropped and counted, never stretched; on a lost-records report every
//! open switch-out is dropped, and finished pairs the loss window may reach
//! are taken back (`settle`).
//!
//! The tracker works in sequence numbers of the samples it asked its caller
//! to resolve, so stacks are symbolized by the ordinary resolver, in bulk.

use std::collections::{HashMap, HashSet};

use super::sample::{Frame, FrameKind, FrameTable, ResolvedSample};
use super::settle::Settle;

/// Which tasks are watched.
#[derive(Clone, Debug, Default)]
pub(crate) struct Watch {
    /// Every task but the idle ones.
    pub(crate) all: bool,
    /// Processes (thread groups) by pid; children forked later join.
    pub(crate) pids: HashSet<i32>,
}

impl Watch {
    /// A COMM or FORK record: `tid` belongs to process `pid` (noted in
    /// `tgid`); a fork from a watched process is watched too.
    pub(crate) fn task(
        &mut self,
        tgid: &mut HashMap<i32, i32>,
        pid: i32,
        tid: i32,
        parent_pid: Option<i32>,
    ) {
        tgid.insert(tid, pid);
        if let Some(parent) = parent_pid
            && parent != pid
            && self.pids.contains(&parent)
        {
            self.pids.insert(pid);
        }
    }

    /// Whether task `tid` is watched (never the idle tasks, tid 0).
    pub(crate) fn covers(&self, tgid: &HashMap<i32, i32>, tid: i32) -> bool {
        tid > 0 && (self.all || self.pids.contains(tgid.get(&tid).unwrap_or(&tid)))
    }
}

/// `prev_state` of sched_switch as one letter, as perf and ftrace print it.
pub(crate) fn state_letter(prev_state: u64) -> char {
    // TASK_REPORT: R S D T t X Z P I, one bit each after R (0).
    const LETTERS: &[char] = &['S', 'D', 'T', 't', 'X', 'Z', 'P', 'I'];
    let state = prev_state & 0xff;
    if state == 0 {
        return 'R';
    }
    LETTERS
        .get(state.trailing_zeros() as usize)
        .copied()
        .unwrap_or('?')
}

/// Switch-outs waiting for their switch-in, and the weights found so far.
#[derive(Debug, Default)]
pub(crate) struct OffCpuTracker {
    pub(crate) watch: Watch,
    /// tid → pid, from COMM and FORK records.
    tgid: HashMap<i32, i32>,
    /// tid → (sequence number of its switch-out sample, time, state).
    out: HashMap<i32, (usize, u64, char)>,
    /// wakee tid → sequence number of the waker's sample.
    last_waker: HashMap<i32, usize>,
    /// Per sequence number: off-CPU nanoseconds (0 until switch-in).
    weights: Vec<u64>,
    states: Vec<char>,
    /// Per blocked sample: the waker sample that woke it.
    waker_of: HashMap<usize, usize>,
    /// Sequence numbers that are waker samples (not off-CPU time themselves).
    is_waker: HashSet<usize>,
    /// Switch-outs without a switch-in before the end.
    pub(crate) unmatched: u64,
    /// Finished off-CPU periods (by sequence number) not yet beyond a loss.
    settle: Settle<usize>,
    /// Periods dropped because records were lost (open or taken back).
    pub(crate) lost_dropped: u64,
}

/// What the caller must do with the sched_switch or sched_wakeup sample it
/// just showed the tracker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Resolve the sample's stack (it became sequence number `seq`).
    Resolve,
    /// Not a watched task: skip the sample.
    Skip,
}

impl OffCpuTracker {
    pub(crate) fn new(watch: Watch) -> Self {
        OffCpuTracker {
            watch,
            ..Default::default()
        }
    }

    /// A COMM or FORK record: `tid` belongs to process `pid`; a fork from a
    /// watched process is watched too.
    pub(crate) fn task(&mut self, pid: i32, tid: i32, parent_pid: Option<i32>) {
        self.watch.task(&mut self.tgid, pid, tid, parent_pid);
    }

    fn watched(&self, tid: i32) -> bool {
        self.watch.covers(&self.tgid, tid)
    }

    /// A sched_switch at `time`: `prev` leaves the CPU in `prev_state`,
    /// `next` takes it. Returns whether the sample (prev's stack) must be
    /// resolved; if so it gets the next sequence number.
    pub(crate) fn switch(&mut self, time: u64, prev: i32, prev_state: u64, next: i32) -> Verdict {
        self.switch_in(time, next);
        if !self.watched(prev) {
            return Verdict::Skip;
        }
        let seq = self.weights.len();
        let state = state_letter(prev_state);
        self.weights.push(0);
        self.states.push(state);
        if self.out.insert(prev, (seq, time, state)).is_some() {
            // Two switch-outs without a switch-in between: one was lost.
            self.unmatched += 1;
        }
        Verdict::Resolve
    }

    /// `tid` got a CPU at `time` (any of the indications in the module doc).
    pub(crate) fn switch_in(&mut self, time: u64, tid: i32) {
        if let Some((seq, out_time, _)) = self.out.remove(&tid) {
            if let Some(w) = self.weights.get_mut(seq) {
                *w = time.saturating_sub(out_time).max(1);
            }
            if let Some(waker) = self.last_waker.remove(&tid) {
                self.waker_of.insert(seq, waker);
            }
            self.settle.push(time, seq);
        }
    }

    /// Any record of `cpu` at `time` (moves the loss windows on).
    pub(crate) fn seen(&mut self, cpu: u32, time: u64) {
        self.settle.seen(cpu, time, |_| {});
    }

    /// The ring of `cpu` (`None`: unknown) lost records: open switch-outs
    /// and the periods the loss may reach are dropped.
    pub(crate) fn lost(&mut self, cpu: Option<u32>) {
        self.lost_dropped += self.out.len() as u64;
        self.out.clear();
        self.last_waker.clear();
        for seq in self.settle.lost(cpu) {
            if let Some(w) = self.weights.get_mut(seq) {
                *w = 0;
            }
            self.lost_dropped += 1;
        }
    }

    /// A sched_wakeup of `wakee`, taken in the waker's context.
    pub(crate) fn wakeup(&mut self, wakee: i32) -> Verdict {
        if !self.watched(wakee) || !self.out.contains_key(&wakee) {
            return Verdict::Skip;
        }
        let seq = self.weights.len();
        self.weights.push(0);
        self.states.push('W');
        self.is_waker.insert(seq);
        self.last_waker.insert(wakee, seq);
        Verdict::Resolve
    }

    /// Turn the resolved samples (one per `Resolve` verdict, in order) into
    /// off-CPU samples: period = nanoseconds off CPU, waker stacks joined on
    /// top of blocked stacks (with a `--` frame between) when asked.
    pub(crate) fn finish(
        mut self,
        resolved: Vec<ResolvedSample>,
        frames: &mut FrameTable,
        options: &OffCpuOptions,
    ) -> OffCpuResult {
        self.unmatched += self.out.len() as u64;
        let separator = frames.intern(Frame {
            sym: Some("--".into()),
            dso: "[offwaketime]".into(),
            kind: FrameKind::User,
            inlined: false,
            srcline: None,
        });
        let mut samples = Vec::new();
        let mut by_state: HashMap<char, u64> = HashMap::new();
        for (seq, sample) in resolved.iter().enumerate() {
            if self.is_waker.contains(&seq) {
                continue;
            }
            let weight = self.weights.get(seq).copied().unwrap_or(0);
            if weight == 0 || weight < options.min_ns {
                continue;
            }
            // The forked workload before its exec is scry's, not the user's.
            if options.exclude_comm.as_deref() == Some(&*sample.comm) {
                continue;
            }
            let state = self.states.get(seq).copied().unwrap_or('?');
            *by_state.entry(state).or_default() += weight;
            let mut s = sample.clone();
            s.period = weight;
            if options.wakeup
                && let Some(waker) = self.waker_of.get(&seq).and_then(|&w| resolved.get(w))
            {
                // Leaf first: the waker's frames from its root down to its
                // leaf sit on top of the separator, above the blocked stack.
                let mut stack: Vec<_> = waker.stack.iter().rev().copied().collect();
                stack.push(separator);
                stack.extend(s.stack.iter().copied());
                s.stack = stack.into();
            }
            samples.push(s);
        }
        let mut by_state: Vec<(char, u64)> = by_state.into_iter().collect();
        by_state.sort_by_key(|b| std::cmp::Reverse(b.1));
        self.weights.clear();
        OffCpuResult {
            samples,
            by_state,
            unmatched: self.unmatched,
            lost_dropped: self.lost_dropped,
        }
    }
}

/// Settings of the analysis.
#[derive(Clone, Debug, Default)]
pub(crate) struct OffCpuOptions {
    /// Drop switch-outs shorter than this (`--min-us`).
    pub(crate) min_ns: u64,
    /// Join waker stacks (`--wakeup`).
    pub(crate) wakeup: bool,
    /// Leave out samples of this command name (the workload before exec).
    pub(crate) exclude_comm: Option<String>,
}

/// Off-CPU samples (period in ns) and totals.
#[derive(Debug)]
pub(crate) struct OffCpuResult {
    pub(crate) samples: Vec<ResolvedSample>,
    /// Total off-CPU ns per state letter, largest first.
    pub(crate) by_state: Vec<(char, u64)>,
    pub(crate) unmatched: u64,
    /// Periods dropped because records were lost.
    pub(crate) lost_dropped: u64,
}

impl OffCpuResult {
    pub(crate) fn total_ns(&self) -> u64 {
        self.samples
            .iter()
            .fold(0, |sum, s| sum.saturating_add(s.period))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::sample::{FrameId, StackQuality};

    fn resolved(tid: i32, frame: u32) -> ResolvedSample {
        ResolvedSample {
            event: 0,
            comm: "t".into(),
            pid: tid,
            tid,
            cpu: 0,
            time: 0,
            period: 1,
            stack: vec![FrameId(frame)].into(),
            quality: StackQuality::Complete,
            count: 1,
        }
    }

    #[test]
    fn pairs_switch_out_with_switch_in() {
        let mut t = OffCpuTracker::new(Watch {
            all: false,
            pids: [10].into_iter().collect(),
        });
        t.task(10, 11, None);
        assert_eq!(t.switch(100, 11, 1, 0), Verdict::Resolve); // 11 sleeps (S)
        assert_eq!(t.switch(150, 0, 0, 99), Verdict::Skip); // unrelated
        assert_eq!(t.switch(400, 99, 2, 11), Verdict::Skip); // 11 back after 300
        assert_eq!(t.switch(500, 11, 2, 0), Verdict::Resolve); // 11 in D, never back
        let mut frames = FrameTable::default();
        let r = t.finish(
            vec![resolved(11, 0), resolved(11, 1)],
            &mut frames,
            &OffCpuOptions::default(),
        );
        assert_eq!(r.samples.len(), 1);
        assert_eq!(r.samples[0].period, 300);
        assert_eq!(r.by_state, vec![('S', 300)]);
        assert_eq!(r.unmatched, 1);
    }

    #[test]
    fn forks_of_watched_processes_are_watched_and_wakers_join() {
        let mut t = OffCpuTracker::new(Watch {
            all: false,
            pids: [10].into_iter().collect(),
        });
        t.task(20, 20, Some(10));
        assert_eq!(t.switch(0, 20, 1, 0), Verdict::Resolve);
        assert_eq!(t.wakeup(20), Verdict::Resolve);
        assert_eq!(t.switch(50, 0, 0, 20), Verdict::Skip);
        let mut frames = FrameTable::default();
        let options = OffCpuOptions {
            min_ns: 0,
            wakeup: true,
            exclude_comm: None,
        };
        let r = t.finish(
            vec![resolved(20, 5), resolved(30, 7)],
            &mut frames,
            &options,
        );
        assert_eq!(r.samples.len(), 1);
        assert_eq!(r.samples[0].period, 50);
        // waker frame, separator, blocked frame (leaf first)
        assert_eq!(r.samples[0].stack.len(), 3);
        assert_eq!(r.samples[0].stack[0], FrameId(7));
        assert_eq!(r.samples[0].stack[2], FrameId(5));
    }

    #[test]
    fn switch_ins_from_records_and_losses() {
        let mut t = OffCpuTracker::new(Watch {
            all: true,
            pids: HashSet::new(),
        });
        // 11 sleeps at 100; the tracepoint of its switch-in is missing, the
        // switch record says 300; a later record repeats it (ignored).
        assert_eq!(t.switch(100, 11, 1, 0), Verdict::Resolve);
        t.switch_in(300, 11);
        t.switch_in(301, 11);
        // 12 sleeps at 310 and wakes at 400 on CPU 1; CPU 0 (last seen at
        // 305) then reports a loss: 12's period may span it and goes.
        t.seen(0, 305);
        assert_eq!(t.switch(310, 12, 1, 0), Verdict::Resolve);
        t.switch_in(400, 12);
        t.lost(Some(0));
        let mut frames = FrameTable::default();
        let r = t.finish(
            vec![resolved(11, 0), resolved(12, 1)],
            &mut frames,
            &OffCpuOptions::default(),
        );
        assert_eq!(r.samples.len(), 1);
        assert_eq!(r.samples[0].period, 200);
        assert_eq!(r.lost_dropped, 1);
    }

    #[test]
    fn state_letters() {
        assert_eq!(state_letter(0), 'R');
        assert_eq!(state_letter(1), 'S');
        assert_eq!(state_letter(2), 'D');
        assert_eq!(state_letter(0x100), 'R');
    }
}
