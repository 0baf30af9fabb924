//! System calls as `scry trace` sees them: entries paired with exits per
//! thread (`Pairer`), the copies of their string arguments joined to them,
//! thread names, and the per-thread summary table (`Summary`: calls,
//! errors, total, min, avg, max, stddev). How each call's arguments read is
//! `event::syscall`, with the items the tracer decodes (re-exported here).
//!
//! Decisions:
//! - Pairing is per thread id: a thread is in at most one system call at a
//!   time, so an entry waits in a one-slot map until its thread's exit.
//!   An exit without an entry (the call began before tracing) is still a
//!   call, with no duration; an entry whose exit never comes (`exit_group`,
//!   `execve` of a thread that vanished) is flushed when its thread exits
//!   or at the end, with no return value.
//! - Strings and input buffers are copied in the kernel at the entry and
//!   arrive as a separate item (`TraceItem::ArgCopies`) next to the entry
//!   of the same thread: just before or just after it, as the two come from
//!   one tracepoint hit. They join the entry when the call number and the
//!   copied arguments' values agree; an entry without its copies shows the
//!   pointers as "not copied", and copies without an entry are dropped at
//!   the thread's next item, never joined to a later call.
//! - Statistics use Welford's running mean and variance, so a million
//!   calls cost no memory; stddev is reported as a percentage of the mean,
//!   as perf trace does.
//!
//! Inputs must arrive in time order per thread (the capture sorts them).

use crate::data::threads::ThreadNames;
use std::collections::{BTreeMap, HashMap};
use std::io;
use std::rc::Rc;

pub(crate) use crate::event::syscall::{
    ArgCopies, ArgKind, ArgText, SyscallDesc, SyscallEnter, TraceItem,
};

impl SyscallEnter {
    /// Takes `copies` when they are this call's: same number, same values
    /// of the copied arguments, and this entry has none yet. A NULL
    /// pointer keeps saying so.
    fn join(&mut self, copies: &ArgCopies) -> bool {
        let fits = copies.nr == self.desc.nr
            && !self
                .strings
                .iter()
                .any(|(_, t)| matches!(t, ArgText::Copied { .. }))
            && copies.texts.iter().all(|(i, _)| {
                copies.args.get(*i) == self.args.get(*i) && self.strings.iter().any(|(j, _)| j == i)
            });
        if fits {
            for (i, text) in &copies.texts {
                if let Some(slot) = self.strings.iter_mut().find(|(j, _)| j == i)
                    && self.args.get(*i).is_some_and(|&v| v != 0)
                {
                    slot.1 = text.clone();
                }
            }
        }
        fits
    }
}

/// A system call, entry and exit paired as far as both were seen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SyscallCall {
    pub(crate) pid: i32,
    pub(crate) tid: i32,
    pub(crate) desc: Rc<SyscallDesc>,
    /// `None`: the call began before tracing did.
    pub(crate) enter: Option<SyscallEnter>,
    pub(crate) exit_time: Option<u64>,
    /// `None`: the call never returned (exit_group) or tracing ended first.
    pub(crate) ret: Option<i64>,
}

impl SyscallCall {
    /// Nanoseconds in the call, when both ends were seen.
    pub(crate) fn duration_ns(&self) -> Option<u64> {
        let start = self.enter.as_ref()?.time;
        self.exit_time?.checked_sub(start)
    }

    /// The first time seen (entry, else exit).
    pub(crate) fn time(&self) -> u64 {
        self.enter
            .as_ref()
            .map(|e| e.time)
            .or(self.exit_time)
            .unwrap_or(0)
    }

    /// The errno of a failed call (`ret` in -4095..=-1).
    pub(crate) fn errno(&self) -> Option<i32> {
        match self.ret {
            Some(r) if (-4095..0).contains(&r) => Some(-r as i32),
            _ => None,
        }
    }
}

/// Pairs entries with exits per thread.
#[derive(Debug, Default)]
pub(crate) struct Pairer {
    pending: HashMap<i32, SyscallEnter>,
}

impl Pairer {
    /// An entry. A previous entry of the thread that never saw its exit
    /// (lost, or a call that does not return) comes back as unfinished.
    pub(crate) fn enter(&mut self, enter: SyscallEnter) -> Option<SyscallCall> {
        let tid = enter.tid;
        self.pending.insert(tid, enter).map(unfinished)
    }

    /// An exit: the call, with its entry if it was seen.
    pub(crate) fn exit(
        &mut self,
        pid: i32,
        tid: i32,
        time: u64,
        desc: Rc<SyscallDesc>,
        ret: i64,
    ) -> SyscallCall {
        let enter = match self.pending.remove(&tid) {
            Some(e) if e.desc.nr == desc.nr => Some(e),
            Some(other) => {
                // An entry of another call: its exit was lost. Keep the
                // books straight by dropping it; the exit stands alone.
                drop(other);
                None
            }
            None => None,
        };
        SyscallCall {
            pid,
            tid,
            desc,
            enter,
            exit_time: Some(time),
            ret: Some(ret),
        }
    }

    /// The entry of `tid` waiting for its exit.
    pub(crate) fn pending_mut(&mut self, tid: i32) -> Option<&mut SyscallEnter> {
        self.pending.get_mut(&tid)
    }

    /// The thread is gone: its call in flight, if any, never returns.
    pub(crate) fn thread_exited(&mut self, tid: i32) -> Option<SyscallCall> {
        self.pending.remove(&tid).map(unfinished)
    }

    /// Every call still in flight, in time order (end of tracing).
    pub(crate) fn drain(&mut self) -> Vec<SyscallCall> {
        let mut all: Vec<SyscallCall> = self.pending.drain().map(|(_, e)| unfinished(e)).collect();
        all.sort_by_key(SyscallCall::time);
        all
    }
}

fn unfinished(enter: SyscallEnter) -> SyscallCall {
    SyscallCall {
        pid: enter.pid,
        tid: enter.tid,
        desc: Rc::clone(&enter.desc),
        enter: Some(enter),
        exit_time: None,
        ret: None,
    }
}

/// Running statistics of one system call in one thread.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct CallStats {
    pub(crate) calls: u64,
    pub(crate) errors: u64,
    /// Calls with a duration (both ends seen).
    pub(crate) timed: u64,
    pub(crate) total_ns: u64,
    pub(crate) min_ns: u64,
    pub(crate) max_ns: u64,
    mean: f64,
    m2: f64,
}

impl CallStats {
    fn add(&mut self, call: &SyscallCall) {
        self.calls += 1;
        if call.errno().is_some() {
            self.errors += 1;
        }
        let Some(d) = call.duration_ns() else { return };
        self.timed += 1;
        self.total_ns += d;
        self.min_ns = if self.timed == 1 {
            d
        } else {
            self.min_ns.min(d)
        };
        self.max_ns = self.max_ns.max(d);
        let x = d as f64;
        let delta = x - self.mean;
        self.mean += delta / self.timed as f64;
        self.m2 += delta * (x - self.mean);
    }

    /// Mean duration of the timed calls, in nanoseconds.
    pub(crate) fn avg_ns(&self) -> f64 {
        self.mean
    }

    /// Sample standard deviation as a percentage of the mean (perf trace's
    /// `stddev (%)`); 0 for fewer than two calls.
    pub(crate) fn stddev_pct(&self) -> f64 {
        if self.timed < 2 || self.mean <= 0.0 {
            return 0.0;
        }
        let variance = self.m2 / (self.timed - 1) as f64;
        100.0 * variance.sqrt() / self.mean
    }
}

/// One thread's part of the summary.
#[derive(Clone, Debug, Default)]
pub(crate) struct ThreadSummary {
    pub(crate) comm: String,
    /// Every event seen for the thread (entries, exits, tracepoints).
    pub(crate) events: u64,
    pub(crate) syscalls: BTreeMap<u64, CallStats>,
}

/// `-s`: per thread, per system call.
#[derive(Clone, Debug, Default)]
pub(crate) struct Summary {
    /// Keyed by (pid, tid).
    pub(crate) threads: BTreeMap<(i32, i32), ThreadSummary>,
    /// System call names by number, for the table.
    pub(crate) names: BTreeMap<u64, String>,
    pub(crate) total_events: u64,
}

impl Summary {
    /// Counts one event of a thread (`comm` as last known).
    pub(crate) fn event(&mut self, pid: i32, tid: i32, comm: &str) {
        self.total_events += 1;
        let t = self.threads.entry((pid, tid)).or_default();
        t.events += 1;
        if t.comm != comm {
            t.comm = comm.to_string();
        }
    }

    /// Adds a finished (or abandoned) call.
    pub(crate) fn call(&mut self, call: &SyscallCall) {
        self.names
            .entry(call.desc.nr)
            .or_insert_with(|| call.desc.name.clone());
        let t = self.threads.entry((call.pid, call.tid)).or_default();
        t.syscalls.entry(call.desc.nr).or_default().add(call);
    }
}

/// Where the tracer's lines go (`render::trace` writes them as text).
pub(crate) trait TraceOutput {
    /// A finished (or abandoned) system call.
    fn call(&mut self, call: &SyscallCall, comm: &str) -> io::Result<()>;
    /// Another event.
    fn event(
        &mut self,
        time: u64,
        pid: i32,
        tid: i32,
        comm: &str,
        name: &str,
        text: &str,
    ) -> io::Result<()>;
    /// What was written so far goes out (a drain of the rings ended).
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Settings of the tracer. Defaults: every call shown, no summary.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct TracerOptions {
    /// `--duration MS`: show only calls that took at least this long.
    pub(crate) min_duration_ns: Option<u64>,
    /// False with `-s` alone: only the summary is wanted.
    pub(crate) show_events: bool,
}

/// Pairs items into calls, keeps the summary, and emits lines.
#[derive(Debug, Default)]
pub(crate) struct Tracer {
    pairer: Pairer,
    pub(crate) summary: Summary,
    /// Thread names from COMM and FORK items, and guesses from /proc.
    comms: ThreadNames,
    /// Copies that came before their entry, by thread.
    early_copies: HashMap<i32, ArgCopies>,
    opts: TracerOptions,
}

impl Tracer {
    pub(crate) fn new(opts: TracerOptions) -> Tracer {
        Tracer {
            opts,
            ..Tracer::default()
        }
    }

    fn comm(&self, tid: i32) -> &str {
        self.comms.recorded(tid).unwrap_or(":?")
    }

    fn emit(&mut self, call: SyscallCall, out: &mut dyn TraceOutput) -> io::Result<()> {
        self.summary.call(&call);
        if !self.opts.show_events {
            return Ok(());
        }
        if let Some(min) = self.opts.min_duration_ns
            && call.duration_ns().is_none_or(|d| d < min)
        {
            return Ok(());
        }
        out.call(&call, self.comm(call.tid))
    }

    /// Takes the next item (in time order).
    pub(crate) fn item(&mut self, item: TraceItem, out: &mut dyn TraceOutput) -> io::Result<()> {
        // Copies that came before their entry wait for the thread's next
        // system-call item only: an event of the thread (a uprobe, a
        // tracepoint) between the two must not take them away.
        let tid = match &item {
            TraceItem::Enter(e) => e.tid,
            TraceItem::Exit { tid, .. } | TraceItem::ThreadExit { tid, .. } => *tid,
            TraceItem::ArgCopies(_)
            | TraceItem::Event { .. }
            | TraceItem::Comm { .. }
            | TraceItem::Fork { .. }
            | TraceItem::NameGuess { .. }
            | TraceItem::Drained => 0,
        };
        let early = if tid != 0 {
            self.early_copies.remove(&tid)
        } else {
            None
        };
        match item {
            TraceItem::ArgCopies(copies) => {
                let joined = self
                    .pairer
                    .pending_mut(copies.tid)
                    .is_some_and(|e| e.time <= copies.time && e.join(&copies));
                if !joined {
                    self.early_copies.insert(copies.tid, copies);
                }
            }
            TraceItem::Comm { tid, comm, .. } => {
                self.comms.set(tid, comm.as_bytes());
            }
            TraceItem::Fork { tid, ptid, .. } => {
                self.comms.fork(tid, ptid);
            }
            TraceItem::NameGuess { tid, comm, .. } => {
                self.comms.guess(tid, &comm);
            }
            TraceItem::Drained => out.flush()?,
            TraceItem::Enter(mut enter) => {
                if let Some(copies) = &early {
                    enter.join(copies);
                }
                let (pid, tid) = (enter.pid, enter.tid);
                self.summary
                    .event(pid, tid, self.comms.recorded(tid).unwrap_or(":?"));
                if let Some(unfinished) = self.pairer.enter(enter) {
                    self.emit(unfinished, out)?;
                }
            }
            TraceItem::Exit {
                pid,
                tid,
                time,
                desc,
                ret,
            } => {
                self.summary
                    .event(pid, tid, self.comms.recorded(tid).unwrap_or(":?"));
                let call = self.pairer.exit(pid, tid, time, desc, ret);
                self.emit(call, out)?;
            }
            TraceItem::Event {
                pid,
                tid,
                time,
                name,
                text,
            } => {
                self.summary
                    .event(pid, tid, self.comms.recorded(tid).unwrap_or(":?"));
                if self.opts.show_events {
                    out.event(time, pid, tid, self.comm(tid), &name, &text)?;
                }
            }
            TraceItem::ThreadExit { tid, .. } => {
                if let Some(call) = self.pairer.thread_exited(tid) {
                    self.emit(call, out)?;
                }
            }
        }
        Ok(())
    }

    /// Tracing ended: calls still in flight are shown without a return.
    pub(crate) fn finish(&mut self, out: &mut dyn TraceOutput) -> io::Result<()> {
        for call in self.pairer.drain() {
            self.emit(call, out)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::syscall::ArgDesc;

    fn desc(nr: u64) -> Rc<SyscallDesc> {
        Rc::new(SyscallDesc::bare(nr, "x"))
    }

    fn enter(tid: i32, time: u64, nr: u64) -> SyscallEnter {
        SyscallEnter {
            pid: 1,
            tid,
            time,
            desc: desc(nr),
            args: [0; 6],
            strings: Vec::new(),
        }
    }

    #[test]
    fn pairs_per_thread() {
        let mut p = Pairer::default();
        assert!(p.enter(enter(10, 100, 0)).is_none());
        assert!(p.enter(enter(11, 150, 1)).is_none());
        let c = p.exit(1, 11, 170, desc(1), 5);
        assert_eq!(c.duration_ns(), Some(20));
        let c = p.exit(1, 10, 400, desc(0), -2);
        assert_eq!((c.duration_ns(), c.errno()), (Some(300), Some(2)));
        // An exit with no entry: no duration.
        let c = p.exit(1, 10, 500, desc(0), 3);
        assert_eq!(c.duration_ns(), None);
        // exit_group never returns.
        assert!(p.enter(enter(12, 600, 231)).is_none());
        let left = p.drain();
        assert_eq!(left.len(), 1);
        assert_eq!(left[0].ret, None);
    }

    #[test]
    fn statistics() {
        let mut s = Summary::default();
        let mut p = Pairer::default();
        for (i, d) in [10u64, 20, 30].into_iter().enumerate() {
            let t = i as u64 * 1000;
            p.enter(enter(7, t, 39));
            let call = p.exit(1, 7, t + d, desc(39), if i == 2 { -1 } else { 0 });
            s.call(&call);
        }
        let st = &s.threads[&(1, 7)].syscalls[&39];
        assert_eq!(
            (st.calls, st.errors, st.total_ns, st.min_ns, st.max_ns),
            (3, 1, 60, 10, 30)
        );
        assert!((st.avg_ns() - 20.0).abs() < 1e-9);
        // Sample stddev of 10, 20, 30 is 10: 50% of the mean.
        assert!((st.stddev_pct() - 50.0).abs() < 1e-9);
    }

    /// Collects the calls a tracer emits.
    #[derive(Default)]
    struct Calls(Vec<SyscallCall>);

    impl TraceOutput for Calls {
        fn call(&mut self, call: &SyscallCall, _comm: &str) -> io::Result<()> {
            self.0.push(call.clone());
            Ok(())
        }
        fn event(&mut self, _: u64, _: i32, _: i32, _: &str, _: &str, _: &str) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn copies_join_their_own_entry_only() {
        let open = Rc::new(SyscallDesc {
            nr: 2,
            name: "open".into(),
            args: vec![ArgDesc {
                name: "filename".into(),
                kind: ArgKind::Str,
            }],
        });
        let enter = |time, ptr| {
            TraceItem::Enter(SyscallEnter {
                pid: 1,
                tid: 7,
                time,
                desc: Rc::clone(&open),
                args: [ptr, 0, 0, 0, 0, 0],
                strings: vec![(0, ArgText::NOT_COPIED)],
            })
        };
        let copies = |time, ptr, text: &str| {
            TraceItem::ArgCopies(ArgCopies {
                tid: 7,
                time,
                nr: 2,
                args: [ptr, 0, 0, 0, 0, 0],
                texts: vec![(
                    0,
                    ArgText::Copied {
                        bytes: text.as_bytes().to_vec(),
                        truncated: false,
                    },
                )],
            })
        };
        let exit = |time| TraceItem::Exit {
            pid: 1,
            tid: 7,
            time,
            desc: Rc::clone(&open),
            ret: 3,
        };
        let items = vec![
            // Copies after the entry, then before it.
            enter(10, 0x10),
            copies(11, 0x10, "/a"),
            exit(12),
            copies(20, 0x20, "/b"),
            enter(21, 0x20),
            exit(22),
            // Copies of another pointer: not this call's.
            enter(30, 0x30),
            copies(31, 0x99, "/x"),
            exit(32),
            // Copies whose entry was never seen do not reach a later call.
            copies(40, 0x40, "/lost"),
            exit(41),
            enter(50, 0x40),
            exit(51),
        ];
        let mut tracer = Tracer::new(TracerOptions {
            show_events: true,
            ..TracerOptions::default()
        });
        let mut out = Calls::default();
        for item in items {
            tracer.item(item, &mut out).unwrap();
        }
        let texts: Vec<Option<ArgText>> = out
            .0
            .iter()
            .filter_map(|c| c.enter.as_ref())
            .map(|e| e.strings.first().map(|(_, t)| t.clone()))
            .collect();
        let copied = |s: &str| {
            Some(ArgText::Copied {
                bytes: s.as_bytes().to_vec(),
                truncated: false,
            })
        };
        assert_eq!(
            texts,
            vec![
                copied("/a"),
                copied("/b"),
                Some(ArgText::NOT_COPIED),
                Some(ArgText::NOT_COPIED)
            ]
        );
    }
}
