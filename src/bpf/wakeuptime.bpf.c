// SPDX-License-Identifier: (MIT OR Apache-2.0)
// scry wakeuptime (bcc's wakeuptime): the time tasks spent blocked,
// summed in the kernel per (waker's name, target's name, waker's kernel
// stack), the stacks kept in a BPF_MAP_TYPE_STACK_TRACE map.
//
// The rules are libbpf-tools' own: at each sched_switch a `prev` the
// filters allow (process, user threads only) has its switch-out time kept
// by tid; at its sched_wakeup the time since (in µs, within [min_us,
// max_us]) is added to the key of the task that wakes it (the one the
// hook runs in: its name and kernel stack) and the target's name.
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

#define MAX_KEYS 10240

// 0: every process.
const volatile __u32 filter_tgid = 0;
const volatile bool user_threads_only = false;
const volatile __u64 min_us = 1;
const volatile __u64 max_us = (__u64)-1;

struct key_t {
	char waker[TASK_COMM_LEN];
	char target[TASK_COMM_LEN];
	__s32 w_k_stack_id;
	__u32 pad;
};

BPF_HASH(starts, __u32, __u64, MAX_KEYS);

BPF_HASH(sums, struct key_t, __u64, MAX_KEYS);

static __always_inline void on_switch(void *prev)
{
	struct task_struct___scry *p = prev;
	__u32 tid = BPF_CORE_READ(p, pid), tgid = BPF_CORE_READ(p, tgid);
	if (filter_tgid != 0 && filter_tgid != tgid)
		return;
	if (user_threads_only && task_is_kthread(prev))
		return;
	__u64 ts = bpf_ktime_get_ns();
	bpf_map_update_elem(&starts, &tid, &ts, BPF_ANY);
}

static __always_inline void on_wakeup(void *ctx, void *task)
{
	struct task_struct___scry *t = task;
	__u32 tid = BPF_CORE_READ(t, pid);
	__u64 *ts = bpf_map_lookup_elem(&starts, &tid);
	if (!ts)
		return;
	__u64 now = bpf_ktime_get_ns();
	__u64 delta = now > *ts ? (now - *ts) / 1000 : 0;
	bpf_map_delete_elem(&starts, &tid);
	if (delta < min_us || delta > max_us)
		return;
	struct key_t key = {};
	key.w_k_stack_id = bpf_get_stackid(ctx, &stacks, 0);
	bpf_get_current_comm(&key.waker, sizeof(key.waker));
	BPF_CORE_READ_STR_INTO(&key.target, t, comm);
	__u64 zero = 0;
	bpf_map_update_elem(&sums, &key, &zero, BPF_NOEXIST);
	__u64 *sum = bpf_map_lookup_elem(&sums, &key);
	if (sum)
		__sync_fetch_and_add(sum, delta);
}

BTF_OR_RAW(scry_wt_switch, "sched_switch", on_switch(prev),
	   bool preempt, struct task_struct *prev, struct task_struct *next)
BTF_OR_RAW(scry_wt_wakeup, "sched_wakeup", on_wakeup(ctx, p), struct task_struct *p)
