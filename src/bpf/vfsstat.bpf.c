// SPDX-License-Identifier: (MIT OR Apache-2.0)
// scry vfsstat (bcc's vfsstat): counts of reads, writes, fsyncs, opens
// and creations, from the system-call tracepoints (bcc's kprobes and
// fentry on vfs_read, vfs_write, vfs_fsync_range, vfs_open and
// vfs_create do not load on every kernel; these do). User space reads
// the counters at each interval and prints the difference.
//
// What is counted (the nearest the calls come to bcc's VFS functions):
// READ, each read, readv, pread64, preadv, preadv2 entered; WRITE, each
// write, writev, pwrite64, pwritev, pwritev2 entered; FSYNC, each fsync
// and fdatasync; OPEN, each open, openat, openat2 or creat that returned
// a descriptor (vfs_open too runs only once the file is found); CREATE,
// each creat and each open asking O_CREAT, entered: a system call cannot
// tell whether the file was new (vfs_create, what bcc counts, is what
// these kernels call for mknod, not for open).
// Filter in the kernel: one process (-p). Every call is its own group,
// optional (open and creat do not exist on every architecture).
//
// bcc's own hooks come first where the kernel allows them: vfs_read,
// vfs_write, vfs_fsync_range, vfs_open and vfs_create, each by fentry,
// else by kprobe (the engine's kernel-function groups, src/sys/
// bpf_engine.rs): the tracepoint programs are loaded only when one of the
// five cannot be hooked (no fentry, no kprobes: this project's CI host),
// so the two never count the same call.

#include <stdbool.h>
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "tp_pass.bpf.h"
#include <bpf/bpf_tracing.h>

#include "maps.bpf.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

#define O_CREAT 0100

const volatile __u32 filter_tgid = 0;

// The order of sys::bpf_vfsstat::COLUMNS.
enum vfs_stat { S_READ, S_WRITE, S_FSYNC, S_OPEN, S_CREATE, S_MAX };

BPF_ARRAY(counts, __u64, S_MAX);

#include "syscall_records.bpf.h"

static __always_inline int add(__u32 stat)
{
	if (filter_tgid && (bpf_get_current_pid_tgid() >> 32) != filter_tgid)
		return 0;
	__u64 *c = bpf_map_lookup_elem(&counts, &stat);
	if (c)
		__sync_fetch_and_add(c, 1);
	return 0;
}

// bcc's hook on FUNC, counted as STAT: fentry, else kprobe.
#define ON_VFS(FUNC, STAT)                                           \
	SEC("fentry/" #FUNC)                                         \
	int scry_k_##FUNC##__fentry(void *ctx)                       \
	{                                                            \
		return add(STAT);                                    \
	}                                                            \
	SEC("kprobe/" #FUNC)                                         \
	int scry_k_##FUNC##__kprobe(void *ctx)                       \
	{                                                            \
		return add(STAT);                                    \
	}

ON_VFS(vfs_read, S_READ)
ON_VFS(vfs_write, S_WRITE)
ON_VFS(vfs_fsync_range, S_FSYNC)
ON_VFS(vfs_open, S_OPEN)
ON_VFS(vfs_create, S_CREATE)

// A call counted as STAT when entered.
#define ON_ENTER(NAME, STAT)                                         \
	SEC("tracepoint/syscalls/sys_enter_" #NAME)                  \
	int scry_vfs_##NAME(struct sys_enter_record *ctx)            \
	{                                                            \
		return add(STAT);                                  \
	}

// An open: CREATE when entered with O_CREAT (argument FLAGS; -1: creat,
// always), OPEN when it returned a descriptor.
#define ON_OPEN(NAME, FLAGS)                                              \
	SEC("tracepoint/syscalls/sys_enter_" #NAME)                       \
	int scry_vfs_##NAME(struct sys_enter_record *ctx)                 \
	{                                                                 \
		if (FLAGS < 0 || (ctx->args[FLAGS < 0 ? 0 : FLAGS] & O_CREAT)) \
			return add(S_CREATE);                           \
		return 0;                                                 \
	}                                                                 \
	SEC("tracepoint/syscalls/sys_exit_" #NAME)                        \
	int scry_vfs_##NAME##_exit(struct sys_exit_record *ctx)           \
	{                                                                 \
		return ctx->ret >= 0 ? add(S_OPEN) : 0;                 \
	}

ON_ENTER(read, S_READ)
ON_ENTER(readv, S_READ)
ON_ENTER(pread64, S_READ)
ON_ENTER(preadv, S_READ)
ON_ENTER(preadv2, S_READ)
ON_ENTER(write, S_WRITE)
ON_ENTER(writev, S_WRITE)
ON_ENTER(pwrite64, S_WRITE)
ON_ENTER(pwritev, S_WRITE)
ON_ENTER(pwritev2, S_WRITE)
ON_ENTER(fsync, S_FSYNC)
ON_ENTER(fdatasync, S_FSYNC)
ON_OPEN(open, 1)
ON_OPEN(openat, 2)
ON_OPEN(creat, -1)

// openat2: the flags are in struct open_how (its first field), in the
// caller's memory.
SEC("tracepoint/syscalls/sys_enter_openat2")
int scry_vfs_openat2(struct sys_enter_record *ctx)
{
	__u64 flags = 0;
	if (bpf_probe_read_user(&flags, sizeof(flags), (const void *)ctx->args[2]) == 0 &&
	    (flags & O_CREAT))
		add(S_CREATE);
		return TP_PASS;
	return TP_PASS;
}

SEC("tracepoint/syscalls/sys_exit_openat2")
int scry_vfs_openat2_exit(struct sys_exit_record *ctx)
{
	ctx->ret >= 0 ? add(S_OPEN) : 0;
	return TP_PASS;
}
