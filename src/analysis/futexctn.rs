//! futexctn's tables: each thread's waits on a futex from a user stack
//! (the kernel's sums, the stack named), alike ones summed, largest total
//! last (as the tools that sum per stack print); and the same waits per
//! lock (address and process): count, total, max, the threads that
//! waited and the functions that took it. The function that took a lock
//! is the first user frame outside libc's locking code (`pthread_*`,
//! `__lll_*`, `__futex*`, `futex*`, `syscall`).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::hist::{Histogram, Scale};
use super::offcputime::{StackPart, frame_names};
use crate::symbol::raw_stacks::{Named, RawStack, RawTop};
use crate::sys::bpf_futexctn::FutexWaits;

/// One thread's waits on one futex from one stack.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct FutexEntry {
    pub(crate) comm: String,
    pub(crate) tid: u32,
    pub(crate) tgid: u32,
    pub(crate) uaddr: u64,
    pub(crate) contended: u64,
    pub(crate) total_ns: u64,
    pub(crate) max_ns: u64,
    pub(crate) min_ns: u64,
    /// The waits in µs, log2.
    pub(crate) hist: Histogram,
    /// User frames, innermost first.
    pub(crate) stack: StackPart,
}

impl FutexEntry {
    /// The function that took the lock: the first frame outside libc's
    /// locking code.
    pub(crate) fn caller(&self) -> Option<&str> {
        let StackPart::Frames(frames) = &self.stack else {
            return None;
        };
        frames.iter().map(String::as_str).find(|f| !locking_code(f))
    }
}

/// libc's (and the kernel's entry) frames between a lock call and the
/// futex system call. glibc's internal aliases (`__GI___lll_lock_wait`,
/// the name perf gives `__lll_lock_wait`'s address) count as their names.
fn locking_code(name: &str) -> bool {
    let name = name.strip_prefix("__GI_").unwrap_or(name);
    [
        "pthread_",
        "__pthread_",
        "__lll_",
        "__futex",
        "futex",
        "syscall",
        "[unknown]",
    ]
    .iter()
    .any(|p| name.starts_with(p))
}

/// The stacks to name: per wait entry its user stack, with the registers
/// and stack top kept with it.
pub(crate) fn futex_raw_stacks(waits: &[FutexWaits]) -> Vec<RawStack<'_>> {
    waits
        .iter()
        .map(|w| RawStack {
            pid: w.tgid as i32,
            tid: w.tid as i32,
            comm: &w.comm,
            kernel: &[],
            user: w.stack.as_deref().unwrap_or_default(),
            weight: w.contended,
            top: w.copy.as_ref().map(|c| RawTop {
                ip: c.ip,
                sp: c.sp,
                bp: c.bp,
                stack: &c.stack,
            }),
        })
        .collect()
}

/// The entries of `waits`, whose stacks `named` holds in the same order:
/// alike ones summed, smallest total first.
pub(crate) fn futex_entries(waits: &[FutexWaits], named: &Named) -> Vec<FutexEntry> {
    let mut index: HashMap<(u32, u64, StackPart), usize> = HashMap::new();
    let mut entries: Vec<FutexEntry> = Vec::new();
    for (w, sample) in waits.iter().zip(&named.samples) {
        let stack = match &w.stack {
            Some(_) => StackPart::Frames(frame_names(sample, named).1),
            None => StackPart::Missed,
        };
        let key = (w.tid, w.uaddr, stack.clone());
        let hist = Histogram::from_slots(Scale::Log2, "usecs", &w.slots);
        if let Some(&at) = index.get(&key) {
            let e = &mut entries[at];
            e.contended += w.contended;
            e.total_ns += w.total_ns;
            e.max_ns = e.max_ns.max(w.max_ns);
            e.min_ns = e.min_ns.min(w.min_ns);
            e.hist.merge(&hist);
            continue;
        }
        index.insert(key, entries.len());
        entries.push(FutexEntry {
            comm: w.comm.clone(),
            tid: w.tid,
            tgid: w.tgid,
            uaddr: w.uaddr,
            contended: w.contended,
            total_ns: w.total_ns,
            max_ns: w.max_ns,
            min_ns: w.min_ns,
            hist,
            stack,
        });
    }
    entries.sort_by(|a, b| a.total_ns.cmp(&b.total_ns).then_with(|| a.tid.cmp(&b.tid)));
    entries
}

/// One lock's waits, all threads and stacks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct LockSummary {
    pub(crate) tgid: u32,
    pub(crate) uaddr: u64,
    pub(crate) contended: u64,
    pub(crate) total_ns: u64,
    pub(crate) max_ns: u64,
    /// The threads that waited: tid, name, their total.
    pub(crate) threads: BTreeMap<u32, (String, u64)>,
    /// The functions that took it.
    pub(crate) callers: BTreeSet<String>,
    pub(crate) hist: Histogram,
}

/// The entries per lock (process and address), largest total first.
pub(crate) fn by_lock(entries: &[FutexEntry]) -> Vec<LockSummary> {
    let mut locks: BTreeMap<(u32, u64), LockSummary> = BTreeMap::new();
    for e in entries {
        let lock = locks
            .entry((e.tgid, e.uaddr))
            .or_insert_with(|| LockSummary {
                tgid: e.tgid,
                uaddr: e.uaddr,
                contended: 0,
                total_ns: 0,
                max_ns: 0,
                threads: BTreeMap::new(),
                callers: BTreeSet::new(),
                hist: Histogram::log2("usecs"),
            });
        lock.contended += e.contended;
        lock.total_ns += e.total_ns;
        lock.max_ns = lock.max_ns.max(e.max_ns);
        lock.threads
            .entry(e.tid)
            .or_insert_with(|| (e.comm.clone(), 0))
            .1 += e.total_ns;
        lock.callers.extend(e.caller().map(str::to_string));
        lock.hist.merge(&e.hist);
    }
    let mut locks: Vec<LockSummary> = locks.into_values().collect();
    locks.sort_by_key(|l| std::cmp::Reverse(l.total_ns));
    locks
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(tid: u32, uaddr: u64, total_ns: u64, frames: &[&str]) -> FutexEntry {
        FutexEntry {
            comm: format!("t{tid}"),
            tid,
            tgid: 1,
            uaddr,
            contended: 2,
            total_ns,
            max_ns: total_ns / 2,
            min_ns: total_ns / 4,
            hist: Histogram::from_slots(Scale::Log2, "usecs", &[0, 2]),
            stack: StackPart::Frames(frames.iter().map(|f| f.to_string()).collect()),
        }
    }

    #[test]
    fn locks_sum_their_threads_and_name_their_callers() {
        let frames = [
            "__GI___lll_lock_wait",
            "pthread_mutex_lock@@GLIBC_2.2.5",
            "take_lock",
            "main",
        ];
        let entries = [
            entry(2, 0x10, 300, &frames),
            entry(3, 0x10, 500, &frames),
            entry(3, 0x20, 50, &["futex_wait", "wait_here"]),
        ];
        assert_eq!(entries[0].caller(), Some("take_lock"));
        let locks = by_lock(&entries);
        assert_eq!(locks.len(), 2);
        assert_eq!(
            (locks[0].uaddr, locks[0].total_ns, locks[0].contended),
            (0x10, 800, 4)
        );
        assert_eq!(locks[0].max_ns, 250);
        assert_eq!(locks[0].threads.get(&3), Some(&("t3".to_string(), 500)));
        assert_eq!(locks[0].callers, BTreeSet::from(["take_lock".to_string()]));
        assert_eq!(locks[0].hist.total(), 4);
        assert_eq!(locks[1].callers, BTreeSet::from(["wait_here".to_string()]));
    }
}
