// SPDX-License-Identifier: (MIT OR Apache-2.0)
// scry mountsnoop (bcc's mountsnoop, libbpf-tools' layout): each mount(2)
// and umount(2) call streamed to user space through the ring of
// ring.bpf.h, with its arguments, result, latency and mount namespace.
//
// The entry keeps the arguments' user pointers and the time by thread
// id; the exit reads the strings (the caller's memory still holds them)
// and sends the event, written in place in the ring. The mount namespace
// is the task's nsproxy->mnt_ns->ns.inum, relocated against the running
// kernel's BTF (CO-RE). Filter in the kernel: the process (-p).
//
// Only classic tracepoints exist for one system call (syscalls:*), so the
// programs have one variant each. The new mount API (fsopen, fsmount,
// move_mount) is not traced, as Debian's libbpf-tools does not.

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
#define TEXT_LEN 256

const volatile __u32 filter_tgid = 0;

// Which call (the order of sys::bpf_mountsnoop::CALLS).
enum mount_call { CALL_MOUNT, CALL_UMOUNT };

struct mount_start {
	__u64 ts;
	__u64 src;
	__u64 dest;
	__u64 fs;
	__u64 data;
	__u64 flags;
	__u32 call;
};

struct mount_event {
	__u64 delta_ns;
	__u64 flags;
	__u32 pid;
	__u32 tid;
	__u32 mnt_ns;
	int ret;
	__u32 call;
	char comm[TASK_COMM_LEN];
	char fs[TEXT_LEN];
	char src[TEXT_LEN];
	char dest[TEXT_LEN];
	char data[TEXT_LEN];
};

BPF_HASH(starts, __u32, struct mount_start, 10240);

#define RING_BYTES (1024 * 1024)
#include "ring.bpf.h"
#include "syscall_records.bpf.h"

struct ns_common___scry {
	unsigned int inum;
} __attribute__((preserve_access_index));

struct mnt_namespace___scry {
	struct ns_common___scry ns;
} __attribute__((preserve_access_index));

struct nsproxy___scry {
	struct mnt_namespace___scry *mnt_ns;
} __attribute__((preserve_access_index));

struct task_struct___scry_ns {
	struct nsproxy___scry *nsproxy;
} __attribute__((preserve_access_index));

static __always_inline int on_enter(struct mount_start *start)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;
	if (filter_tgid && (id >> 32) != filter_tgid)
		return 0;
	start->ts = bpf_ktime_get_ns();
	bpf_map_update_elem(&starts, &tid, start, BPF_ANY);
	return 0;
}

// The user string at `from` into `to` (empty when unreadable or NULL).
static __always_inline void read_text(char *to, __u64 from)
{
	if (!from || bpf_probe_read_user_str(to, TEXT_LEN, (const char *)from) < 0)
		to[0] = '\0';
}

static __always_inline int on_exit(long ret)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;
	struct mount_start *start = bpf_map_lookup_elem(&starts, &tid);
	if (!start)
		return 0;
	struct mount_event *e = reserve_event(sizeof(*e));
	if (!e)
		goto cleanup;
	struct task_struct___scry_ns *task = (void *)bpf_get_current_task();
	e->delta_ns = bpf_ktime_get_ns() - start->ts;
	e->flags = start->flags;
	e->pid = id >> 32;
	e->tid = tid;
	e->mnt_ns = BPF_CORE_READ(task, nsproxy, mnt_ns, ns.inum);
	e->ret = ret;
	e->call = start->call;
	bpf_get_current_comm(&e->comm, sizeof(e->comm));
	read_text(e->fs, start->fs);
	read_text(e->src, start->src);
	read_text(e->dest, start->dest);
	read_text(e->data, start->data);
	bpf_ringbuf_submit(e, 0);
cleanup:
	bpf_map_delete_elem(&starts, &tid);
	return 0;
}

// mount(source, target, filesystemtype, mountflags, data)
SEC("tracepoint/syscalls/sys_enter_mount")
int scry_mnt_mount(struct sys_enter_record *ctx)
{
	struct mount_start start = {
		.src = ctx->args[0],
		.dest = ctx->args[1],
		.fs = ctx->args[2],
		.flags = ctx->args[3],
		.data = ctx->args[4],
		.call = CALL_MOUNT,
	};
	on_enter(&start);
	return TP_PASS;
}

SEC("tracepoint/syscalls/sys_exit_mount")
int scry_mnt_mount_exit(struct sys_exit_record *ctx)
{
	on_exit(ctx->ret);
	return TP_PASS;
}

// umount2(target, flags): its tracepoint is named umount.
SEC("tracepoint/syscalls/sys_enter_umount")
int scry_mnt_umount(struct sys_enter_record *ctx)
{
	struct mount_start start = {
		.dest = ctx->args[0],
		.flags = ctx->args[1],
		.call = CALL_UMOUNT,
	};
	on_enter(&start);
	return TP_PASS;
}

SEC("tracepoint/syscalls/sys_exit_umount")
int scry_mnt_umount_exit(struct sys_exit_record *ctx)
{
	on_exit(ctx->ret);
	return TP_PASS;
}
