// SPDX-License-Identifier: (MIT OR Apache-2.0)
// scry runqlat (bcc's runqlat): run-queue latency, from the moment a task
// becomes runnable to the moment it runs, as log2 histograms counted in
// the kernel: one, or one per process (-P), thread (-L) or pid namespace
// (--pidnss).
//
// What a wait is: runq.bpf.h (libbpf-tools' rules, so that both count the
// same waits). With `filter_on`, only the processes in `watched` are timed,
// and a watched process's children are watched from their fork (as perf's
// inherited counters follow a workload), so `-- COMMAND` sees its pipeline.
// With `filter_cgroup` (-c), wakeups and switches count only when the
// current task is under the cgroup, as libbpf-tools filters.
//
// Variants: tp_btf, then raw_tp (the classic tracepoints carry no tgid).

#include <stdbool.h>
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "maps.bpf.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

#include "hooks.bpf.h"
#include "task.bpf.h"
#include "starts.bpf.h"
#include "task_hist.bpf.h"
#include "cgroup.bpf.h"

const volatile bool per_process = false;
const volatile bool per_thread = false;
const volatile bool per_pidns = false;
const volatile bool milliseconds = false;
const volatile bool filter_on = false;

// The tgids to time when filter_on (filled by user space, grown at fork).
BPF_HASH(watched, __u32, __u8, MAX_KEYS);

struct ns_common___scry {
	unsigned int inum;
} __attribute__((preserve_access_index));

struct pid_namespace___scry {
	struct ns_common___scry ns;
} __attribute__((preserve_access_index));

struct nsproxy___scry {
	struct pid_namespace___scry *pid_ns_for_children;
} __attribute__((preserve_access_index));

struct task_struct___scry_ns {
	struct nsproxy___scry *nsproxy;
} __attribute__((preserve_access_index));

static __always_inline bool runq_watched(__u32 tgid, __u32 tid)
{
	return !filter_on || bpf_map_lookup_elem(&watched, &tgid);
}

#include "runq.bpf.h"

static __always_inline void on_wakeup(void *p)
{
	if (in_cgroup())
		runq_enqueue(p);
}

static __always_inline void on_switch(void *prev, void *next)
{
	struct task_struct___scry *n = next;
	__u64 delta;
	if (!in_cgroup())
		return;
	if (!runq_switch(prev, next, &delta))
		return;
	__u32 key = (__u32)-1;
	if (per_process)
		key = BPF_CORE_READ(n, tgid);
	else if (per_thread)
		key = BPF_CORE_READ(n, pid);
	else if (per_pidns)
		key = BPF_CORE_READ((struct task_struct___scry_ns *)next, nsproxy,
				    pid_ns_for_children, ns.inum);
	hist_add(key, next, delta / (milliseconds ? 1000000 : 1000));
}

static __always_inline void on_fork(void *parent, void *child)
{
	if (!filter_on)
		return;
	struct task_struct___scry *p = parent, *c = child;
	__u32 ptgid = BPF_CORE_READ(p, tgid), ctgid = BPF_CORE_READ(c, tgid);
	if (ptgid == ctgid || !bpf_map_lookup_elem(&watched, &ptgid))
		return;
	__u8 one = 1;
	bpf_map_update_elem(&watched, &ctgid, &one, BPF_ANY);
}

BTF_OR_RAW(scry_rl_wakeup, "sched_wakeup", on_wakeup(p), struct task_struct *p)
BTF_OR_RAW(scry_rl_wakeup_new, "sched_wakeup_new", on_wakeup(p), struct task_struct *p)
BTF_OR_RAW(scry_rl_switch, "sched_switch", on_switch(prev, next),
	   bool preempt, struct task_struct *prev, struct task_struct *next)
BTF_OR_RAW(scry_rl_fork, "sched_process_fork", on_fork(parent, child),
	   struct task_struct *parent, struct task_struct *child)
