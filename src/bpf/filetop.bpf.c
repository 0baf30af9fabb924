// SPDX-License-Identifier: (MIT OR Apache-2.0)
// scry filetop (bcc's filetop): reads and writes per file and thread,
// summed in the kernel; user space reads and deletes the map each
// interval.
//
// Hooks: bcc's first where the kernel allows them, vfs_read and
// vfs_write (the struct file and the bytes asked for) by fentry, else by
// kprobe (the engine's kernel-function groups, src/sys/bpf_engine.rs).
// Where neither can be hooked (no fentry, no kprobes: this project's CI
// host), the system calls that read or write a descriptor (read, readv,
// pread64, preadv, preadv2; write, writev, pwrite64, pwritev, pwritev2),
// entered (the descriptor kept by thread) and exited (the file found
// through the task's file table, fd_file.bpf.h, and counted); every call
// is its own group, optional (not every architecture has every call).
// Both meet in count_rw(); the choice of hooks is made in one place,
// sys::bpf_filetop's groups.
//
// What the calls see against bcc's VFS hooks: the bytes are those a call
// moved (its result), where bcc counts the bytes asked for; a call that
// failed counts as a call with no bytes; I/O that does not come through
// these calls (sendfile, splice, copy_file_range, io_uring, mmap'd
// files, the kernel's own reads such as exec's) is not seen. The vector
// calls (readv, writev...) are one call each there, where vfs_read and
// vfs_write do not see them (bcc's filetop neither).
// Filters in the kernel: one process (-p), regular files only (unless
// -a: then sockets, pipes and devices too), the files directly in one
// directory (-d, bcc's test of the parent dentry's inode; its device too
// here, so a directory of another file system with the same inode number
// does not match).

#include <stdbool.h>
#include <linux/types.h>
#include <linux/bpf.h>
#include <asm/ptrace.h>
#include <bpf/bpf_helpers.h>
#include "tp_pass.bpf.h"
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "maps.bpf.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

#include "fd_file.bpf.h"
#include "syscall_records.bpf.h"

#define TASK_COMM_LEN 16
#define PATH_MAX_NAME 256
#define MAX_FILES 10240

const volatile __u32 filter_tgid = 0;
const volatile bool regular_only = true;
// -d: the directory's inode number (0: any) and device (the kernel's
// encoding, s_dev).
const volatile __u64 dir_ino = 0;
const volatile __u32 dir_dev = 0;

// Whether the file is directly in -d's directory.
static __always_inline bool in_dir(struct file___scry *file)
{
	if (!dir_ino)
		return true;
	struct inode___scry *dir = BPF_CORE_READ(file, f_path.dentry, d_parent, d_inode);
	return BPF_CORE_READ(dir, i_ino) == dir_ino && BPF_CORE_READ(dir, i_sb, s_dev) == dir_dev;
}

struct file_id {
	__u64 inode;
	__u32 dev;
	__u32 rdev;
	__u32 pid;
	__u32 tid;
};

struct file_stat {
	__u64 reads;
	__u64 read_bytes;
	__u64 writes;
	__u64 write_bytes;
	__u32 pid;
	__u32 tid;
	char comm[TASK_COMM_LEN];
	char name[PATH_MAX_NAME];
	char type;
};

BPF_HASH(entries, struct file_id, struct file_stat, MAX_FILES);

// A fresh value (too large for the stack).
BPF_PERCPU_ARRAY(scratch, struct file_stat, 1);

// The descriptor of a call in flight, by thread id: fd << 1 | is_read.
BPF_HASH(calls, __u32, __u64, 10240);

// One read (is_read) or write of `bytes` on `file` by the current thread.
static __always_inline void count_rw(struct file___scry *file, __u64 bytes, bool is_read)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 pid = id >> 32, tid = (__u32)id, zero = 0;
	if (filter_tgid && pid != filter_tgid)
		return;
	unsigned short mode = file_mode(file) & S_IFMT;
	if (regular_only && mode != S_IFREG)
		return;
	if (!in_dir(file))
		return;
	struct file_id key = {
		.inode = BPF_CORE_READ(file, f_inode, i_ino),
		.dev = BPF_CORE_READ(file, f_inode, i_sb, s_dev),
		.rdev = BPF_CORE_READ(file, f_inode, i_rdev),
		.pid = pid,
		.tid = tid,
	};
	struct file_stat *stat = bpf_map_lookup_elem(&entries, &key);
	if (!stat) {
		struct file_stat *fresh = bpf_map_lookup_elem(&scratch, &zero);
		if (!fresh)
			return;
		__builtin_memset(fresh, 0, sizeof(*fresh));
		fresh->pid = pid;
		fresh->tid = tid;
		fresh->type = mode == S_IFREG ? 'R' : mode == S_IFSOCK ? 'S' : 'O';
		bpf_get_current_comm(&fresh->comm, sizeof(fresh->comm));
		file_name(file, fresh->name, sizeof(fresh->name));
		bpf_map_update_elem(&entries, &key, fresh, BPF_NOEXIST);
		stat = bpf_map_lookup_elem(&entries, &key);
		if (!stat)
			return;
	}
	if (is_read) {
		__sync_fetch_and_add(&stat->reads, 1);
		__sync_fetch_and_add(&stat->read_bytes, bytes);
	} else {
		__sync_fetch_and_add(&stat->writes, 1);
		__sync_fetch_and_add(&stat->write_bytes, bytes);
	}
}

static __always_inline int on_enter(long fd, bool is_read)
{
	__u64 id = bpf_get_current_pid_tgid();
	if (filter_tgid && (id >> 32) != filter_tgid)
		return 0;
	if (fd < 0)
		return 0;
	__u32 tid = (__u32)id;
	__u64 call = ((__u64)fd << 1) | is_read;
	bpf_map_update_elem(&calls, &tid, &call, BPF_ANY);
	return 0;
}

static __always_inline int on_exit(long ret)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u64 *call = bpf_map_lookup_elem(&calls, &tid);
	if (!call)
		return 0;
	__u64 c = *call;
	bpf_map_delete_elem(&calls, &tid);
	struct file___scry *file = fd_file((long)(c >> 1));
	if (file)
		count_rw(file, ret > 0 ? ret : 0, c & 1);
	return 0;
}

// The tracepoint hooks: call NAME, a read (1) or a write (0) of its
// first argument, the descriptor.
#define ON_CALL(NAME, IS_READ)                                        \
	SEC("tracepoint/syscalls/sys_enter_" #NAME)                   \
	int scry_ft_##NAME(struct sys_enter_record *ctx)              \
	{                                                             \
		return on_enter((long)ctx->args[0], IS_READ);         \
	}                                                             \
	SEC("tracepoint/syscalls/sys_exit_" #NAME)                    \
	int scry_ft_##NAME##_exit(struct sys_exit_record *ctx)        \
	{                                                             \
		return on_exit(ctx->ret);                             \
	}

ON_CALL(read, 1)
ON_CALL(readv, 1)
ON_CALL(pread64, 1)
ON_CALL(preadv, 1)
ON_CALL(preadv2, 1)
ON_CALL(write, 0)
ON_CALL(writev, 0)
ON_CALL(pwrite64, 0)
ON_CALL(pwritev, 0)
ON_CALL(pwritev2, 0)

// bcc's hooks: FUNC's file and the bytes asked for, a read (1) or a
// write (0); fentry, else kprobe.
#define ON_VFS(FUNC, IS_READ)                                                           \
	SEC("fentry/" #FUNC)                                                            \
	int BPF_PROG(scry_k_##FUNC##__fentry, struct file___scry *file, char *buf,      \
		     unsigned long count)                                               \
	{                                                                               \
		count_rw(file, count, IS_READ);                                         \
		return 0;                                                               \
	}                                                                               \
	SEC("kprobe/" #FUNC)                                                            \
	int BPF_KPROBE(scry_k_##FUNC##__kprobe, struct file___scry *file, char *buf,    \
		       unsigned long count)                                             \
	{                                                                               \
		count_rw(file, count, IS_READ);                                         \
		return 0;                                                               \
	}

ON_VFS(vfs_read, 1)
ON_VFS(vfs_write, 0)
