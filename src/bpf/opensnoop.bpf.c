// SPDX-License-Identifier: (MIT OR Apache-2.0)
// scry opensnoop (bcc's opensnoop): each open(2) and openat(2) streamed to
// user space through a BPF ring buffer, with its flags, file name and
// result (a descriptor or an errno), and how long the call took.
//
// The entry keeps the name's user pointer, the flags and the start time
// by thread id; the exit reads the name (the caller's memory still holds
// it) and sends the event. Filters in the kernel: process (-p), thread
// (-t), uid (-u), failed calls only (-x); the name filter (-n) is applied
// by user space, as libbpf-tools does. The event is written in place in
// the ring (reserve, fill, submit: no copy); one the ring has no room for
// is counted in `drops` (ring.bpf.h) and said at the end.
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

// 0 (or (__u32)-1 for the uid): no filter.
const volatile __u32 filter_tgid = 0;
const volatile __u32 filter_tid = 0;
const volatile __u32 filter_uid = (__u32)-1;
const volatile bool failed_only = false;

struct open_start {
	__u64 fname;
	__u64 ts;
	int flags;
	int mode;
};

struct open_event {
	__u64 ts;
	__u64 duration_ns;
	__u32 pid;
	__u32 tid;
	__u32 uid;
	int ret;
	int flags;
	int mode;
	char comm[TASK_COMM_LEN];
	char fname[NAME_MAX];
};

BPF_HASH(starts, __u32, struct open_start, 10240);

#define RING_BYTES (4 * 1024 * 1024)
#include "ring.bpf.h"

#include "syscall_records.bpf.h"

static __always_inline int on_enter(__u64 fname, int flags, int mode)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id;
	if (filter_tgid && tgid != filter_tgid)
		return 0;
	if (filter_tid && tid != filter_tid)
		return 0;
	if (filter_uid != (__u32)-1 && (__u32)bpf_get_current_uid_gid() != filter_uid)
		return 0;
	struct open_start start = {
		.fname = fname,
		.ts = bpf_ktime_get_ns(),
		.flags = flags,
		.mode = mode,
	};
	bpf_map_update_elem(&starts, &tid, &start, BPF_ANY);
	return 0;
}

static __always_inline int on_exit(long ret)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;
	struct open_start *start = bpf_map_lookup_elem(&starts, &tid);
	if (!start)
		return 0;
	if (failed_only && ret >= 0)
		goto cleanup;
	struct open_event *e = reserve_event(sizeof(*e));
	if (!e)
		goto cleanup;
	__u64 now = bpf_ktime_get_ns();
	e->ts = now;
	e->duration_ns = now - start->ts;
	e->pid = id >> 32;
	e->tid = tid;
	e->uid = (__u32)bpf_get_current_uid_gid();
	e->ret = ret;
	e->flags = start->flags;
	e->mode = start->mode;
	bpf_get_current_comm(&e->comm, sizeof(e->comm));
	if (bpf_probe_read_user_str(&e->fname, sizeof(e->fname), (const char *)start->fname) < 0)
		e->fname[0] = '\0';
	bpf_ringbuf_submit(e, 0);
cleanup:
	bpf_map_delete_elem(&starts, &tid);
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_open")
int scry_os_open(struct sys_enter_record *ctx)
{
	on_enter(ctx->args[0], (int)ctx->args[1], (int)ctx->args[2]);
	return TP_PASS;
}

SEC("tracepoint/syscalls/sys_enter_openat")
int scry_os_openat(struct sys_enter_record *ctx)
{
	on_enter(ctx->args[1], (int)ctx->args[2], (int)ctx->args[3]);
	return TP_PASS;
}

SEC("tracepoint/syscalls/sys_exit_open")
int scry_os_open_exit(struct sys_exit_record *ctx)
{
	on_exit(ctx->ret);
	return TP_PASS;
}

SEC("tracepoint/syscalls/sys_exit_openat")
int scry_os_openat_exit(struct sys_exit_record *ctx)
{
	on_exit(ctx->ret);
	return TP_PASS;
}
