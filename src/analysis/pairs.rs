//! Event-pair latencies, as `trace-cmd profile` computes them: a *hook*
//! connects a start event to an end event (matched on a field, per task,
//! per CPU or globally) and every matched pair adds its duration to a
//! statistic (count, total, max and min with their timestamps), optionally
//! with the stack taken at the start.
//!
//! The default hooks (wakeup latency, preemption, blocked time by state,
//! system calls, hard and soft interrupts, page faults) are built in
//! (`Builtin`); `-H` adds custom hooks (`Hook`). An end whose start was
//! never seen is ignored and a start never ended is counted as unmatched:
//! lost events drop pairs, they never stretch one.
//!
//! Stacks are handled by sequence numbers, as in `offcpu`: a start that
//! wants its stack asks the caller to resolve that sample, and the stack
//! joins the pair's statistic when the results come back.
//!
//! Switch-ins (the end of wakeup latency and of preemption) are the first
//! of the sched_switch tracepoint's `next_pid`, the
//! PERF_RECORD_SWITCH_CPU_WIDE switch-out record's next task and its
//! switch-in record (`switch_in`; the later ones find nothing open): on
//! 6.18 the tracepoint misses some idle -> task switches. A wakeup of a task that
//! is on a CPU at that moment (woken before it switched out) counts as a
//! wakeup latency of 0: it never waited, and every wakeup is counted once.
//! The wakeup is `sched_waking` where it exists (`sched_wakeup` is then
//! ignored): it fires in the waker's context, while `sched_wakeup` of a
//! remote wakeup fires on the target CPU, in its idle task when it was idle,
//! and the kernel drops tracepoint samples there (as it drops idle -> task
//! switches), so most wakeups of a thread alone on a CPU were missed.
//!
//! A blocked interval (sched_switch:S, D, ...) ends at the task's wakeup,
//! or, when no wakeup was seen, at its next switch-in, the latest moment
//! the wakeup can have been (counted in `ended_at_switch_in`). Wakeups go
//! unseen where the kernel emits no sample: on the VMs this was written on,
//! nothing is sampled while the sandbox agent's threads run, neither by
//! perf nor by BPF, so a timer that expires then wakes a sleeper unseen;
//! and a waking that comes before its task's switch-out record is matched
//! as a zero wakeup latency, not as the end of the blocked time. The
//! switch-in is always seen: the context-switch record is written from the
//! incoming task's side.
//!
//! Lost records: a lost-records report drops every open start, and the
//! finished pairs its loss window may reach wait in `settle` and are taken
//! back; both are counted in `lost_dropped`. A latency is never stretched.
//!
//! Pairs summed elsewhere (`scry profile` sums system calls, page faults and
//! interrupts in the kernel with BPF) join the results through `add_summed`,
//! under the labels the engine gives them.
//!
//! With `log` set, every settled pair is also kept one by one (`PairLog`:
//! label, end, duration) for the latency heat map; system calls pair from
//! `raw_syscalls` or from the per-call `syscalls:sys_enter_NAME` and
//! `sys_exit_NAME` (their number is `__syscall_nr`).

use std::collections::{BTreeMap, HashMap, HashSet};

use super::offcpu::state_letter;
use super::settle::Settle;

/// One statistic: `(count) Total Avg Max(ts) Min(ts)`, times in ns.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct PairStat {
    pub(crate) count: u64,
    pub(crate) total: u64,
    pub(crate) max: u64,
    pub(crate) max_ts: u64,
    pub(crate) min: u64,
    pub(crate) min_ts: u64,
    /// Sequence numbers of start samples with stacks, and their durations.
    pub(crate) stacks: Vec<(usize, u64)>,
}

impl PairStat {
    /// A statistic summed elsewhere, as `[count, total, max, max_ts, min,
    /// min_ts]` (the BPF program's `struct stat`), without stacks.
    pub(crate) fn from_sums([count, total, max, max_ts, min, min_ts]: [u64; 6]) -> PairStat {
        PairStat {
            count,
            total,
            max,
            max_ts,
            min,
            min_ts,
            stacks: Vec::new(),
        }
    }

    pub(crate) fn add(&mut self, duration: u64, ts: u64, stack: Option<usize>) {
        if self.count == 0 || duration > self.max {
            self.max = duration;
            self.max_ts = ts;
        }
        if self.count == 0 || duration < self.min {
            self.min = duration;
            self.min_ts = ts;
        }
        self.count += 1;
        self.total += duration;
        if let Some(seq) = stack {
            self.stacks.push((seq, duration));
        }
    }

    /// A count without durations (page faults).
    fn count_only(&mut self) {
        self.count += 1;
    }

    pub(crate) fn avg(&self) -> u64 {
        self.total.checked_div(self.count).unwrap_or(0)
    }

    /// Adds a statistic summed elsewhere (`count` pairs).
    fn merge(&mut self, other: &PairStat) {
        if other.count == 0 {
            return;
        }
        if self.count == 0 || other.max > self.max {
            self.max = other.max;
            self.max_ts = other.max_ts;
        }
        if self.count == 0 || other.min < self.min {
            self.min = other.min;
            self.min_ts = other.min_ts;
        }
        self.count += other.count;
        self.total += other.total;
        self.stacks.extend_from_slice(&other.stacks);
    }
}

/// What a statistic summed outside the engine (in the kernel, by BPF)
/// counts; it gets the label the engine would give it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SummedKind {
    /// A system call, by number.
    Syscall(u64),
    PageFaultUser,
    PageFaultKernel,
    /// A hard interrupt, by irq number.
    Irq(u64),
    /// A softirq's run, by vector.
    Softirq(u64),
    /// A softirq's raise -> entry, by vector.
    SoftirqRaise(u64),
}

/// Which section a statistic belongs to.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Scope {
    Task(i32),
    Cpu(u32),
    /// A global hook's section, one per matched value (e.g. per timer).
    Global(u64),
}

/// The fields a record offers: the decoded tracepoint fields the engine
/// asked for, by name.
pub(crate) trait Fields {
    fn get(&self, name: &str) -> Option<u64>;
}

impl Fields for HashMap<&str, u64> {
    fn get(&self, name: &str) -> Option<u64> {
        HashMap::get(self, name).copied()
    }
}

/// A custom hook (`-H START[,MATCH[,PID]]/END[,MATCH][,FLAGS]`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Hook {
    /// `system:name` of the start and end events.
    pub(crate) start: String,
    pub(crate) start_match: Option<String>,
    /// A field naming the task the pair belongs to (instead of the current task).
    pub(crate) start_pid: Option<String>,
    pub(crate) end: String,
    pub(crate) end_match: Option<String>,
    /// `s`: keep the stack of the start.
    pub(crate) stack: bool,
    /// `p`: start and end on the same CPU; sections per CPU.
    pub(crate) pinned: bool,
    /// `g`: not per task; sections per matched value.
    pub(crate) global: bool,
}

/// A `-H` hook that does not parse.
#[derive(Debug, thiserror::Error)]
pub(crate) enum HookSyntaxError {
    #[error("hook '{text}': expected START[,MATCH[,PID]]/END[,MATCH][,FLAGS]")]
    Shape { text: String },
    #[error("hook '{text}': unknown flag '{flag}' (flags: s stack, p pinned, g global)")]
    Flag { text: String, flag: char },
}

impl Hook {
    /// Parses trace-cmd's hook syntax. Event names may omit the system.
    pub(crate) fn parse(text: &str) -> Result<Hook, HookSyntaxError> {
        let syntax = || HookSyntaxError::Shape {
            text: text.to_owned(),
        };
        let (start, end) = text.split_once('/').ok_or_else(syntax)?;
        let start: Vec<&str> = start.split(',').map(str::trim).collect();
        let end: Vec<&str> = end.split(',').map(str::trim).collect();
        if start.len() > 3 || end.len() > 3 || start[0].is_empty() || end[0].is_empty() {
            return Err(syntax());
        }
        let flags = end.get(2).copied().unwrap_or("");
        if let Some(bad) = flags.chars().find(|c| !"spg".contains(*c)) {
            return Err(HookSyntaxError::Flag {
                text: text.to_owned(),
                flag: bad,
            });
        }
        let some = |s: Option<&&str>| s.filter(|s| !s.is_empty()).map(|s| s.to_string());
        Ok(Hook {
            start: start[0].to_string(),
            start_match: some(start.get(1)),
            start_pid: some(start.get(2)),
            end: end[0].to_string(),
            end_match: some(end.get(1)),
            stack: flags.contains('s'),
            pinned: flags.contains('p'),
            global: flags.contains('g'),
        })
    }

    /// The label of its statistic.
    pub(crate) fn label(&self) -> String {
        let short = |e: &str| e.rsplit(':').next().unwrap_or(e).to_string();
        format!("{}-{}", short(&self.start), short(&self.end))
    }
}

/// What an event is to the built-in hooks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Builtin {
    SchedSwitch,
    SchedWakeup,
    /// `sched_waking`: the wakeup as the waker starts it, in its context.
    /// Where recorded it is the wakeup (`sched_wakeup` is then ignored).
    SchedWaking,
    SysEnter,
    SysExit,
    IrqEntry,
    IrqExit,
    SoftirqRaise,
    SoftirqEntry,
    SoftirqExit,
    PageFaultUser,
    PageFaultKernel,
    Other,
}

impl Builtin {
    pub(crate) fn of(system: &str, name: &str) -> Builtin {
        match (system, name) {
            ("sched", "sched_switch") => Builtin::SchedSwitch,
            ("sched", "sched_wakeup") => Builtin::SchedWakeup,
            ("sched", "sched_waking") => Builtin::SchedWaking,
            ("raw_syscalls", "sys_enter") => Builtin::SysEnter,
            ("raw_syscalls", "sys_exit") => Builtin::SysExit,
            ("irq", "irq_handler_entry") => Builtin::IrqEntry,
            ("irq", "irq_handler_exit") => Builtin::IrqExit,
            ("irq", "softirq_raise") => Builtin::SoftirqRaise,
            ("irq", "softirq_entry") => Builtin::SoftirqEntry,
            ("irq", "softirq_exit") => Builtin::SoftirqExit,
            ("exceptions", "page_fault_user") => Builtin::PageFaultUser,
            ("exceptions", "page_fault_kernel") => Builtin::PageFaultKernel,
            _ => Builtin::Other,
        }
    }
}

/// The softirq vector names the kernel prints.
pub(crate) const SOFTIRQ_NAMES: &[&str] = &[
    "HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU",
];

/// One event occurrence, as the engine sees it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Occurrence<'a, F: Fields> {
    /// Index of the event (into the engine's event list).
    pub(crate) event: usize,
    pub(crate) time: u64,
    pub(crate) cpu: u32,
    /// The task running when the event fired.
    pub(crate) tid: i32,
    pub(crate) fields: &'a F,
}

/// Whether the caller must resolve the stack of the occurrence it showed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Want {
    Stack,
    Nothing,
}

/// The engine's state and results.
#[derive(Debug, Default)]
pub(crate) struct PairEngine {
    /// Per event index: its built-in role.
    roles: Vec<Builtin>,
    /// Custom hooks with the event indices of their start and end.
    hooks: Vec<(Hook, usize, usize)>,
    /// Watched tasks: every task when `all`.
    pub(crate) all: bool,
    pub(crate) pids: HashSet<i32>,
    tgid: HashMap<i32, i32>,
    pub(crate) stats: BTreeMap<Scope, BTreeMap<String, PairStat>>,
    syscall_names: HashMap<u64, String>,
    // Open starts.
    wakeup_at: HashMap<i32, u64>,
    preempted_at: HashMap<i32, u64>,
    blocked_at: HashMap<i32, (u64, char, usize)>,
    syscall_at: HashMap<i32, (u64, u64)>,
    irq_at: HashMap<u32, (u64, u64, i32)>,
    softirq_raised: HashMap<(u32, u64), u64>,
    softirq_at: HashMap<(u32, u64), (u64, i32)>,
    hook_at: HashMap<(usize, Scope, u64), (u64, Option<usize>)>,
    next_seq: usize,
    /// Starts that never saw their end.
    pub(crate) unmatched: u64,
    /// Blocked intervals (sched_switch:S, D, ...) whose wakeup was not
    /// seen: they end at the task's next switch-in instead.
    pub(crate) ended_at_switch_in: u64,
    /// CPU → the task on it, and task → its CPU, from switch-ins/outs.
    on_cpu: HashMap<u32, i32>,
    running: HashMap<i32, u32>,
    /// Finished pairs not yet beyond any loss window.
    settle: Settle<Finished>,
    /// Pairs dropped because records were lost (open starts and finished
    /// pairs a loss window reached).
    pub(crate) lost_dropped: u64,
    /// Every settled pair, when set (`PairLog::default()`): what latency
    /// heat maps draw. Default none (the statistics only).
    pub(crate) log: Option<PairLog>,
}

/// Every pair the engine settled, with its end and duration (ns), labels
/// interned (`labels[label]`).
#[derive(Debug, Default)]
pub(crate) struct PairLog {
    pub(crate) labels: Vec<String>,
    index: HashMap<String, u32>,
    /// `(label, task or section, end, duration)`.
    pub(crate) pairs: Vec<(u32, Scope, u64, u64)>,
}

impl PairLog {
    fn push(&mut self, f: &Finished) {
        let next = self.labels.len() as u32;
        let label = *self.index.entry(f.label.clone()).or_insert(next);
        if label == next {
            self.labels.push(f.label.clone());
        }
        self.pairs.push((label, f.scope.clone(), f.ts, f.duration));
    }
}

/// A finished pair waiting in `settle`.
#[derive(Debug)]
struct Finished {
    scope: Scope,
    label: String,
    duration: u64,
    ts: u64,
    stack: Option<usize>,
}

impl PairEngine {
    /// `roles[i]`: the built-in role of event i; `hooks`: custom hooks with
    /// their start/end event indices.
    pub(crate) fn new(
        mut roles: Vec<Builtin>,
        hooks: Vec<(Hook, usize, usize)>,
        syscall_names: HashMap<u64, String>,
    ) -> Self {
        // One wakeup event: sched_waking if it is there (a wakeup is counted once).
        if roles.contains(&Builtin::SchedWaking) {
            for role in &mut roles {
                if *role == Builtin::SchedWakeup {
                    *role = Builtin::Other;
                }
            }
        }
        PairEngine {
            roles,
            hooks,
            syscall_names,
            ..Default::default()
        }
    }

    /// A COMM or FORK record: `tid` belongs to `pid`; forks of watched
    /// processes are watched.
    pub(crate) fn task(&mut self, pid: i32, tid: i32, parent_pid: Option<i32>) {
        self.tgid.insert(tid, pid);
        if let Some(parent) = parent_pid
            && parent != pid
            && self.pids.contains(&parent)
        {
            self.pids.insert(pid);
        }
    }

    pub(crate) fn watched(&self, tid: i32) -> bool {
        tid > 0 && (self.all || self.pids.contains(self.tgid.get(&tid).unwrap_or(&tid)))
    }

    fn add(&mut self, scope: Scope, label: String, duration: u64, ts: u64, stack: Option<usize>) {
        self.settle.push(
            ts,
            Finished {
                scope,
                label,
                duration,
                ts,
                stack,
            },
        );
    }

    fn apply(
        stats: &mut BTreeMap<Scope, BTreeMap<String, PairStat>>,
        log: &mut Option<PairLog>,
        f: Finished,
    ) {
        if let Some(log) = log {
            log.push(&f);
        }
        stats
            .entry(f.scope)
            .or_default()
            .entry(f.label)
            .or_default()
            .add(f.duration, f.ts, f.stack);
    }

    /// Any record of `cpu` at `time` (moves the loss windows on).
    pub(crate) fn seen(&mut self, cpu: u32, time: u64) {
        let (stats, log) = (&mut self.stats, &mut self.log);
        self.settle.seen(cpu, time, |f| Self::apply(stats, log, f));
    }

    /// The ring of `cpu` (`None`: unknown) lost records: every open start,
    /// and every finished pair the loss window may reach, is dropped.
    pub(crate) fn lost(&mut self, cpu: Option<u32>) {
        let open = self.wakeup_at.len()
            + self.preempted_at.len()
            + self.blocked_at.len()
            + self.syscall_at.len()
            + self.irq_at.len()
            + self.softirq_raised.len()
            + self.softirq_at.len()
            + self.hook_at.len();
        self.wakeup_at.clear();
        self.preempted_at.clear();
        self.blocked_at.clear();
        self.syscall_at.clear();
        self.irq_at.clear();
        self.softirq_raised.clear();
        self.softirq_at.clear();
        self.hook_at.clear();
        let finished = self.settle.lost(cpu).len();
        self.lost_dropped += (open + finished) as u64;
    }

    /// `tid` got CPU `cpu` at `time`: ends its wakeup latency and its
    /// preemption.
    pub(crate) fn switch_in(&mut self, time: u64, cpu: u32, tid: i32) {
        if let Some(old) = self.on_cpu.insert(cpu, tid)
            && self.running.get(&old) == Some(&cpu)
        {
            self.running.remove(&old);
        }
        self.running.insert(tid, cpu);
        if tid <= 0 {
            return;
        }
        // Back on a CPU while still blocked: its wakeup was not seen (it
        // fired where the kernel emits no samples, or before the
        // switch-out). The blocked time ends here, at the latest moment
        // the wakeup can have been, and is counted apart.
        if let Some((t, letter, seq)) = self.blocked_at.remove(&tid) {
            self.ended_at_switch_in += 1;
            self.add(
                Scope::Task(tid),
                format!("sched_switch:{letter}"),
                time.saturating_sub(t),
                time,
                Some(seq),
            );
        }
        if let Some(t) = self.preempted_at.remove(&tid) {
            self.add(
                Scope::Task(tid),
                "sched_switch:R".into(),
                time.saturating_sub(t),
                time,
                None,
            );
        }
        if let Some(t) = self.wakeup_at.remove(&tid) {
            self.add(
                Scope::Task(tid),
                "sched_wakeup".into(),
                time.saturating_sub(t),
                time,
                None,
            );
        }
    }

    /// A statistic of task `tid` summed elsewhere (the in-kernel pairs of
    /// `scry profile`): joins the task's section under the label the engine
    /// gives that kind of pair.
    pub(crate) fn add_summed(&mut self, tid: i32, kind: SummedKind, stat: &PairStat) {
        let label = match kind {
            SummedKind::Syscall(id) => format!("sys_{}", self.syscall_name(id)),
            SummedKind::PageFaultUser => "page_fault_user".into(),
            SummedKind::PageFaultKernel => "page_fault_kernel".into(),
            SummedKind::Irq(irq) => format!("irq:{irq}"),
            SummedKind::Softirq(vec) => format!("softirq:{}", softirq_name(vec)),
            SummedKind::SoftirqRaise(vec) => format!("softirq_raise:{}", softirq_name(vec)),
        };
        self.stats
            .entry(Scope::Task(tid))
            .or_default()
            .entry(label)
            .or_default()
            .merge(stat);
    }

    /// A kernel function's calls by task `tid` (the function tracers of
    /// `scry profile`): the row trace-cmd labels `func: NAME()`.
    pub(crate) fn add_function(&mut self, tid: i32, func: &str, stat: &PairStat) {
        self.stats
            .entry(Scope::Task(tid))
            .or_default()
            .entry(format!("func: {func}()"))
            .or_default()
            .merge(stat);
    }

    fn syscall_name(&self, id: u64) -> String {
        self.syscall_names
            .get(&id)
            .cloned()
            .unwrap_or_else(|| format!("syscall_{id}"))
    }

    /// Feed one occurrence, in time order.
    pub(crate) fn handle<F: Fields>(&mut self, o: &Occurrence<'_, F>) -> Want {
        let mut want = Want::Nothing;
        let f = o.fields;
        match self.roles.get(o.event).copied().unwrap_or(Builtin::Other) {
            Builtin::SchedSwitch => {
                let (Some(prev), Some(state), Some(next)) =
                    (f.get("prev_pid"), f.get("prev_state"), f.get("next_pid"))
                else {
                    return Want::Nothing;
                };
                let (prev, next) = (prev as i32, next as i32);
                if self.running.get(&prev) == Some(&o.cpu) {
                    self.running.remove(&prev);
                }
                self.switch_in(o.time, o.cpu, next);
                if self.watched(prev) {
                    let letter = state_letter(state);
                    if letter == 'R' {
                        self.preempted_at.insert(prev, o.time);
                    } else {
                        let seq = self.next_seq;
                        self.next_seq += 1;
                        want = Want::Stack;
                        if self
                            .blocked_at
                            .insert(prev, (o.time, letter, seq))
                            .is_some()
                        {
                            self.unmatched += 1;
                        }
                    }
                }
            }
            Builtin::SchedWakeup | Builtin::SchedWaking => {
                let Some(pid) = f.get("pid") else {
                    return Want::Nothing;
                };
                let pid = pid as i32;
                if self.watched(pid) {
                    if self.running.contains_key(&pid) {
                        // Woken before it switched out: it never waited.
                        self.add(Scope::Task(pid), "sched_wakeup".into(), 0, o.time, None);
                    } else if self.wakeup_at.insert(pid, o.time).is_some() {
                        self.unmatched += 1;
                    }
                    if let Some((t, letter, seq)) = self.blocked_at.remove(&pid) {
                        self.add(
                            Scope::Task(pid),
                            format!("sched_switch:{letter}"),
                            o.time.saturating_sub(t),
                            o.time,
                            Some(seq),
                        );
                    }
                }
            }
            Builtin::SysEnter if self.watched(o.tid) => {
                if let Some(id) = f.get("id").or_else(|| f.get("__syscall_nr")) {
                    self.syscall_at.insert(o.tid, (id, o.time));
                }
            }
            Builtin::SysExit if self.watched(o.tid) => {
                let id = f.get("id").or_else(|| f.get("__syscall_nr"));
                if let (Some(id), Some((start_id, t))) = (id, self.syscall_at.remove(&o.tid))
                    && id == start_id
                {
                    let name = format!("sys_{}", self.syscall_name(id));
                    self.add(
                        Scope::Task(o.tid),
                        name,
                        o.time.saturating_sub(t),
                        o.time,
                        None,
                    );
                }
            }
            Builtin::IrqEntry => {
                if let Some(irq) = f.get("irq") {
                    self.irq_at.insert(o.cpu, (irq, o.time, o.tid));
                }
            }
            Builtin::IrqExit => {
                if let (Some(irq), Some((start_irq, t, tid))) =
                    (f.get("irq"), self.irq_at.remove(&o.cpu))
                    && irq == start_irq
                    && self.watched(tid)
                {
                    self.add(
                        Scope::Task(tid),
                        format!("irq:{irq}"),
                        o.time.saturating_sub(t),
                        o.time,
                        None,
                    );
                }
            }
            Builtin::SoftirqRaise => {
                if let Some(vec) = f.get("vec") {
                    self.softirq_raised.insert((o.cpu, vec), o.time);
                }
            }
            Builtin::SoftirqEntry => {
                if let Some(vec) = f.get("vec") {
                    if let Some(t) = self.softirq_raised.remove(&(o.cpu, vec))
                        && self.watched(o.tid)
                    {
                        let name = softirq_name(vec);
                        self.add(
                            Scope::Task(o.tid),
                            format!("softirq_raise:{name}"),
                            o.time.saturating_sub(t),
                            o.time,
                            None,
                        );
                    }
                    self.softirq_at.insert((o.cpu, vec), (o.time, o.tid));
                }
            }
            Builtin::SoftirqExit => {
                if let Some(vec) = f.get("vec")
                    && let Some((t, tid)) = self.softirq_at.remove(&(o.cpu, vec))
                    && self.watched(tid)
                {
                    let name = softirq_name(vec);
                    self.add(
                        Scope::Task(tid),
                        format!("softirq:{name}"),
                        o.time.saturating_sub(t),
                        o.time,
                        None,
                    );
                }
            }
            Builtin::PageFaultUser | Builtin::PageFaultKernel if self.watched(o.tid) => {
                let label = if self.roles.get(o.event) == Some(&Builtin::PageFaultUser) {
                    "page_fault_user"
                } else {
                    "page_fault_kernel"
                };
                self.stats
                    .entry(Scope::Task(o.tid))
                    .or_default()
                    .entry(label.into())
                    .or_default()
                    .count_only();
            }
            _ => {}
        }
        for i in 0..self.hooks.len() {
            if self.handle_hook(i, o) == Want::Stack {
                want = Want::Stack;
            }
        }
        want
    }

    fn handle_hook<F: Fields>(&mut self, i: usize, o: &Occurrence<'_, F>) -> Want {
        let (hook, start, end) = &self.hooks[i];
        let (hook, start, end) = (hook.clone(), *start, *end);
        let mut want = Want::Nothing;
        if o.event == end {
            let key = hook
                .end_match
                .as_deref()
                .and_then(|m| o.fields.get(m))
                .unwrap_or(0);
            let scope = self.hook_scope(&hook, o.tid, o.cpu, key);
            if let Some((t, seq)) = self.hook_at.remove(&(i, scope.clone(), key))
                && (hook.global || self.watched_scope(&scope))
            {
                self.add(scope, hook.label(), o.time.saturating_sub(t), o.time, seq);
            }
        }
        if o.event == start {
            let key = hook
                .start_match
                .as_deref()
                .and_then(|m| o.fields.get(m))
                .unwrap_or(0);
            let tid = hook
                .start_pid
                .as_deref()
                .and_then(|p| o.fields.get(p))
                .map_or(o.tid, |p| p as i32);
            let scope = self.hook_scope(&hook, tid, o.cpu, key);
            let seq = if hook.stack && (hook.global || self.watched(tid)) {
                let seq = self.next_seq;
                self.next_seq += 1;
                want = Want::Stack;
                Some(seq)
            } else {
                None
            };
            if self
                .hook_at
                .insert((i, scope, key), (o.time, seq))
                .is_some()
            {
                self.unmatched += 1;
            }
        }
        want
    }

    fn hook_scope(&self, hook: &Hook, tid: i32, cpu: u32, key: u64) -> Scope {
        if hook.global {
            Scope::Global(key)
        } else if hook.pinned {
            Scope::Cpu(cpu)
        } else {
            Scope::Task(tid)
        }
    }

    fn watched_scope(&self, scope: &Scope) -> bool {
        match scope {
            Scope::Task(tid) => self.watched(*tid),
            Scope::Cpu(_) | Scope::Global(_) => true,
        }
    }

    /// The end of the input: finished pairs settle; starts still open are
    /// counted as unmatched.
    pub(crate) fn finish(&mut self) {
        let (stats, log) = (&mut self.stats, &mut self.log);
        self.settle.finish(|f| Self::apply(stats, log, f));
        self.unmatched += (self.blocked_at.len()
            + self.syscall_at.len()
            + self.hook_at.len()
            + self.wakeup_at.len()) as u64;
    }
}

fn softirq_name(vec: u64) -> String {
    SOFTIRQ_NAMES
        .get(vec as usize)
        .map_or_else(|| vec.to_string(), |s| s.to_string())
}

#[cfg(test)]
#[path = "pairs_tests.rs"]
mod tests;
