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
// bcc (without -l), a call made inside another probed call overwrites the
// outer's start, so only the innermost of nested calls is timed. `totals`
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

SEC("uprobe")
int scry_fl_entry(struct pt_regs *ctx)
{
	if (!in_cgroup())
		return 0;
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u64 ts = bpf_ktime_get_ns();
	bpf_map_update_elem(&starts, &tid, &ts, BPF_ANY);
	return 0;
}

SEC("uretprobe")
int scry_fl_return(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)pid_tgid;
	__u64 *start = bpf_map_lookup_elem(&starts, &tid);
	if (!start)
		return 0;
	__u64 delta = bpf_ktime_get_ns() - *start;
	bpf_map_delete_elem(&starts, &tid);
	add(&totals, 0, delta);
	add(&totals, 1, 1);
	__u64 key = (bpf_get_attach_cookie(ctx) << 32) | (pid_tgid >> 32);
	hist_add(key, (void *)bpf_get_current_task(), delta / unit_div);
	return 0;
}
