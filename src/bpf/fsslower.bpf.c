// SPDX-License-Identifier: (MIT OR Apache-2.0)
// scry fsslower (bcc's fsslower and its ext4slower, xfsslower,
// btrfsslower, nfsslower): each read, write, open and fsync of a regular
// file that took longer than a threshold, with its bytes, offset and the
// file's name, streamed through the ring buffer.
//
// Hooks: the system calls, entered and exited (bcc's fentries or kprobes
// on a file system's read_iter, write_iter, open and fsync do not load on
// every kernel; these tracepoints do): R read, readv, pread64, preadv,
// preadv2; W write, writev, pwrite64, pwritev, pwritev2; O open, openat,
// openat2, creat (the descriptor they return); F fsync, fdatasync. The
// file is found through the task's file table (fd_file.bpf.h): at the
// entry for R, W and F (with the offset: the file's position, or the
// call's own for the p- calls), at the exit for O.
//
// What the calls cannot see against bcc's file system hooks: the latency
// is the whole call's (path lookup for an open, the page cache and
// locks for all), not the file system's method alone; I/O that does not
// come through these calls (sendfile, splice, copy_file_range, io_uring,
// mmap'd pages written back, the kernel's own) is not seen; a call on a
// file that is not regular (a pipe, a socket, a device) is left out, as
// bcc's per-file-system hooks never see those.
// Filters in the kernel: one process (-p), the latency (-m, in µs; 0:
// all), the file system's type name (-t, as /proc/filesystems spells it).
// scry's own process is never traced: its output going to a file would
// feed itself.

#include <stdbool.h>
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "tp_pass.bpf.h"
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "maps.bpf.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

#include "fd_file.bpf.h"
#include "syscall_records.bpf.h"

#define TASK_COMM_LEN 16
#define NAME_LEN 256
#define FS_NAME_LEN 16
#define O_PATH 010000000

// The order of sys::bpf_fsslower::FsOp.
enum fs_op { OP_READ, OP_WRITE, OP_OPEN, OP_FSYNC };

const volatile __u32 filter_tgid = 0;
const volatile __u32 self_tgid = 0;
const volatile __u64 min_us = 0;
// Empty: any file system.
const volatile char filter_fs[FS_NAME_LEN] = {};

struct op_start {
	__u64 ts;
	__u64 file;
	__s64 offset;
	__u32 op;
	__u32 pad;
};

struct fs_event {
	__u64 delta_us;
	__s64 offset;
	__s64 size;
	__u32 pid;
	__u32 tid;
	__u32 op;
	__u32 pad;
	char comm[TASK_COMM_LEN];
	char fs[FS_NAME_LEN];
	char name[NAME_LEN];
};

BPF_HASH(starts, __u32, struct op_start, 10240);

#define RING_BYTES (4 * 1024 * 1024)
#include "ring.bpf.h"

// A regular file on the file system -t asked for (any without -t).
static __always_inline bool wanted(struct file___scry *file)
{
	if (!file || (file_mode(file) & S_IFMT) != S_IFREG)
		return false;
	if (!filter_fs[0])
		return true;
	char fs[FS_NAME_LEN] = {};
	const char *name = BPF_CORE_READ(file, f_inode, i_sb, s_type, name);
	if (bpf_probe_read_kernel_str(fs, sizeof(fs), name) < 0)
		return false;
	for (int i = 0; i < FS_NAME_LEN; i++) {
		if (fs[i] != filter_fs[i])
			return false;
		if (!fs[i])
			break;
	}
	return true;
}

static __always_inline bool traced(void)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	return (!filter_tgid || tgid == filter_tgid) && tgid != self_tgid;
}

static __always_inline void keep(__u32 op, struct file___scry *file, __s64 offset)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct op_start start = {
		.ts = bpf_ktime_get_ns(),
		.file = (__u64)file,
		.offset = offset,
		.op = op,
	};
	bpf_map_update_elem(&starts, &tid, &start, BPF_ANY);
}

// A read, write or fsync of `fd` entered; `offset` -1: the file's position.
static __always_inline int on_enter(__u32 op, long fd, __s64 offset)
{
	if (!traced())
		return 0;
	struct file___scry *file = fd_file(fd);
	if (!wanted(file))
		return 0;
	keep(op, file, offset < 0 ? BPF_CORE_READ(file, f_pos) : offset);
	return 0;
}

// An open entered: its file is known at the exit.
static __always_inline int on_open_enter(void)
{
	if (traced())
		keep(OP_OPEN, 0, 0);
	return 0;
}

static __always_inline int on_exit(long ret)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;
	struct op_start *start = bpf_map_lookup_elem(&starts, &tid);
	if (!start)
		return 0;
	struct op_start s = *start;
	bpf_map_delete_elem(&starts, &tid);
	__u64 delta_us = (bpf_ktime_get_ns() - s.ts) / 1000;
	if (min_us && delta_us <= min_us)
		return 0;
	struct file___scry *file = (struct file___scry *)s.file;
	if (s.op == OP_OPEN) {
		if (ret < 0)
			return 0;
		file = fd_file(ret);
		if (!wanted(file))
			return 0;
	}
	struct fs_event *e = reserve_event(sizeof(*e));
	if (!e)
		return 0;
	e->delta_us = delta_us;
	e->offset = s.offset;
	e->size = (s.op == OP_READ || s.op == OP_WRITE) ? ret : 0;
	e->pid = id >> 32;
	e->tid = tid;
	e->op = s.op;
	e->pad = 0;
	bpf_get_current_comm(&e->comm, sizeof(e->comm));
	const char *fs = BPF_CORE_READ(file, f_inode, i_sb, s_type, name);
	if (bpf_probe_read_kernel_str(e->fs, sizeof(e->fs), fs) < 0)
		e->fs[0] = '\0';
	file_name(file, e->name, sizeof(e->name));
	bpf_ringbuf_submit(e, 0);
	return 0;
}

// Call NAME: OP on the descriptor in its first argument, at the offset in
// argument OFF (-1: the file's position).
#define ON_CALL(NAME, OP, OFF)                                                       \
	SEC("tracepoint/syscalls/sys_enter_" #NAME)                                  \
	int scry_fss_##NAME(struct sys_enter_record *ctx)                            \
	{                                                                            \
		return on_enter(OP, (long)ctx->args[0],                              \
				OFF < 0 ? -1 : (__s64)ctx->args[OFF < 0 ? 0 : OFF]); \
	}                                                                            \
	SEC("tracepoint/syscalls/sys_exit_" #NAME)                                   \
	int scry_fss_##NAME##_exit(struct sys_exit_record *ctx)                      \
	{                                                                            \
		return on_exit(ctx->ret);                                            \
	}

#define ON_OPEN(NAME)                                                \
	SEC("tracepoint/syscalls/sys_enter_" #NAME)                  \
	int scry_fss_##NAME(struct sys_enter_record *ctx)            \
	{                                                            \
		return on_open_enter();                              \
	}                                                            \
	SEC("tracepoint/syscalls/sys_exit_" #NAME)                   \
	int scry_fss_##NAME##_exit(struct sys_exit_record *ctx)      \
	{                                                            \
		return on_exit(ctx->ret);                            \
	}

ON_CALL(read, OP_READ, -1)
ON_CALL(readv, OP_READ, -1)
ON_CALL(pread64, OP_READ, 3)
ON_CALL(preadv, OP_READ, 3)
ON_CALL(preadv2, OP_READ, 3)
ON_CALL(write, OP_WRITE, -1)
ON_CALL(writev, OP_WRITE, -1)
ON_CALL(pwrite64, OP_WRITE, 3)
ON_CALL(pwritev, OP_WRITE, 3)
ON_CALL(pwritev2, OP_WRITE, 3)
ON_CALL(fsync, OP_FSYNC, -1)
ON_CALL(fdatasync, OP_FSYNC, -1)
ON_OPEN(open)
ON_OPEN(openat)
ON_OPEN(openat2)
ON_OPEN(creat)
