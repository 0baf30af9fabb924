// SPDX-License-Identifier: (MIT OR Apache-2.0)
// scry execsnoop (bcc's execsnoop): each execve(2) streamed to user space
// through a BPF ring buffer, with its arguments (copied at the call's
// entry, while the caller's memory still holds them) and its return code
// (at the exit). The first argument shown is the file name the caller
// passed, then argv[1..], as libbpf-tools shows them.
//
// The entry keeps the event in a hash by thread id (too big for the BPF
// stack); the exit completes it, sends the filled part, and deletes it.
// The entry overwrites what a thread id left (an exec from a non-leader
// thread exits under the leader's id, so its entry stays behind, and a
// reused id must not lose its exec to it).
// Failed calls are dropped in the kernel unless `include_failed` (-x).
// Filters in the kernel: uid (-u) and cgroup (--cgroup, a cgroup array
// user space fills with the cgroup directory's descriptor). Events the
// ring has no room for are counted in `drops` (ring.bpf.h) and said at
// the end.
//
// Only classic tracepoints exist for one system call (syscalls:*), so the
// programs have one variant each.

#include <stdbool.h>
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "tp_pass.bpf.h"
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "maps.bpf.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

#define TASK_COMM_LEN 16
#define ARGSIZE 128
#define TOTAL_MAX_ARGS 60
#define FULL_MAX_ARGS_ARR (TOTAL_MAX_ARGS * ARGSIZE)
#define LAST_ARG (FULL_MAX_ARGS_ARR - ARGSIZE)

const volatile bool include_failed = false;
// (__u32)-1: every user.
const volatile __u32 filter_uid = (__u32)-1;
const volatile int max_args = 20;

struct exec_event {
	__u32 pid;
	__u32 ppid;
	__u32 uid;
	int retval;
	int args_count;
	__u32 args_size;
	char comm[TASK_COMM_LEN];
	char args[FULL_MAX_ARGS_ARR];
};

static const struct exec_event empty_event = {};

BPF_HASH(execs, __u32, struct exec_event, 10240);

#define RING_BYTES (4 * 1024 * 1024)
#include "ring.bpf.h"

#include "cgroup.bpf.h"

struct task_struct___scry_es {
	struct task_struct___scry_es *real_parent;
	int tgid;
} __attribute__((preserve_access_index));

#include "syscall_records.bpf.h"

SEC("tracepoint/syscalls/sys_enter_execve")
int scry_es_enter(struct sys_enter_record *ctx)
{
	if (!in_cgroup())
		return TP_PASS;
	__u32 uid = (__u32)bpf_get_current_uid_gid();
	if (filter_uid != (__u32)-1 && uid != filter_uid)
		return TP_PASS;
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;
	if (bpf_map_update_elem(&execs, &tid, &empty_event, BPF_ANY))
		return TP_PASS;
	struct exec_event *e = bpf_map_lookup_elem(&execs, &tid);
	if (!e)
		return TP_PASS;
	e->pid = id >> 32;
	e->uid = uid;
	struct task_struct___scry_es *task = (void *)bpf_get_current_task();
	e->ppid = BPF_CORE_READ(task, real_parent, tgid);
	e->args_count = 0;
	e->args_size = 0;

	long ret = bpf_probe_read_user_str(e->args, ARGSIZE, (const char *)ctx->args[0]);
	if (ret < 0)
		return TP_PASS;
	if (ret <= ARGSIZE) {
		e->args_size += ret;
	} else {
		e->args[0] = '\0';
		e->args_size++;
	}
	e->args_count++;

	const char **argv = (const char **)ctx->args[1];
	const char *argp;
	for (int i = 1; i < TOTAL_MAX_ARGS && i < max_args; i++) {
		if (bpf_probe_read_user(&argp, sizeof(argp), &argv[i]) || !argp)
			return TP_PASS;
		__u32 size = e->args_size;
		if (size > LAST_ARG)
			return TP_PASS;
		ret = bpf_probe_read_user_str(&e->args[size], ARGSIZE, argp);
		if (ret < 0)
			return TP_PASS;
		e->args_count++;
		e->args_size += ret;
	}
	// One more pointer that is not NULL: there are more arguments.
	int more = max_args;
	if (more < 0 || more >= 1024)
		return TP_PASS;
	if (bpf_probe_read_user(&argp, sizeof(argp), &argv[more]) || !argp)
		return TP_PASS;
	e->args_count++;
	return TP_PASS;
}

SEC("tracepoint/syscalls/sys_exit_execve")
int scry_es_exit(struct sys_exit_record *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct exec_event *e = bpf_map_lookup_elem(&execs, &tid);
	if (!e)
		return TP_PASS;
	int ret = ctx->ret;
	if (include_failed || ret >= 0) {
		e->retval = ret;
		bpf_get_current_comm(&e->comm, sizeof(e->comm));
		__u64 len = __builtin_offsetof(struct exec_event, args) + e->args_size;
		if (len > sizeof(*e))
			len = sizeof(*e);
		emit(e, len);
	}
	bpf_map_delete_elem(&execs, &tid);
	return TP_PASS;
}
