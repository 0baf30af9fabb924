//! offcputime's, offwaketime's and wakeuptime's tables: the kernel's sums
//! (per thread and pair of stacks; per blocked thread's and waker's
//! stacks; per waker, target and waker's stack) with their
//! stacks named, as the entries bcc prints, smallest total
//! first (bcc's order: the largest ends the output). Entries whose names
//! come out the same (two address stacks through the same functions) are
//! summed (their split per blocked state kept: `OffcpuEntry::states`).
//! The program's own frames (`bpf_prog_*`, `bpf_trace_run*`), on
//! top of every kernel stack taken from a tracepoint, are left out.

use std::collections::{BTreeMap, HashMap};

use crate::model::sample::{Frame, FrameId, FrameKind, FrameTable, ResolvedSample};
use crate::symbol::raw_stacks::{Named, RawStack};
use crate::sys::bpf_offcputime::OffcpuSum;
use crate::sys::bpf_offwaketime::{OffwakeSum, TaskStacks};
use crate::sys::bpf_wakeuptime::WakeupSum;

/// One stack half: its function names innermost first, or why there are
/// none.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub(crate) enum StackPart {
    Frames(Vec<String>),
    /// The kernel could not take it (bcc's `[Missed User Stack]`).
    Missed,
    /// Not asked for, or there is none (a kernel thread's user stack).
    Absent,
}

/// Which halves to keep (bcc's `-U` user only, `-K` kernel only).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct StackHalves {
    pub(crate) user: bool,
    pub(crate) kernel: bool,
}

/// One printed entry.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub(crate) struct OffcpuEntry {
    pub(crate) comm: String,
    pub(crate) tid: u32,
    pub(crate) tgid: u32,
    pub(crate) us: u64,
    pub(crate) kernel: StackPart,
    pub(crate) user: StackPart,
    /// `us` split by the task's state when it left the CPU (`__state`).
    pub(crate) states: BTreeMap<u32, u64>,
}

impl OffcpuEntry {
    /// Frames of both halves (where bcc's `-d` puts its delimiter).
    pub(crate) fn has_both_stacks(&self) -> bool {
        matches!(self.kernel, StackPart::Frames(_)) && matches!(self.user, StackPart::Frames(_))
    }
}

/// Frames of the BPF program itself, on top of each kernel stack.
fn own_frame(name: &str) -> bool {
    name.starts_with("bpf_prog_")
        || name.starts_with("bpf_trace_run")
        || name.starts_with("__bpf_trace_")
        || name.starts_with("__traceiter_")
}

/// bpf_get_stackid's answer for a stack that is not there: a task
/// without a user stack, or a sample taken in user mode (no kernel one).
const EFAULT: i32 = -14;

/// A user stack id that says the kernel missed the stack (not -1, a
/// kernel thread, nor -EFAULT, a task without a user stack).
fn missed_user(id: i32) -> bool {
    id < 0 && id != -1 && id != EFAULT
}

/// A named stack's function names, innermost first: (kernel, user), the
/// program's own frames left out.
pub(crate) fn frame_names(sample: &ResolvedSample, named: &Named) -> (Vec<String>, Vec<String>) {
    frame_names_in(sample, &named.frames)
}

/// [`frame_names`] with the frames of a resolver still in use.
pub(crate) fn frame_names_in(
    sample: &ResolvedSample,
    frames: &FrameTable,
) -> (Vec<String>, Vec<String>) {
    let mut kernel = Vec::new();
    let mut user = Vec::new();
    for &id in sample.stack.iter() {
        let frame = frames.get(id);
        let name = frame.sym.as_deref().unwrap_or("[unknown]").to_string();
        match frame.kind {
            FrameKind::Kernel => kernel.push(name),
            FrameKind::User => user.push(name),
        }
    }
    let skip = kernel.iter().take_while(|n| own_frame(n)).count();
    kernel.drain(..skip);
    (kernel, user)
}

/// Which stacks the kernel gave for one key, and its user stack id.
#[derive(Clone, Copy, Debug)]
struct TakenStacks {
    kernel: bool,
    user: bool,
    user_stack_id: i32,
    /// A sample taken in user mode (its kernel stack id -EFAULT): no
    /// kernel stack to miss.
    kernel_in_user_mode: bool,
}

/// A named stack's (kernel, user) parts, as `halves` asks.
fn stack_parts(
    sample: &ResolvedSample,
    named: &Named,
    taken: TakenStacks,
    halves: StackHalves,
) -> (StackPart, StackPart) {
    let (kernel, user) = frame_names(sample, named);
    let kernel = match (taken.kernel, halves.kernel) {
        (_, false) => StackPart::Absent,
        (false, true) if taken.kernel_in_user_mode => StackPart::Absent,
        (false, true) => StackPart::Missed,
        (true, true) => StackPart::Frames(kernel),
    };
    let user = match (taken.user, halves.user) {
        (_, false) => StackPart::Absent,
        (false, true) if missed_user(taken.user_stack_id) => StackPart::Missed,
        (false, true) => StackPart::Absent,
        (true, true) => StackPart::Frames(user),
    };
    (kernel, user)
}

/// One side of an offwaketime entry: a task and its stacks.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub(crate) struct TaskSide {
    pub(crate) comm: String,
    pub(crate) tid: u32,
    pub(crate) kernel: StackPart,
    pub(crate) user: StackPart,
}

/// One offwaketime entry: `target` blocked `us` in all with its stacks
/// until `waker` (empty name and stacks: none seen) woke it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub(crate) struct OffwakeEntry {
    pub(crate) target: TaskSide,
    pub(crate) waker: TaskSide,
    pub(crate) us: u64,
}

/// The stacks `named` must hold for offwaketime's `sums`: per sum, the
/// target's, then the waker's (empty when none was seen).
pub(crate) fn offwake_raw_stacks(sums: &[OffwakeSum]) -> Vec<RawStack<'_>> {
    fn side(t: &TaskStacks, weight: u64) -> RawStack<'_> {
        RawStack {
            pid: t.tgid as i32,
            tid: t.tid as i32,
            comm: &t.comm,
            kernel: t.kernel.as_deref().unwrap_or_default(),
            user: t.user.as_deref().unwrap_or_default(),
            weight,
            top: None,
        }
    }
    let nobody = RawStack {
        pid: -1,
        tid: -1,
        comm: "",
        kernel: &[],
        user: &[],
        weight: 0,
        top: None,
    };
    sums.iter()
        .flat_map(|s| {
            let waker = s.waker.as_ref().map_or(nobody, |w| side(w, s.us));
            [side(&s.target, s.us), waker]
        })
        .collect()
}

/// offwaketime's entries of `sums`, whose stacks `named` holds as
/// [`offwake_raw_stacks`] gave them: alike ones summed, smallest first.
pub(crate) fn offwake_entries(
    sums: &[OffwakeSum],
    named: &Named,
    halves: StackHalves,
) -> Vec<OffwakeEntry> {
    let side = |t: Option<&TaskStacks>, sample: Option<&ResolvedSample>| {
        let (Some(t), Some(sample)) = (t, sample) else {
            return TaskSide {
                comm: String::new(),
                tid: 0,
                kernel: StackPart::Absent,
                user: StackPart::Absent,
            };
        };
        let taken = TakenStacks {
            kernel: t.kernel.is_some(),
            user: t.user.is_some(),
            user_stack_id: t.user_stack_id,
            kernel_in_user_mode: false,
        };
        let (kernel, user) = stack_parts(sample, named, taken, halves);
        TaskSide {
            comm: t.comm.clone(),
            tid: t.tid,
            kernel,
            user,
        }
    };
    let mut index: HashMap<(TaskSide, TaskSide), usize> = HashMap::new();
    let mut entries: Vec<OffwakeEntry> = Vec::new();
    for (i, sum) in sums.iter().enumerate() {
        let target = side(Some(&sum.target), named.samples.get(2 * i));
        let waker = side(sum.waker.as_ref(), named.samples.get(2 * i + 1));
        let key = (target.clone(), waker.clone());
        if let Some(&at) = index.get(&key) {
            entries[at].us += sum.us;
            continue;
        }
        index.insert(key, entries.len());
        entries.push(OffwakeEntry {
            target,
            waker,
            us: sum.us,
        });
    }
    entries.sort_by(|a, b| {
        a.us.cmp(&b.us)
            .then_with(|| a.target.tid.cmp(&b.target.tid))
    });
    entries
}

/// offwaketime's sums as one stack each, for an export (`--to`): bcc's
/// folded chain (`target;blocked stack;--;waker's stack;waker`) as a
/// sample of the blocked task, leaf first: the waker's name, its stack
/// outermost frame first, `--`, the blocked stack innermost first; the
/// period is the blocked microseconds. `named` holds the stacks as
/// [`offwake_raw_stacks`] gave them (a sum with no waker seen keeps only
/// the blocked stack).
pub(crate) fn offwake_joined(named: Named) -> Named {
    let Named {
        samples,
        mut frames,
        gone,
    } = named;
    let mut label = |name: &str| {
        frames.intern(Frame {
            sym: Some(name.into()),
            dso: "[unknown]".into(),
            kind: FrameKind::Kernel,
            inlined: false,
            srcline: None,
        })
    };
    let mut joined = Vec::with_capacity(samples.len() / 2);
    let mut pairs = samples.into_iter();
    while let Some(target) = pairs.next() {
        let mut stack: Vec<FrameId> = Vec::new();
        if let Some(waker) = pairs.next().filter(|w| w.pid >= 0) {
            stack.push(label(&waker.comm));
            stack.extend(waker.stack.iter().rev());
            stack.push(label("--"));
        }
        stack.extend(target.stack.iter());
        joined.push(ResolvedSample {
            stack: stack.into(),
            ..target
        });
    }
    Named {
        samples: joined,
        frames,
        gone,
    }
}

/// One wakeuptime entry: `target` blocked `us` in all until `waker`
/// (with this kernel stack) woke it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub(crate) struct WakeupEntry {
    pub(crate) waker: String,
    pub(crate) target: String,
    pub(crate) us: u64,
    pub(crate) stack: StackPart,
}

/// wakeuptime's entries of `sums`, whose stacks `named` holds in the same
/// order: alike ones summed, smallest first.
pub(crate) fn wakeup_entries(sums: &[WakeupSum], named: &Named) -> Vec<WakeupEntry> {
    let mut index: HashMap<(String, String, StackPart), usize> = HashMap::new();
    let mut entries: Vec<WakeupEntry> = Vec::new();
    for (sum, sample) in sums.iter().zip(&named.samples) {
        let stack = match &sum.stack {
            Some(_) => StackPart::Frames(frame_names(sample, named).0),
            None => StackPart::Missed,
        };
        let key = (sum.waker.clone(), sum.target.clone(), stack.clone());
        if let Some(&at) = index.get(&key) {
            entries[at].us += sum.us;
            continue;
        }
        index.insert(key, entries.len());
        entries.push(WakeupEntry {
            waker: sum.waker.clone(),
            target: sum.target.clone(),
            us: sum.us,
            stack,
        });
    }
    entries.sort_by(|a, b| a.us.cmp(&b.us).then_with(|| a.target.cmp(&b.target)));
    entries
}

/// The entries of `sums`, whose stacks `named` holds in the same order.
pub(crate) fn offcpu_entries(
    sums: &[OffcpuSum],
    named: &Named,
    halves: StackHalves,
) -> Vec<OffcpuEntry> {
    let mut index: HashMap<(u32, String, StackPart, StackPart), usize> = HashMap::new();
    let mut entries: Vec<OffcpuEntry> = Vec::new();
    for (sum, sample) in sums.iter().zip(&named.samples) {
        let taken = TakenStacks {
            kernel: sum.kernel.is_some(),
            user: sum.user.is_some(),
            user_stack_id: sum.user_stack_id,
            kernel_in_user_mode: sum.kernel_stack_id == EFAULT,
        };
        let (kernel, user) = stack_parts(sample, named, taken, halves);
        let key = (sum.tid, sum.comm.clone(), kernel.clone(), user.clone());
        if let Some(&at) = index.get(&key) {
            entries[at].us += sum.us;
            *entries[at].states.entry(sum.state).or_insert(0) += sum.us;
            continue;
        }
        index.insert(key, entries.len());
        entries.push(OffcpuEntry {
            comm: sum.comm.clone(),
            tid: sum.tid,
            tgid: sum.tgid,
            us: sum.us,
            kernel,
            user,
            states: BTreeMap::from([(sum.state, sum.us)]),
        });
    }
    entries.sort_by(|a, b| a.us.cmp(&b.us).then_with(|| a.tid.cmp(&b.tid)));
    entries
}

/// The blocked time of all entries per state at the switch-out.
pub(crate) fn state_totals(entries: &[OffcpuEntry]) -> BTreeMap<u32, u64> {
    let mut totals = BTreeMap::new();
    for (&state, &us) in entries.iter().flat_map(|e| &e.states) {
        *totals.entry(state).or_insert(0) += us;
    }
    totals
}

/// The kernel's task state bits (include/linux/sched.h), by name.
const STATE_BITS: &[(u32, &str)] = &[
    (0x1, "interruptible"),
    (0x2, "uninterruptible"),
    (0x4, "stopped"),
    (0x8, "traced"),
    (0x10, "exit_dead"),
    (0x20, "exit_zombie"),
    (0x40, "parked"),
    (0x80, "dead"),
    (0x100, "wakekill"),
    (0x200, "waking"),
    (0x400, "noload"),
    (0x800, "new"),
    (0x1000, "rtlock_wait"),
    (0x2000, "freezable"),
    (0x8000, "frozen"),
];

/// A task state (`__state`) by the kernel's names: `running` (0:
/// preempted), `idle` (TASK_IDLE), `killable` (TASK_KILLABLE), else its
/// bits joined by `|` (`interruptible|freezable`; a bit without a name in
/// hex).
pub(crate) fn state_name(state: u32) -> String {
    match state {
        0 => return "running".to_string(),
        0x402 => return "idle".to_string(),
        0x102 => return "killable".to_string(),
        _ => {}
    }
    let mut names: Vec<String> = STATE_BITS
        .iter()
        .filter(|&&(bit, _)| state & bit != 0)
        .map(|&(_, name)| name.to_string())
        .collect();
    let unnamed = STATE_BITS.iter().fold(state, |rest, &(bit, _)| rest & !bit);
    if unnamed != 0 {
        names.push(format!("{unnamed:#x}"));
    }
    names.join("|")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::symbol::ResolveOptions;
    use crate::symbol::raw_stacks::{RawStack, RawStackResolver};

    fn sum(tid: u32, us: u64, user_stack_id: i32) -> OffcpuSum {
        OffcpuSum {
            tid,
            tgid: tid,
            comm: "t".to_string(),
            us,
            user: None,
            kernel: None,
            user_stack_id,
            kernel_stack_id: -17,
            state: 1,
        }
    }

    #[test]
    fn sums_alike_entries_and_orders_smallest_first() {
        let mut preempted = sum(1, 12, -1);
        preempted.state = 0;
        // A sample taken in user mode has no kernel stack (-EFAULT): not a miss.
        let user_mode = OffcpuSum {
            kernel_stack_id: -14,
            ..sum(3, 90, -17)
        };
        let sums = vec![sum(1, 30, -1), sum(2, 5, -17), preempted, user_mode];
        let mut raw = RawStackResolver::new(&ResolveOptions::default());
        for s in &sums {
            raw.add(&RawStack {
                pid: i32::MAX,
                tid: s.tid as i32,
                comm: &s.comm,
                kernel: &[],
                user: &[],
                weight: s.us,
                top: None,
            });
        }
        let named = raw.finish();
        let all = StackHalves {
            user: true,
            kernel: true,
        };
        let entries = offcpu_entries(&sums, &named, all);
        assert_eq!(entries.len(), 3);
        assert_eq!(
            (entries[2].tid, entries[2].kernel.clone()),
            (3, StackPart::Absent)
        );
        assert_eq!((entries[0].tid, entries[0].us), (2, 5));
        assert_eq!(entries[0].user, StackPart::Missed);
        assert_eq!((entries[1].tid, entries[1].us), (1, 42));
        assert_eq!(entries[1].user, StackPart::Absent);
        assert_eq!(entries[1].kernel, StackPart::Missed);
        assert_eq!(entries[1].states, BTreeMap::from([(0, 12), (1, 30)]));
        assert_eq!(state_totals(&entries), BTreeMap::from([(0, 12), (1, 125)]));
        assert_eq!(state_name(2), "uninterruptible");
        assert_eq!(state_name(0x2001), "interruptible|freezable");
        assert_eq!(state_name(0x4002), "uninterruptible|0x4000");
        assert!(own_frame("bpf_prog_6896d07dd3e1383c_sched_switch") && !own_frame("schedule"));
    }
}
