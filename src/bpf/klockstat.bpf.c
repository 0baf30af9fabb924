// SPDX-License-Identifier: (MIT OR Apache-2.0)
// scry klockstat: kernel lock contention from the lock:contention_begin
// and lock:contention_end tracepoints (as `perf lock contention -b`),
// summed in the kernel per (kernel stack at the contention, lock type
// flags): count, total, max and min wait in ns.
//
// The rules are perf's: a task's contention starts at contention_begin
// and ends at the contention_end of the same lock; a begin while one is
// open (a spinlock taken inside a mutex's slow path) is not timed apart,
// its time is the outer lock's; a begin of the same lock again (a mutex
// done spinning, going to sleep) keeps the start and takes its type.
// Filters: process, thread, one lock (its address: libbpf-tools' -L).
// Per thread (libbpf-tools' -P): the sums keyed by the waiting thread
// (its id and name) instead of by stack and type.
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
#include "stackmap.bpf.h"

#define MAX_KEYS 10240

// 0: every process, every thread.
const volatile __u32 filter_tgid = 0;
const volatile __u32 filter_tid = 0;
// 0: every lock.
const volatile __u64 filter_lock = 0;
// libbpf-tools' -P: one sum per thread.
const volatile bool per_thread = false;

struct open_t {
	__u64 ts;
	__u64 lock;
	__u32 flags;
	__s32 stack_id;
};

// Per thread: stack_id -1, flags 0 and the thread's id; else tid 0.
struct key_t {
	__s32 stack_id;
	__u32 flags;
	__u32 tid;
};

struct val_t {
	__u64 count;
	__u64 total_ns;
	__u64 max_ns;
	__u64 min_ns;
	// The thread's name at its first contention (per thread only).
	char comm[16];
};

BPF_HASH(opens, __u32, struct open_t, MAX_KEYS);

BPF_HASH(waits, struct key_t, struct val_t, MAX_KEYS);

static __always_inline void on_begin(void *ctx, void *lock, unsigned int flags)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tid = pid_tgid;
	if (filter_tgid != 0 && filter_tgid != pid_tgid >> 32)
		return;
	if (filter_tid != 0 && filter_tid != tid)
		return;
	if (filter_lock != 0 && filter_lock != (__u64)lock)
		return;
	struct open_t o = {
		.ts = bpf_ktime_get_ns(),
		.lock = (__u64)lock,
		.flags = flags,
		.stack_id = per_thread ? -1 : bpf_get_stackid(ctx, &stacks, 0),
	};
	struct open_t *open = bpf_map_lookup_elem(&opens, &tid);
	if (open) {
		// The same lock again (a mutex that stops spinning and sleeps):
		// its latest type; another lock inside it: the outer one's time.
		if (open->lock == o.lock)
			open->flags = flags;
		return;
	}
	bpf_map_update_elem(&opens, &tid, &o, BPF_ANY);
}

static __always_inline void on_end(void *lock)
{
	__u32 tid = bpf_get_current_pid_tgid();
	struct open_t *o = bpf_map_lookup_elem(&opens, &tid);
	if (!o || o->lock != (__u64)lock)
		return;
	__u64 now = bpf_ktime_get_ns();
	__u64 delta = now > o->ts ? now - o->ts : 0;
	struct key_t key = {.stack_id = o->stack_id, .flags = o->flags};
	if (per_thread)
		key = (struct key_t){.stack_id = -1, .tid = tid};
	bpf_map_delete_elem(&opens, &tid);
	struct val_t *v = bpf_map_lookup_elem(&waits, &key);
	if (!v) {
		struct val_t init = {.min_ns = (__u64)-1};
		if (per_thread)
			bpf_get_current_comm(init.comm, sizeof(init.comm));
		bpf_map_update_elem(&waits, &key, &init, BPF_NOEXIST);
		v = bpf_map_lookup_elem(&waits, &key);
		if (!v)
			return;
	}
	__sync_fetch_and_add(&v->count, 1);
	__sync_fetch_and_add(&v->total_ns, delta);
	// Racy between CPUs, as perf's: a bound, not a count.
	if (delta > v->max_ns)
		v->max_ns = delta;
	if (delta < v->min_ns)
		v->min_ns = delta;
}

BTF_OR_RAW(scry_kl_begin, "contention_begin", on_begin(ctx, lock, flags), void *lock,
	   unsigned int flags)
BTF_OR_RAW(scry_kl_end, "contention_end", on_end(lock), void *lock, int ret)
