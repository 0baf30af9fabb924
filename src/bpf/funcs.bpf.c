// SPDX-License-Identifier: (MIT OR Apache-2.0)
// scry funccount and funclatency (bcc's) for user functions: one program
// attached as a uprobe at every function a pattern matched (and, for
// latency, one as a uretprobe at each), each link carrying the function's
// index as its BPF cookie (bpf_get_attach_cookie, 5.15 and later), so one
// program serves hundreds of functions without one copy per function as
// bcc generates.
//
// funccount: `counts[index]` only grows; user space keeps the last values
// read and prints the differences, so an interval loses no call to a
// clear racing an increment.
//
// funclatency: the entry keeps its time by thread id, the return takes it
// and counts the nanoseconds (divided by `unit_div` for -u/-m) in the log2
// histogram of (function index << 32 | tgid), named after the task. As
// bcc without -l, a call made inside another probed call overwrites the
// outer's start, so only the innermost of nested calls is timed. With
// `max_level` (bcc's -l LEVEL) each thread keeps a stack instead
// (`nests`): the depth of the probed calls under way, any function, and
// the start of each of the outermost LEVEL; a return at depth LEVEL or
// deeper only pops (bcc does not count those, and then pairs their
// returns with the outer starts; here each return pops its own level), so
// exactly the outermost LEVEL levels of nested or recursive calls are
// timed. The stack is deleted when its thread's outermost call returns.
// `totals`
// holds the nanoseconds and the calls timed (only growing, read as
// differences) for bcc's `avg = ...` line. With `filter_cgroup`
// (libbpf-tools' -c), only calls entered by a task under the cgroup are
// timed.
//
// The uprobes' pid filter (the perf event's target process) does the -p
// filtering: other processes sharing a library never trap.

#include <stdbool.h>
#include <linux/types.h>
#include <linux/bpf.h>
#include <asm/ptrace.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>

#include "maps.bpf.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

#define HIST_KEY __u64
#include "task.bpf.h"
#include "task_hist.bpf.h"
#include "cgroup.bpf.h"

// The most functions one run probes (bcc's probe limit is 1000).
#define MAX_FUNCS 1024

// funccount's -c CPU (-1: every CPU).
const volatile __s32 filter_cpu = -1;
// funclatency's unit: 1 (nsecs), 1000 (usecs, -u), 1000000 (msecs, -m).
const volatile __u64 unit_div = 1;

BPF_ARRAY(counts, __u64, MAX_FUNCS);

// Start times by thread id.
BPF_HASH(starts, __u32, __u64, 10240);

// funclatency's -l LEVEL (0: without -l, the innermost call timed).
const volatile __u32 max_level = 0;

// The deepest -l (user space refuses more).
#define MAX_LEVEL 64

// A thread's probed calls under way: how many, and the start of each of
// the outermost `max_level`.
struct nest {
	__u32 depth;
	__u64 starts[MAX_LEVEL];
};

// By thread id, with -l only (user space sizes it to 1 otherwise).
BPF_HASH(nests, __u32, struct nest, 10240);

// A zeroed stack to insert (too big for the BPF stack).
BPF_PERCPU_ARRAY(zero_nest, struct nest, 1);

// [0]: nanoseconds timed, [1]: calls timed.
BPF_ARRAY(totals, __u64, 2);

static __always_inline void add(void *map, __u32 key, __u64 value)
{
	__u64 *slot = bpf_map_lookup_elem(map, &key);
	if (slot)
		__sync_fetch_and_add(slot, value);
}

SEC("uprobe")
int scry_fc_count(struct pt_regs *ctx)
{
	if (filter_cpu >= 0 && bpf_get_smp_processor_id() != (__u32)filter_cpu)
		return 0;
	add(&counts, (__u32)bpf_get_attach_cookie(ctx), 1);
	return 0;
}

// -l: one more call under way on thread `tid`, its start kept if it is
// one of the outermost `max_level`.
static __always_inline void nest_enter(__u32 tid, __u64 ts)
{
	struct nest *n = bpf_map_lookup_elem(&nests, &tid);
	if (!n) {
		__u32 zero = 0;
		struct nest *fresh = bpf_map_lookup_elem(&zero_nest, &zero);
		if (!fresh)
			return;
		bpf_map_update_elem(&nests, &tid, fresh, BPF_NOEXIST);
		n = bpf_map_lookup_elem(&nests, &tid);
		if (!n)
			return;
	}
	__u32 depth = n->depth;
	if (depth < max_level && depth < MAX_LEVEL)
		n->starts[depth] = ts;
	n->depth = depth + 1;
}

// -l: the call returning on thread `tid` popped; its start if it is one
// of the outermost `max_level` (else 0).
static __always_inline __u64 nest_return(__u32 tid)
{
	struct nest *n = bpf_map_lookup_elem(&nests, &tid);
	if (!n || n->depth == 0)
		return 0;
	__u32 depth = n->depth - 1;
	__u64 start = 0;
	if (depth < max_level && depth < MAX_LEVEL)
		start = n->starts[depth];
	n->depth = depth;
	if (depth == 0)
		bpf_map_delete_elem(&nests, &tid);
	return start;
}

SEC("uprobe")
int scry_fl_entry(struct pt_regs *ctx)
{
	if (!in_cgroup())
		return 0;
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u64 ts = bpf_ktime_get_ns();
	if (max_level)
		nest_enter(tid, ts);
	else
		bpf_map_update_elem(&starts, &tid, &ts, BPF_ANY);
	return 0;
}

SEC("uretprobe")
int scry_fl_return(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)pid_tgid;
	__u64 start;
	if (max_level) {
		start = nest_return(tid);
		if (!start)
			return 0;
	} else {
		__u64 *slot = bpf_map_lookup_elem(&starts, &tid);
		if (!slot)
			return 0;
		start = *slot;
		bpf_map_delete_elem(&starts, &tid);
	}
	__u64 delta = bpf_ktime_get_ns() - start;
	add(&totals, 0, delta);
	add(&totals, 1, 1);
	__u64 key = (bpf_get_attach_cookie(ctx) << 32) | (pid_tgid >> 32);
	hist_add(key, (void *)bpf_get_current_task(), delta / unit_div);
	return 0;
}
