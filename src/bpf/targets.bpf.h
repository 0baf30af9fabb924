// SPDX-License-Identifier: (MIT OR Apache-2.0)
// The processes a program watches, shared by profile.bpf.c,
// trace_args.bpf.c, oncpu.bpf.c and targets.bpf.c (oncpu's fork and exec
// hooks, an object of their own): `targets` maps a tgid to TARGET_WATCHED, or to
// TARGET_AT_EXEC for a workload forked and waiting to exec (watched from
// its exec on, as perf's enable_on_exec). What a watched process forks is
// watched too; a new thread shares its tgid. User space fills the map.

#include "maps.bpf.h"

#define TARGET_WATCHED 1
#define TARGET_AT_EXEC 2

BPF_HASH(targets, __u32, __u8, 4096);

struct task_struct___scry_targets {
	int tgid;
} __attribute__((preserve_access_index));

// From sched_process_fork: the child of a process in `targets` gets its
// parent's value.
static __always_inline void targets_fork(struct task_struct *child)
{
	__u32 parent_tgid = bpf_get_current_pid_tgid() >> 32;
	__u8 *t = bpf_map_lookup_elem(&targets, &parent_tgid);
	if (!t)
		return;
	__u32 child_tgid = BPF_CORE_READ((struct task_struct___scry_targets *)child, tgid);
	if (child_tgid == parent_tgid)
		return;
	__u8 value = *t;
	bpf_map_update_elem(&targets, &child_tgid, &value, BPF_ANY);
}

// From sched_process_exec: a process waiting for its exec is watched from
// now on. True when it was one.
static __always_inline bool targets_exec(void)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	__u8 *t = bpf_map_lookup_elem(&targets, &tgid);
	if (!t || *t != TARGET_AT_EXEC)
		return false;
	__u8 value = TARGET_WATCHED;
	bpf_map_update_elem(&targets, &tgid, &value, BPF_ANY);
	return true;
}
