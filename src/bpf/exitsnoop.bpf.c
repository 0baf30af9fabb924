// SPDX-License-Identifier: (MIT OR Apache-2.0)
// scry exitsnoop (bcc's exitsnoop): each process exit (each thread's with
// -T) streamed to user space through the ring of ring.bpf.h, with its age
// (now minus the task's start time, both CLOCK_MONOTONIC) and its exit
// code or the signal that ended it (task->exit_code, as wait(2) reports
// it). Filters in the kernel: process (-p), failed exits only (-x),
// cgroup (-c: the exiting task under the directory, cgroup.bpf.h, as
// libbpf-tools' exitsnoop filters).
// One variant: the classic sched_process_exit tracepoint, the exiting
// task being the current one.

#include <stdbool.h>
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "tp_pass.bpf.h"
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

char LICENSE[] SEC("license") = "Dual MIT/GPL";

#define TASK_COMM_LEN 16

const volatile __u32 filter_tgid = 0;
const volatile bool failed_only = false;
const volatile bool threads = false;

#include "ring.bpf.h"
#include "cgroup.bpf.h"

struct exit_event {
	__u64 age_ns;
	__u32 pid;
	__u32 tid;
	__u32 ppid;
	__u32 exit_code;
	char comm[TASK_COMM_LEN];
};

struct task_struct___scry_exit {
	int pid;
	int tgid;
	int exit_code;
	__u64 start_time;
	struct task_struct___scry_exit *real_parent;
} __attribute__((preserve_access_index));

SEC("tracepoint/sched/sched_process_exit")
int scry_exit(void *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id;
	if (filter_tgid && tgid != filter_tgid)
		return TP_PASS;
	if (!threads && tgid != tid)
		return TP_PASS;
	if (!in_cgroup())
		return TP_PASS;
	struct task_struct___scry_exit *task = (void *)bpf_get_current_task();
	int code = BPF_CORE_READ(task, exit_code);
	if (failed_only && code == 0)
		return TP_PASS;
	struct exit_event e = {};
	e.age_ns = bpf_ktime_get_ns() - BPF_CORE_READ(task, start_time);
	e.pid = tgid;
	e.tid = tid;
	e.ppid = BPF_CORE_READ(task, real_parent, tgid);
	e.exit_code = code;
	bpf_get_current_comm(&e.comm, sizeof(e.comm));
	emit(&e, sizeof(e));
	return TP_PASS;
}
