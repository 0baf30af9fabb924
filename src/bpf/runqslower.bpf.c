// SPDX-License-Identifier: (MIT OR Apache-2.0)
// scry runqslower (bcc's runqslower): each run-queue wait longer than
// min_us, streamed as an event (the task, its wait, the task it replaced on
// the CPU) through the ring buffer of ring.bpf.h.
//
// A wait starts at sched_wakeup or sched_wakeup_new, or at a preemption
// (sched_switch with prev still TASK_RUNNING), and ends at the switch-in of
// the task, as in libbpf-tools; tid 0 (idle) is never timed. The start is
// removed when the wait ends, whatever its length, so that a later
// switch-in without a new wakeup is not timed from a stale start.
//
// Variants: tp_btf, then raw_tp (the classic tracepoints carry no tgid).

#include <stdbool.h>
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

char LICENSE[] SEC("license") = "Dual MIT/GPL";

#include "hooks.bpf.h"
#include "ring.bpf.h"
#include "task.bpf.h"

const volatile __u64 min_us = 10000;
// 0: every process / thread.
const volatile __u32 filter_tgid = 0;
const volatile __u32 filter_tid = 0;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 10240);
	__type(key, __u32);
	__type(value, __u64);
} starts SEC(".maps");

// The event; its layout is read in src/sys/bpf_runqslower.rs.
struct event {
	__u32 tid;
	__u32 prev_tid;
	__u64 delta_us;
	char comm[TASK_COMM_LEN];
	char prev_comm[TASK_COMM_LEN];
};

static __always_inline void enqueue(void *task)
{
	struct task_struct___scry *t = task;
	__u32 tid = BPF_CORE_READ(t, pid), tgid = BPF_CORE_READ(t, tgid);
	if (!tid)
		return;
	if (filter_tgid && filter_tgid != tgid)
		return;
	if (filter_tid && filter_tid != tid)
		return;
	__u64 ts = bpf_ktime_get_ns();
	bpf_map_update_elem(&starts, &tid, &ts, BPF_ANY);
}

static __always_inline void on_switch(void *prev, void *next)
{
	struct task_struct___scry *p = prev, *n = next;
	if (task_state(prev) == TASK_RUNNING)
		enqueue(prev);
	__u32 tid = BPF_CORE_READ(n, pid);
	__u64 *start = bpf_map_lookup_elem(&starts, &tid);
	if (!start)
		return;
	__u64 now = bpf_ktime_get_ns();
	__u64 delta_us = now > *start ? (now - *start) / 1000 : 0;
	bpf_map_delete_elem(&starts, &tid);
	if (min_us && delta_us <= min_us)
		return;
	struct event e = {};
	e.tid = tid;
	e.prev_tid = BPF_CORE_READ(p, pid);
	e.delta_us = delta_us;
	BPF_CORE_READ_STR_INTO(&e.comm, n, comm);
	BPF_CORE_READ_STR_INTO(&e.prev_comm, p, comm);
	emit(&e, sizeof(e));
}

BTF_OR_RAW(scry_rq_wakeup, "sched_wakeup", enqueue(p), struct task_struct *p)
BTF_OR_RAW(scry_rq_wakeup_new, "sched_wakeup_new", enqueue(p), struct task_struct *p)
BTF_OR_RAW(scry_rq_switch, "sched_switch", on_switch(prev, next),
	   bool preempt, struct task_struct *prev, struct task_struct *next)
