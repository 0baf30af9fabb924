// SPDX-License-Identifier: (MIT OR Apache-2.0)
// scry offwaketime (bcc's offwaketime): the time tasks spent blocked,
// summed in the kernel per (target's stacks when it blocked, the stacks
// of the task that woke it), the stacks kept in a BPF_MAP_TYPE_STACK_TRACE
// map.
//
// The rules are bcc's, on tracepoints instead of its kprobes: at each
// sched_switch a `prev` the filters allow (as offcputime.bpf.c's, bcc's
// --state) has its switch-out time and stack ids kept by tid (the hook
// runs in it: its own stacks); at sched_waking, which runs in the waker
// (try_to_wake_up's caller; sched_wakeup may run on the target's CPU
// instead, from an IPI), a target the filters allow has the waker's name,
// ids and stack ids kept by the target's tid; the switch-in of `next`
// closes its block, which adds its length in µs, within [min_block_us,
// max_block_us], to the key of both halves (a block nobody was seen
// waking has an empty waker half, as in bcc).
//
// Variants: tp_btf, then raw_tp (both allow bpf_get_stackid).

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
#include "stackmap.bpf.h"

#include "blocked.bpf.h"

#define MAX_KEYS 10240

struct half_t {
	__u32 tid;
	__u32 tgid;
	__s32 user_stack_id;
	__s32 kern_stack_id;
	char comm[TASK_COMM_LEN];
};

struct key_t {
	struct half_t target;
	struct half_t waker;
};

struct start_t {
	__u64 ts;
	struct half_t target;
};

BPF_HASH(starts, __u32, struct start_t, MAX_KEYS);

BPF_HASH(wokeby, __u32, struct half_t, MAX_KEYS);

BPF_HASH(sums, struct key_t, __u64, MAX_KEYS);

// The filters, on `task`.
static __always_inline bool allowed(void *task, bool kthread)
{
	struct task_struct___scry *t = task;
	return blocked_allowed(task_state(task), BPF_CORE_READ(t, tgid), BPF_CORE_READ(t, pid),
			       kthread);
}

// The half of a key the hook's own task gives: `task` is the current one.
static __always_inline void fill_half(void *ctx, void *task, bool kthread, struct half_t *h)
{
	struct task_struct___scry *t = task;
	h->tid = BPF_CORE_READ(t, pid);
	h->tgid = BPF_CORE_READ(t, tgid);
	h->user_stack_id = kthread ? -1 : bpf_get_stackid(ctx, &stacks, BPF_F_USER_STACK);
	h->kern_stack_id = bpf_get_stackid(ctx, &stacks, 0);
	BPF_CORE_READ_STR_INTO(&h->comm, t, comm);
}

static __always_inline void on_switch(void *ctx, void *prev, void *next)
{
	struct task_struct___scry *n = next;
	__u64 now = bpf_ktime_get_ns();
	bool kthread = task_is_kthread(prev);
	if (allowed(prev, kthread)) {
		struct start_t s = {.ts = now};
		fill_half(ctx, prev, kthread, &s.target);
		bpf_map_update_elem(&starts, &s.target.tid, &s, BPF_ANY);
		// A wakeup seen before this block (of a task that then did not
		// block) is not its waker.
		bpf_map_delete_elem(&wokeby, &s.target.tid);
	}
	__u32 next_tid = BPF_CORE_READ(n, pid);
	struct start_t *s = bpf_map_lookup_elem(&starts, &next_tid);
	if (!s)
		return;
	__u64 delta = now > s->ts ? (now - s->ts) / 1000 : 0;
	// No waker seen: an empty name, no stacks.
	struct key_t key = {.waker = {.user_stack_id = -1, .kern_stack_id = -1}};
	__builtin_memcpy(&key.target, &s->target, sizeof(key.target));
	bpf_map_delete_elem(&starts, &next_tid);
	struct half_t *w = bpf_map_lookup_elem(&wokeby, &next_tid);
	if (w) {
		__builtin_memcpy(&key.waker, w, sizeof(key.waker));
		bpf_map_delete_elem(&wokeby, &next_tid);
	}
	if (delta < min_block_us || delta > max_block_us)
		return;
	add_delta(&sums, &key, delta);
}

static __always_inline void on_waking(void *ctx, void *target)
{
	if (!allowed(target, task_is_kthread(target)))
		return;
	struct task_struct___scry *t = target;
	__u32 tid = BPF_CORE_READ(t, pid);
	struct half_t h = {};
	void *current = (void *)bpf_get_current_task();
	fill_half(ctx, current, task_is_kthread(current), &h);
	bpf_map_update_elem(&wokeby, &tid, &h, BPF_ANY);
}

BTF_OR_RAW(scry_ow_switch, "sched_switch", on_switch(ctx, prev, next),
	   bool preempt, struct task_struct *prev, struct task_struct *next)
BTF_OR_RAW(scry_ow_waking, "sched_waking", on_waking(ctx, p), struct task_struct *p)
