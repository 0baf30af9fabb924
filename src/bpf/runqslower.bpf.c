// SPDX-License-Identifier: (MIT OR Apache-2.0)
// scry runqslower (bcc's runqslower): each run-queue wait longer than
// min_us, streamed as an event (the task, its wait, the task it replaced on
// the CPU) through the ring buffer of ring.bpf.h.
//
// What a wait is: runq.bpf.h (libbpf-tools' rules). Its start is removed
// when it ends, whatever its length (starts.bpf.h).
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
#include "starts.bpf.h"

const volatile __u64 min_us = 10000;
// 0: every process / thread.
const volatile __u32 filter_tgid = 0;
const volatile __u32 filter_tid = 0;

// The event; its layout is read in src/sys/bpf_runqslower.rs.
struct event {
	__u32 tid;
	__u32 prev_tid;
	__u64 delta_us;
	char comm[TASK_COMM_LEN];
	char prev_comm[TASK_COMM_LEN];
};

static __always_inline bool runq_watched(__u32 tgid, __u32 tid)
{
	return (!filter_tgid || filter_tgid == tgid) && (!filter_tid || filter_tid == tid);
}

#include "runq.bpf.h"

static __always_inline void on_switch(void *prev, void *next)
{
	struct task_struct___scry *p = prev, *n = next;
	__u64 delta;
	if (!runq_switch(prev, next, &delta))
		return;
	__u64 delta_us = delta / 1000;
	if (min_us && delta_us <= min_us)
		return;
	struct event e = {};
	e.tid = BPF_CORE_READ(n, pid);
	e.prev_tid = BPF_CORE_READ(p, pid);
	e.delta_us = delta_us;
	BPF_CORE_READ_STR_INTO(&e.comm, n, comm);
	BPF_CORE_READ_STR_INTO(&e.prev_comm, p, comm);
	emit(&e, sizeof(e));
}

BTF_OR_RAW(scry_rq_wakeup, "sched_wakeup", runq_enqueue(p), struct task_struct *p)
BTF_OR_RAW(scry_rq_wakeup_new, "sched_wakeup_new", runq_enqueue(p), struct task_struct *p)
BTF_OR_RAW(scry_rq_switch, "sched_switch", on_switch(prev, next),
	   bool preempt, struct task_struct *prev, struct task_struct *next)
