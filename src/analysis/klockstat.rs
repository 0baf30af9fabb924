//! klockstat's table: the kernel's contention sums (per kernel stack and
//! lock type) as `perf lock contention -b` shows them, per caller (the
//! first frame of the stack outside the locking code and the tracer's own)
//! and lock type: count, total, max, average; largest total first (perf's
//! default sort, `wait_total`).

use std::collections::HashMap;

use super::offcputime::frame_names;
use crate::symbol::raw_stacks::{Named, RawStack};
use crate::sys::bpf_klockstat::LockWaits;

/// One row: a caller's contentions on one type of lock.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct LockRow {
    pub(crate) caller: String,
    pub(crate) kind: String,
    pub(crate) count: u64,
    pub(crate) total_ns: u64,
    pub(crate) max_ns: u64,
    pub(crate) min_ns: u64,
    /// The first stack seen, innermost first (the lock code included).
    pub(crate) stack: Vec<String>,
}

/// Frames of the locking code and of the tracepoint itself.
fn lock_internal(name: &str) -> bool {
    const PREFIXES: &[&str] = &[
        "bpf_",
        "__bpf_",
        "__traceiter_",
        "trace_contention",
        "mutex_",
        "__mutex_",
        "_raw_",
        "queued_",
        "native_queued",
        "__pv_queued",
        "pv_",
        "rwsem_",
        "__rwsem",
        "down_",
        "__down",
        "up_",
        "osq_",
        "rt_mutex",
        "__rt_mutex",
        "rtlock",
        "percpu_down",
        "percpu_rwsem",
        "schedule",
        "__schedule",
        "preempt_schedule",
        "lock_",
        "__lock_",
        "do_raw_",
        "raw_spin",
    ];
    PREFIXES.iter().any(|p| name.starts_with(p))
}

/// The type perf names for `LCB_F_*` flags (spin 1, read 2, write 4, rt 8,
/// percpu 16, mutex 32).
pub(crate) fn lock_kind(flags: u32) -> &'static str {
    match flags {
        1 => "spinlock",
        3 => "rwlock:R",
        5 => "rwlock:W",
        2 => "rwsem:R",
        4 => "rwsem:W",
        18 => "pcpu-sem:R",
        20 => "pcpu-sem:W",
        32 => "mutex",
        33 => "mutex-spin",
        8 => "rtmutex",
        10 => "rwlock-rt:R",
        12 => "rwlock-rt:W",
        _ => "unknown",
    }
}

/// The stacks to name, one per sum.
pub(crate) fn lock_raw_stacks(waits: &[LockWaits]) -> Vec<RawStack<'_>> {
    waits
        .iter()
        .map(|w| RawStack {
            pid: -1,
            tid: -1,
            comm: "",
            kernel: w.stack.as_deref().unwrap_or_default(),
            user: &[],
            weight: w.count,
            top: None,
        })
        .collect()
}

/// The rows of `waits`, whose stacks `named` holds in the same order.
pub(crate) fn lock_rows(waits: &[LockWaits], named: &Named) -> Vec<LockRow> {
    let mut index: HashMap<(String, u32), usize> = HashMap::new();
    let mut rows: Vec<LockRow> = Vec::new();
    for (w, sample) in waits.iter().zip(&named.samples) {
        let frames = frame_names(sample, named).0;
        let caller = match &w.stack {
            None => "[missed]".to_string(),
            Some(_) => frames
                .iter()
                .find(|f| !lock_internal(f))
                .cloned()
                .unwrap_or_else(|| "[unknown]".to_string()),
        };
        let key = (caller.clone(), w.flags);
        if let Some(&at) = index.get(&key) {
            let r = &mut rows[at];
            r.count += w.count;
            r.total_ns += w.total_ns;
            r.max_ns = r.max_ns.max(w.max_ns);
            r.min_ns = r.min_ns.min(w.min_ns);
            continue;
        }
        index.insert(key, rows.len());
        rows.push(LockRow {
            caller,
            kind: lock_kind(w.flags).to_string(),
            count: w.count,
            total_ns: w.total_ns,
            max_ns: w.max_ns,
            min_ns: w.min_ns,
            stack: frames,
        });
    }
    rows.sort_by(|a, b| {
        b.total_ns
            .cmp(&a.total_ns)
            .then_with(|| a.caller.cmp(&b.caller))
    });
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_and_callers_are_perfs() {
        assert_eq!(lock_kind(32), "mutex");
        assert_eq!(lock_kind(2), "rwsem:R");
        assert_eq!(lock_kind(1), "spinlock");
        assert!(lock_internal("__mutex_lock.constprop.0") && lock_internal("_raw_spin_lock"));
        assert!(!lock_internal("anon_pipe_write") && !lock_internal("do_exit"));
    }
}
