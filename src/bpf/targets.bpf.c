// SPDX-License-Identifier: (MIT OR Apache-2.0)
// The fork and exec hooks that keep a `targets` map (targets.bpf.h) for
// a program in another object (oncpu.bpf.c), whose map this object's
// `targets` reuses (user space hands its descriptor over before load).
// Apart because the fork hook reads the child's tgid through CO-RE, and
// an object with a CO-RE read makes libbpf read the kernel's whole BTF
// (/sys/kernel/btf/vmlinux, ~6 MB) at load, even when the hook is not
// loaded: a fifth of profile-bpf's start, for runs that watch no process.

#include <stdbool.h>
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

char LICENSE[] SEC("license") = "Dual MIT/GPL";

#include "targets.bpf.h"

// Forks of watched processes are watched.
SEC("raw_tp/sched_process_fork")
int BPF_PROG(scry_tg_fork, struct task_struct *parent, struct task_struct *child)
{
	targets_fork(child);
	return 0;
}

// A workload is watched from its exec on.
SEC("raw_tp/sched_process_exec")
int BPF_PROG(scry_tg_exec)
{
	targets_exec();
	return 0;
}
