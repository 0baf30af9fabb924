// SPDX-License-Identifier: (MIT OR Apache-2.0)
// scry syscount (bcc's syscount): system calls counted at their exit, per
// call number or per process, with their summed latency (-L: from the
// task's sys_enter) and, with -x, failed calls only (-e: those failing
// with one error number; --syscall: one call number; -t: one thread; -c:
// one cgroup; --ppid: the children of one process, bcc's test of the
// caller's real_parent's tgid). Nothing is streamed: user space reads the maps at each
// interval.
//
// Per call number the counts live in a per-CPU array indexed by the number
// (no hash, no atomics on the hot path); per process in a hash by tgid
// with the process's name. The enter hook is loaded only for -L.
//
// Each hook comes in three variants (tp_btf, raw_tp, classic tracepoint):
// the engine (src/sys/bpf_engine.rs) loads the best the kernel accepts.
// The call number at the exit is read from pt_regs->orig_ax (x86-64) for
// the BTF and raw variants, from the record for the classic one.

#include <stdbool.h>
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "tp_pass.bpf.h"
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "maps.bpf.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

#include "hooks.bpf.h"
#include "cgroup.bpf.h"

#define NR_SYSCALLS 1024
#define MAX_PROCESSES 8192
#define MAX_STARTS 16384
#include "starts.bpf.h"
#define TASK_COMM_LEN 16

const volatile bool filter_failed = false;
const volatile bool measure_latency = false;
const volatile bool count_by_process = false;
// 0: every process.
const volatile __u32 filter_tgid = 0;
// 0: every thread.
const volatile __u32 filter_tid = 0;
// 0: any result; else only calls returning -filter_errno.
const volatile __u32 filter_errno = 0;
// -1: every call.
const volatile __s32 filter_nr = -1;
// 0: any parent.
const volatile __u32 filter_ppid = 0;

struct task_struct___scry_parent {
	struct task_struct___scry_parent *real_parent;
	int tgid;
} __attribute__((preserve_access_index));

static __always_inline bool parent_watched(void)
{
	if (filter_ppid == 0)
		return true;
	struct task_struct___scry_parent *task = (void *)bpf_get_current_task();
	return (__u32)BPF_CORE_READ(task, real_parent, tgid) == filter_ppid;
}

struct counts {
	__u64 count;
	__u64 total_ns;
};

struct process_counts {
	__u64 count;
	__u64 total_ns;
	char comm[TASK_COMM_LEN];
};

BPF_PERCPU_ARRAY(by_call, struct counts, NR_SYSCALLS);

BPF_HASH(by_process, __u32, struct process_counts, MAX_PROCESSES);

struct pt_regs___scry_sc {
	long orig_ax;
} __attribute__((preserve_access_index));

#include "syscall_records.bpf.h"

static __always_inline bool watched(__u64 pid_tgid)
{
	return (filter_tgid == 0 || (pid_tgid >> 32) == filter_tgid) &&
	       (filter_tid == 0 || (__u32)pid_tgid == filter_tid) && in_cgroup() &&
	       parent_watched();
}

static __always_inline void on_enter(void)
{
	if (!measure_latency)
		return;
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	if (!watched(pid_tgid))
		return;
	start_at((__u32)pid_tgid, bpf_ktime_get_ns());
}

struct task_struct___scry_sc {
	struct task_struct___scry_sc *group_leader;
	char comm[TASK_COMM_LEN];
} __attribute__((preserve_access_index));

static __always_inline void on_exit(long id, long ret)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	if (!watched(pid_tgid))
		return;
	if (id < 0)
		return;
	if (filter_failed && ret >= 0)
		return;
	if (filter_errno != 0 && ret != -(long)filter_errno)
		return;
	if (filter_nr >= 0 && id != filter_nr)
		return;
	__u64 latency = 0;
	if (measure_latency && !start_take((__u32)pid_tgid, &latency))
		return;
	if (count_by_process) {
		__u32 tgid = pid_tgid >> 32;
		struct process_counts *p = bpf_map_lookup_elem(&by_process, &tgid);
		if (!p) {
			struct process_counts zero = {};
			bpf_get_current_comm(&zero.comm, sizeof(zero.comm));
			bpf_map_update_elem(&by_process, &tgid, &zero, BPF_NOEXIST);
			p = bpf_map_lookup_elem(&by_process, &tgid);
			if (!p)
				return;
		}
		__sync_fetch_and_add(&p->count, 1);
		if (measure_latency)
			__sync_fetch_and_add(&p->total_ns, latency);
		/* The process's name at each call, as libbpf-tools reads it:
		 * its first call may be its parent's code before an exec. */
		struct task_struct___scry_sc *task = (void *)bpf_get_current_task();
		BPF_CORE_READ_STR_INTO(&p->comm, task, group_leader, comm);
		return;
	}
	__u32 nr = id;
	if (nr >= NR_SYSCALLS)
		return;
	struct counts *c = bpf_map_lookup_elem(&by_call, &nr);
	if (!c)
		return;
	c->count += 1;
	c->total_ns += latency;
}

BTF_OR_RAW(scry_sc_enter, "sys_enter", on_enter(), struct pt_regs *regs, long id)

SEC("tracepoint/raw_syscalls/sys_enter")
int scry_sc_enter__tp(struct sys_enter_record *record)
{
	on_enter();
	return TP_PASS;
}

BTF_OR_RAW(scry_sc_exit, "sys_exit",
	   on_exit(BPF_CORE_READ((struct pt_regs___scry_sc *)regs, orig_ax), ret),
	   struct pt_regs *regs, long ret)

SEC("tracepoint/raw_syscalls/sys_exit")
int scry_sc_exit__tp(struct sys_exit_record *record)
{
	on_exit(record->id, record->ret);
	return TP_PASS;
}
