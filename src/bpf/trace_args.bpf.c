// SPDX-License-Identifier: (MIT OR Apache-2.0)
// scry trace's argument copies: at the entry of a system call that takes a
// string (a path, a name) or an input buffer (write's buf), copy the bytes
// from the caller's memory there and then, before the call (or another
// thread) can change them, and emit them as a bpf-output sample into the
// same per-CPU rings that hold the raw_syscalls records (user space points
// each CPU's bpf-output event at its ring with PERF_EVENT_IOC_SET_OUTPUT),
// so they arrive in time order with the entry they belong to. This is what
// perf trace's BPF augmentation does; reading the memory later from user
// space (process_vm_readv) shows whatever the buffer holds by then.
//
// What is copied: `syscall_args[nr]` says, per argument, nothing, a string
// (bpf_probe_read_user_str, at most STR_MAX bytes with its NUL), or a buffer
// whose length is argument j (ARG_BUFFER + j, at most BUF_MAX bytes). A
// read that faults (the page is not resident: a BPF program cannot fault it
// in) is sent with status COPY_FAULT and no bytes: the user is told the
// string was not copied, never shown someone else's bytes.
//
// Which tasks: every task but scry (`all_tasks`, -a), else the processes in
// `targets` and what they fork; TARGET_AT_EXEC counts from the next exec
// on, as the counters' enable_on_exec does for a workload. A copy emitted
// for a task whose entry the counters did not see is dropped by user space
// (copies are matched to entries by thread, number and argument values).
//
// Record (native endian), as src/sys/bpf_trace.rs reads it:
//   u32 nr, u32 count, u64 args[6], {u8 arg, u8 status, u16 len}[3], u32 pad,
//   then the `count` copies' bytes, back to back, in that order.

#include <stdbool.h>
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "maps.bpf.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

#include "targets.bpf.h"

#define NR_SYSCALLS 1024
#define MAX_COPIES 3
#define STR_MAX 1024
#define BUF_MAX 256

#define ARG_NONE 0
#define ARG_STRING 1
#define ARG_BUFFER 2	// + index of the argument holding the length

#define COPY_OK 0
#define COPY_TRUNCATED 1
#define COPY_FAULT 2

struct syscall_args {
	__u8 kind[6];
	__u8 any;
	__u8 pad;
};

struct copy {
	__u8 arg;
	__u8 status;
	__u16 len;
};

struct record {
	__u32 nr;
	__u32 count;
	__u64 args[6];
	struct copy copies[MAX_COPIES];
	__u32 pad;
	char data[MAX_COPIES * STR_MAX];
};

// Set before load.
const volatile bool all_tasks = false;
const volatile __u32 self_tgid = 0;

BPF_ARRAY(syscall_args, struct syscall_args, NR_SYSCALLS);

// One record under construction per CPU: syscall tracepoints run their BPF
// programs with preemption off, so nothing else uses it meanwhile.
BPF_PERCPU_ARRAY(scratch, struct record, 1);

struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
} outputs SEC(".maps");

struct pt_regs___scry {
	unsigned long di;
	unsigned long si;
	unsigned long dx;
	unsigned long r10;
	unsigned long r8;
	unsigned long r9;
} __attribute__((preserve_access_index));

static __always_inline bool watched(__u32 tgid)
{
	if (all_tasks)
		return tgid != self_tgid;
	__u8 *t = bpf_map_lookup_elem(&targets, &tgid);
	return t && *t == TARGET_WATCHED;
}

SEC("tp_btf/sys_enter")
int BPF_PROG(scry_trace_enter, struct pt_regs *regs, long id)
{
	if (id < 0 || id >= NR_SYSCALLS)
		return 0;
	__u32 nr = id;
	struct syscall_args *sa = bpf_map_lookup_elem(&syscall_args, &nr);
	if (!sa || !sa->any)
		return 0;
	if (!watched(bpf_get_current_pid_tgid() >> 32))
		return 0;
	__u32 zero = 0;
	struct record *r = bpf_map_lookup_elem(&scratch, &zero);
	if (!r)
		return 0;
	struct pt_regs___scry *p = (struct pt_regs___scry *)regs;
	r->nr = nr;
	r->args[0] = p->di;
	r->args[1] = p->si;
	r->args[2] = p->dx;
	r->args[3] = p->r10;
	r->args[4] = p->r8;
	r->args[5] = p->r9;
	__u32 off = 0;
	__u32 n = 0;
#pragma unroll
	for (int i = 0; i < 6; i++) {
		__u8 kind = sa->kind[i];
		if (kind == ARG_NONE || n >= MAX_COPIES)
			continue;
		// Bounds the verifier can follow: each copy starts below
		// (MAX_COPIES - 1) * STR_MAX and takes at most STR_MAX bytes.
		if (off > (MAX_COPIES - 1) * STR_MAX)
			break;
		const void *src = (const void *)r->args[i];
		long len;
		__u8 status = COPY_OK;
		if (kind == ARG_STRING) {
			len = bpf_probe_read_user_str(&r->data[off], STR_MAX, src);
			if (len == STR_MAX)
				status = COPY_TRUNCATED;
		} else {
			__u32 j = kind - ARG_BUFFER;
			__u64 size = j < 6 ? r->args[j] : 0;
			if (size > BUF_MAX) {
				size = BUF_MAX;
				status = COPY_TRUNCATED;
			}
			len = 0;
			if (size > 0) {
				len = bpf_probe_read_user(&r->data[off], size, src);
				len = len == 0 ? (long)size : len;
			}
		}
		if (len < 0 || len > STR_MAX) {
			len = 0;
			status = COPY_FAULT;
		}
		r->copies[n].arg = i;
		r->copies[n].status = status;
		r->copies[n].len = len;
		off += len;
		n++;
	}
	r->count = n;
	__u64 size = __builtin_offsetof(struct record, data) + off;
	if (size > sizeof(*r))
		return 0;
	bpf_perf_event_output(ctx, &outputs, BPF_F_CURRENT_CPU, r, size);
	return 0;
}

// Forks of watched processes are watched (targets.bpf.h).
SEC("raw_tp/sched_process_fork")
int BPF_PROG(scry_trace_fork, struct task_struct *parent, struct task_struct *child)
{
	if (!all_tasks)
		targets_fork(child);
	return 0;
}

// The workload counts from its exec on.
SEC("tp_btf/sched_process_exec")
int BPF_PROG(scry_trace_exec)
{
	targets_exec();
	return 0;
}
