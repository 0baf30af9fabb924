// SPDX-License-Identifier: (MIT OR Apache-2.0)
// scry offcputime (bcc's offcputime): the time tasks spent off a CPU,
// summed in the kernel per (thread, user stack, kernel stack), the stacks
// kept in a BPF_MAP_TYPE_STACK_TRACE map.
//
// The rules are libbpf-tools' own, so that both count the same blocks: at
// each sched_switch, a `prev` the filters allow (process, thread, user or
// kernel threads only, its state at the switch matching `state` as bcc's
// --state does: 0 only TASK_RUNNING (preempted), another value any state
// with one of its bits) has its switch-out time, state and stack ids kept
// by tid, and an entry made for its key (the state is part of it, so that
// the time sums per blocked state);
// the switch-in of `next` closes its block, which adds its length in µs to
// the key's sum when it is within [min_block_us, max_block_us]. The
// program runs in the task that blocks, so the stacks are its own: the
// kernel one (from the hook itself down), and the user one (none for a
// kernel thread, whose key says -1).
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

struct key_t {
	__u32 tid;
	__u32 tgid;
	__s32 user_stack_id;
	__s32 kern_stack_id;
	// The task's state at the switch-out (0: preempted).
	__u32 state;
	__u32 pad;
};

struct val_t {
	__u64 delta;
	char comm[TASK_COMM_LEN];
};

struct start_t {
	__u64 ts;
	struct key_t key;
};

BPF_HASH(starts, __u32, struct start_t, MAX_KEYS);

BPF_HASH(sums, struct key_t, struct val_t, MAX_KEYS);

static __always_inline void on_switch(void *ctx, void *prev, void *next)
{
	struct task_struct___scry *p = prev, *n = next;
	__u64 now = bpf_ktime_get_ns();
	__u32 tid = BPF_CORE_READ(p, pid), tgid = BPF_CORE_READ(p, tgid);
	bool kthread = task_is_kthread(prev);
	long prev_state = task_state(prev);
	if (blocked_allowed(prev_state, tgid, tid, kthread)) {
		struct start_t s = {.ts = now};
		s.key.tid = tid;
		s.key.tgid = tgid;
		s.key.state = prev_state;
		s.key.user_stack_id =
			kthread ? -1 : bpf_get_stackid(ctx, &stacks, BPF_F_USER_STACK);
		s.key.kern_stack_id = bpf_get_stackid(ctx, &stacks, 0);
		bpf_map_update_elem(&starts, &tid, &s, BPF_ANY);
		struct val_t zero = {};
		BPF_CORE_READ_STR_INTO(&zero.comm, p, comm);
		bpf_map_update_elem(&sums, &s.key, &zero, BPF_NOEXIST);
	}
	__u32 next_tid = BPF_CORE_READ(n, pid);
	struct start_t *s = bpf_map_lookup_elem(&starts, &next_tid);
	if (!s)
		return;
	if (now > s->ts) {
		__u64 delta = (now - s->ts) / 1000;
		if (delta >= min_block_us && delta <= max_block_us) {
			struct val_t *v = bpf_map_lookup_elem(&sums, &s->key);
			if (v)
				__sync_fetch_and_add(&v->delta, delta);
		}
	}
	bpf_map_delete_elem(&starts, &next_tid);
}

BTF_OR_RAW(scry_oc_switch, "sched_switch", on_switch(ctx, prev, next),
	   bool preempt, struct task_struct *prev, struct task_struct *next)
