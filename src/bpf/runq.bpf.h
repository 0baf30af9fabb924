// SPDX-License-Identifier: (MIT OR Apache-2.0)
// Run-queue waits, libbpf-tools' rules (runqlat, runqslower): a wait
// starts at sched_wakeup or sched_wakeup_new, or at a preemption
// (sched_switch with prev still TASK_RUNNING), and ends at the switch-in
// of the task; tid 0 (idle) is never timed. The includer defines
// `runq_watched(tgid, tid)` (its filter) first, and includes task.bpf.h
// and starts.bpf.h.

static __always_inline void runq_enqueue(void *task)
{
	struct task_struct___scry *t = task;
	__u32 tid = BPF_CORE_READ(t, pid);
	if (!tid || !runq_watched(BPF_CORE_READ(t, tgid), tid))
		return;
	start_at(tid, bpf_ktime_get_ns());
}

// At sched_switch: starts prev's wait if it was preempted; true with the
// nanoseconds next waited, when its wait was timed.
static __always_inline bool runq_switch(void *prev, void *next, __u64 *delta)
{
	if (task_state(prev) == TASK_RUNNING)
		runq_enqueue(prev);
	struct task_struct___scry *n = next;
	return start_take(BPF_CORE_READ(n, pid), delta);
}
