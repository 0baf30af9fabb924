//! offcputime's and wakeuptime's tables: the kernel's sums (per thread
//! and pair of stacks; per waker, target and waker's stack) with their
//! stacks named, as the entries bcc prints, smallest total
//! first (bcc's order: the largest ends the output). Entries whose names
//! come out the same (two address stacks through the same functions) are
//! summed. The program's own frames (`bpf_prog_*`, `bpf_trace_run*`), on
//! top of every kernel stack taken from a tracepoint, are left out.

use std::collections::HashMap;

use crate::model::sample::{FrameKind, ResolvedSample};
use crate::symbol::raw_stacks::Named;
use crate::sys::bpf_offcputime::OffcpuSum;
use crate::sys::bpf_wakeuptime::WakeupSum;

/// One stack half: its function names innermost first, or why there are
/// none.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub enum StackPart {
    Frames(Vec<String>),
    /// The kernel could not take it (bcc's `[Missed User Stack]`).
    Missed,
    /// Not asked for, or there is none (a kernel thread's user stack).
    Absent,
}

/// Which halves to keep (bcc's `-U` user only, `-K` kernel only).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StackHalves {
    pub user: bool,
    pub kernel: bool,
}

/// One printed entry.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct OffcpuEntry {
    pub comm: String,
    pub tid: u32,
    pub tgid: u32,
    pub us: u64,
    pub kernel: StackPart,
    pub user: StackPart,
}

impl OffcpuEntry {
    /// Frames of both halves (where bcc's `-d` puts its delimiter).
    pub fn has_both_stacks(&self) -> bool {
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

/// A user stack id that says the kernel missed the stack (not -1, a
/// kernel thread, nor -EFAULT, a task without a user stack).
fn missed_user(id: i32) -> bool {
    id < 0 && id != -1 && id != -14
}

/// A named stack's function names, innermost first: (kernel, user), the
/// program's own frames left out.
fn frame_names(sample: &ResolvedSample, named: &Named) -> (Vec<String>, Vec<String>) {
    let mut kernel = Vec::new();
    let mut user = Vec::new();
    for &id in sample.stack.iter() {
        let frame = named.frames.get(id);
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

/// One wakeuptime entry: `target` blocked `us` in all until `waker`
/// (with this kernel stack) woke it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct WakeupEntry {
    pub waker: String,
    pub target: String,
    pub us: u64,
    pub stack: StackPart,
}

/// wakeuptime's entries of `sums`, whose stacks `named` holds in the same
/// order: alike ones summed, smallest first.
pub fn wakeup_entries(sums: &[WakeupSum], named: &Named) -> Vec<WakeupEntry> {
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
pub fn offcpu_entries(sums: &[OffcpuSum], named: &Named, halves: StackHalves) -> Vec<OffcpuEntry> {
    let mut index: HashMap<(u32, String, StackPart, StackPart), usize> = HashMap::new();
    let mut entries: Vec<OffcpuEntry> = Vec::new();
    for (sum, sample) in sums.iter().zip(&named.samples) {
        let (kernel, user) = frame_names(sample, named);
        let kernel = match (&sum.kernel, halves.kernel) {
            (_, false) => StackPart::Absent,
            (None, true) => StackPart::Missed,
            (Some(_), true) => StackPart::Frames(kernel),
        };
        let user = match (&sum.user, halves.user) {
            (_, false) => StackPart::Absent,
            (None, true) if missed_user(sum.user_stack_id) => StackPart::Missed,
            (None, true) => StackPart::Absent,
            (Some(_), true) => StackPart::Frames(user),
        };
        let key = (sum.tid, sum.comm.clone(), kernel.clone(), user.clone());
        if let Some(&at) = index.get(&key) {
            entries[at].us += sum.us;
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
        });
    }
    entries.sort_by(|a, b| a.us.cmp(&b.us).then_with(|| a.tid.cmp(&b.tid)));
    entries
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
        }
    }

    #[test]
    fn sums_alike_entries_and_orders_smallest_first() {
        let sums = vec![sum(1, 30, -1), sum(2, 5, -17), sum(1, 12, -1)];
        let mut raw = RawStackResolver::new(&ResolveOptions::default());
        for s in &sums {
            raw.add(&RawStack {
                pid: i32::MAX,
                tid: s.tid as i32,
                comm: &s.comm,
                kernel: &[],
                user: &[],
                weight: s.us,
            });
        }
        let named = raw.finish();
        let all = StackHalves {
            user: true,
            kernel: true,
        };
        let entries = offcpu_entries(&sums, &named, all);
        assert_eq!(entries.len(), 2);
        assert_eq!((entries[0].tid, entries[0].us), (2, 5));
        assert_eq!(entries[0].user, StackPart::Missed);
        assert_eq!((entries[1].tid, entries[1].us), (1, 42));
        assert_eq!(entries[1].user, StackPart::Absent);
        assert_eq!(entries[1].kernel, StackPart::Missed);
        assert!(own_frame("bpf_prog_6896d07dd3e1383c_sched_switch") && !own_frame("schedule"));
    }
}
