//! klockstat's table: the kernel's contention sums (per kernel stack and
//! lock type) as `perf lock contention -b` shows them, per caller (the
//! first frame of the stack outside the locking code and the tracer's own)
//! and lock type: count, total, max, average; largest total first (perf's
//! default sort, `wait_total`). Per thread (libbpf-tools' -P): one row
//! per waiting thread, its id and name, no caller.

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

/// libbpf-tools' `-S acq_*`: which wait the rows are ranked by, largest
/// first (`acq_total`, perf's default, as [`lock_rows`] leaves them).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum LockSort {
    #[default]
    Total,
    Max,
    Count,
}

/// The rows `-c`, `-S` and `-n` keep: those whose caller starts with
/// `caller` (libbpf-tools' prefix), ranked by `sort`, the first `top`.
pub(crate) fn select_rows(
    mut rows: Vec<LockRow>,
    caller: Option<&str>,
    sort: LockSort,
    top: Option<usize>,
) -> Vec<LockRow> {
    if let Some(prefix) = caller {
        rows.retain(|r| r.caller.starts_with(prefix));
    }
    let key = |r: &LockRow| sort.key(r.count, r.total_ns, r.max_ns);
    rows.sort_by(|a, b| key(b).cmp(&key(a)).then_with(|| a.caller.cmp(&b.caller)));
    rows.truncate(top.unwrap_or(usize::MAX));
    rows
}

impl LockSort {
    /// The figure a row is ranked by.
    fn key(self, count: u64, total_ns: u64, max_ns: u64) -> u64 {
        match self {
            LockSort::Total => total_ns,
            LockSort::Max => max_ns,
            LockSort::Count => count,
        }
    }
}

/// One row of libbpf-tools' -P: a thread's contentions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ThreadRow {
    pub(crate) tid: u32,
    pub(crate) comm: String,
    pub(crate) count: u64,
    pub(crate) total_ns: u64,
    pub(crate) max_ns: u64,
    pub(crate) min_ns: u64,
}

/// -P's rows: the per-thread sums (those of [`LockWaits`] with a thread),
/// ranked by `sort`, the first `top`.
pub(crate) fn thread_rows(
    waits: &[LockWaits],
    sort: LockSort,
    top: Option<usize>,
) -> Vec<ThreadRow> {
    let mut rows: Vec<ThreadRow> = waits
        .iter()
        .filter_map(|w| {
            let (tid, comm) = w.thread.clone()?;
            Some(ThreadRow {
                tid,
                comm,
                count: w.count,
                total_ns: w.total_ns,
                max_ns: w.max_ns,
                min_ns: w.min_ns,
            })
        })
        .collect();
    let key = |r: &ThreadRow| sort.key(r.count, r.total_ns, r.max_ns);
    rows.sort_by(|a, b| key(b).cmp(&key(a)).then_with(|| a.tid.cmp(&b.tid)));
    rows.truncate(top.unwrap_or(usize::MAX));
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

    #[test]
    fn caller_prefix_sort_and_top() {
        let row = |caller: &str, count, total_ns, max_ns| LockRow {
            caller: caller.into(),
            kind: "mutex".into(),
            count,
            total_ns,
            max_ns,
            min_ns: 0,
            stack: vec![],
        };
        let rows = vec![
            row("pipe_read", 1, 900, 900),
            row("pipe_write", 5, 500, 200),
            row("fdget_pos", 9, 100, 50),
        ];
        let callers = |rows: Vec<LockRow>| rows.into_iter().map(|r| r.caller).collect::<Vec<_>>();
        let by_count = select_rows(rows.clone(), None, LockSort::Count, None);
        assert_eq!(callers(by_count), ["fdget_pos", "pipe_write", "pipe_read"]);
        let pipes = select_rows(rows.clone(), Some("pipe_"), LockSort::Max, Some(1));
        assert_eq!(callers(pipes), ["pipe_read"]);
        assert!(select_rows(rows, Some("nope"), LockSort::Total, None).is_empty());
    }
}
