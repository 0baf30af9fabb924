// SPDX-License-Identifier: (MIT OR Apache-2.0)
// scry threadsnoop (bcc's threadsnoop): each thread created, streamed to
// user space through the ring of ring.bpf.h, with the function it starts
// in where that can be had.
//
// The creations come from task:task_newtask with CLONE_THREAD (the
// creating thread is the current task), so every new thread is seen,
// whoever made it (a libc, Go's runtime, a raw clone). bcc instead probes
// pthread_create; here that uprobe (on this system's libc.so.6, every
// process) only supplies the start function: it keeps pthread_create's
// third argument by thread id, and the creation that follows in the same
// thread takes it. Threads made otherwise (static binaries, other libcs,
// clone itself) come with no function. The uprobe's group is optional:
// without it the tool still lists every creation.
// Filter in the kernel: the creating process (-p).

#include <stdbool.h>
#include <linux/types.h>
#include <linux/bpf.h>
#include <asm/ptrace.h>
#include <bpf/bpf_helpers.h>
#include "tp_pass.bpf.h"
#include <bpf/bpf_tracing.h>

#include "maps.bpf.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

#define TASK_COMM_LEN 16
#define CLONE_THREAD 0x00010000

const volatile __u32 filter_tgid = 0;

struct thread_event {
	__u64 func;
	__u32 pid;
	__u32 tid;
	__u32 new_tid;
	__u32 pad;
	char comm[TASK_COMM_LEN];
};

BPF_HASH(funcs, __u32, __u64, 10240);

#include "ring.bpf.h"

SEC("uprobe/libc.so.6:pthread_create")
int scry_ts_pthread(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	if (filter_tgid && (id >> 32) != filter_tgid)
		return 0;
	__u32 tid = (__u32)id;
	__u64 func = PT_REGS_PARM3(ctx);
	bpf_map_update_elem(&funcs, &tid, &func, BPF_ANY);
	return 0;
}

// task:task_newtask's record (format file: pid at 8, comm 12,
// clone_flags 32).
struct task_newtask_record {
	__u64 common;
	int pid;
	char comm[TASK_COMM_LEN];
	__u64 clone_flags;
};

SEC("tracepoint/task/task_newtask")
int scry_ts_newtask(struct task_newtask_record *ctx)
{
	if (!(ctx->clone_flags & CLONE_THREAD))
		return TP_PASS;
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id;
	if (filter_tgid && tgid != filter_tgid)
		return TP_PASS;
	struct thread_event e = {
		.pid = tgid,
		.tid = tid,
		.new_tid = ctx->pid,
	};
	__u64 *func = bpf_map_lookup_elem(&funcs, &tid);
	if (func) {
		e.func = *func;
		bpf_map_delete_elem(&funcs, &tid);
	}
	bpf_get_current_comm(&e.comm, sizeof(e.comm));
	emit(&e, sizeof(e));
	return TP_PASS;
}
