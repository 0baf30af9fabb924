// SPDX-License-Identifier: (MIT OR Apache-2.0)
// scry profile-bpf (bcc's profile), and the stack counts of `scry
// flamegraph` and `scry top`: on-CPU stacks sampled by a clock on each CPU
// (user space opens cpu-clock at -F HZ per CPU and attaches `scry_oc_sample`
// to each), counted in the kernel per (process, comm, user stack, kernel
// stack), the stacks kept in a BPF_MAP_TYPE_STACK_TRACE map. Nothing is
// streamed: user space reads the counts at the end (or at each refresh).
//
// Which samples count, bcc's rules: not the idle task (tid 0) unless
// `include_idle`; `filter_tgid`/`filter_tid` one process or thread (0:
// any); with `use_targets`, only the processes in `targets` (a workload
// from its exec on, and what it forks: targets.bpf.h, kept by the fork
// and exec hooks of targets.bpf.c, an object loaded only then, which
// shares this object's map). The stacks come from the interrupted
// registers, so no frame of this program is in them; a stack not asked
// for (-U, -K) has the id -1, and a kernel thread's user stack -EFAULT.
//
// A process sampled for the first time is put in `fresh` too (`seen`
// remembers it), which user space drains every quarter second to read
// the process's maps while it lives: a small map emptied, where reading
// all of `counts` (its buckets walked, every key copied) each time cost
// most of a quiet run's CPU.

#include <stdbool.h>
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "maps.bpf.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

#include "targets.bpf.h"
#include "stackmap.bpf.h"
// Samples not counted because `counts` was full.
#include "drops.bpf.h"

#define TASK_COMM_LEN 16

const volatile __u32 filter_tgid = 0;
const volatile __u32 filter_tid = 0;
const volatile bool use_targets = false;
const volatile bool include_idle = false;
const volatile bool user_stacks = true;
const volatile bool kernel_stacks = true;

struct key_t {
	__u32 tgid;
	__s32 user_stack_id;
	__s32 kern_stack_id;
	char comm[TASK_COMM_LEN];
};

// Sized by user space before load (bcc's --hash-storage-size).
BPF_HASH(counts, struct key_t, __u64, 40960);

// The processes sampled so far, and those not yet taken by user space
// (one missed when `fresh` is full is still named from its counts).
BPF_HASH(seen, __u32, __u8, 16384);
BPF_HASH(fresh, __u32, __u8, 1024);

SEC("perf_event")
int scry_oc_sample(void *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = id;
	if (tid == 0 && !include_idle)
		return 0;
	if (filter_tgid != 0 && filter_tgid != tgid)
		return 0;
	if (filter_tid != 0 && filter_tid != tid)
		return 0;
	if (use_targets) {
		__u8 *t = bpf_map_lookup_elem(&targets, &tgid);
		if (!t || *t != TARGET_WATCHED)
			return 0;
	}
	if (!bpf_map_lookup_elem(&seen, &tgid)) {
		__u8 one = 1;
		if (bpf_map_update_elem(&seen, &tgid, &one, BPF_NOEXIST) == 0)
			bpf_map_update_elem(&fresh, &tgid, &one, BPF_NOEXIST);
	}
	struct key_t key = {.tgid = tgid};
	bpf_get_current_comm(&key.comm, sizeof(key.comm));
	key.user_stack_id = user_stacks ? bpf_get_stackid(ctx, &stacks, BPF_F_USER_STACK) : -1;
	key.kern_stack_id = kernel_stacks ? bpf_get_stackid(ctx, &stacks, 0) : -1;
	__u64 *count = bpf_map_lookup_elem(&counts, &key);
	if (!count) {
		__u64 zero = 0;
		bpf_map_update_elem(&counts, &key, &zero, BPF_NOEXIST);
		count = bpf_map_lookup_elem(&counts, &key);
	}
	if (count) {
		__sync_fetch_and_add(count, 1);
		return 0;
	}
	count_drop();
	return 0;
}
