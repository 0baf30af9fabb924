// SPDX-License-Identifier: (MIT OR Apache-2.0)
// scry statsnoop (bcc's statsnoop): each stat-family call (statfs,
// newstat, newlstat, statx, newfstatat) streamed to user space through
// the ring of ring.bpf.h, with its path and result.
//
// The entry keeps the path's user pointer and the call by thread id; the
// exit reads the path (the caller's memory still holds it) and sends the
// event, written in place in the ring. Filters in the kernel: process
// (-p), failed calls only (-x). Each call is its own group, optional
// (newstat and newlstat do not exist on every architecture): user space
// requires that one of them attached.
//
// Only classic tracepoints exist for one system call (syscalls:*), so the
// programs have one variant each.

#include <stdbool.h>
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "tp_pass.bpf.h"
#include <bpf/bpf_tracing.h>

#include "maps.bpf.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

#define TASK_COMM_LEN 16
#define NAME_MAX 255

const volatile __u32 filter_tgid = 0;
const volatile bool failed_only = false;

// Which call (the order of sys::bpf_statsnoop::StatCall).
enum stat_call { CALL_STATFS, CALL_NEWSTAT, CALL_NEWLSTAT, CALL_STATX, CALL_NEWFSTATAT };

struct stat_start {
	__u64 path;
	__u32 call;
};

struct stat_event {
	__u32 pid;
	__u32 tid;
	int ret;
	__u32 call;
	char comm[TASK_COMM_LEN];
	char path[NAME_MAX];
};

BPF_HASH(starts, __u32, struct stat_start, 10240);

#define RING_BYTES (1024 * 1024)
#include "ring.bpf.h"
#include "syscall_records.bpf.h"

static __always_inline int on_enter(__u64 path, __u32 call)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;
	if (filter_tgid && (id >> 32) != filter_tgid)
		return 0;
	struct stat_start start = {.path = path, .call = call};
	bpf_map_update_elem(&starts, &tid, &start, BPF_ANY);
	return 0;
}

static __always_inline int on_exit(long ret)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;
	struct stat_start *start = bpf_map_lookup_elem(&starts, &tid);
	if (!start)
		return 0;
	if (failed_only && ret >= 0)
		goto cleanup;
	struct stat_event *e = reserve_event(sizeof(*e));
	if (!e)
		goto cleanup;
	e->pid = id >> 32;
	e->tid = tid;
	e->ret = ret;
	e->call = start->call;
	bpf_get_current_comm(&e->comm, sizeof(e->comm));
	if (bpf_probe_read_user_str(&e->path, sizeof(e->path), (const char *)start->path) < 0)
		e->path[0] = '\0';
	bpf_ringbuf_submit(e, 0);
cleanup:
	bpf_map_delete_elem(&starts, &tid);
	return 0;
}

// The entry and exit of one call; PATH: the argument number of its path.
#define STAT_CALL(NAME, PATH, CALL)                                \
	SEC("tracepoint/syscalls/sys_enter_" #NAME)                \
	int scry_st_##NAME(struct sys_enter_record *ctx)           \
	{                                                          \
		return on_enter(ctx->args[PATH], CALL);            \
	}                                                          \
	SEC("tracepoint/syscalls/sys_exit_" #NAME)                 \
	int scry_st_##NAME##_exit(struct sys_exit_record *ctx)     \
	{                                                          \
		return on_exit(ctx->ret);                          \
	}

STAT_CALL(statfs, 0, CALL_STATFS)
STAT_CALL(newstat, 0, CALL_NEWSTAT)
STAT_CALL(newlstat, 0, CALL_NEWLSTAT)
STAT_CALL(statx, 1, CALL_STATX)
STAT_CALL(newfstatat, 1, CALL_NEWFSTATAT)
