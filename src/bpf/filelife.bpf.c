// SPDX-License-Identifier: (MIT OR Apache-2.0)
// scry filelife (bcc's filelife): each file deleted, with its age, from
// the system-call tracepoints (bcc probes vfs_create, vfs_open and
// vfs_unlink, kernel functions: refused here). A creation is an open,
// openat, openat2 or creat with O_CREAT that returned a descriptor: its
// path, as the caller wrote it, keyed to the time; a deletion is an
// unlink or unlinkat (not of a directory) that succeeded, of a path
// written the same way. What the calls cannot show: a file is matched by
// the name it was created and deleted under (relative names are not
// resolved, a renamed file is not followed), and an O_CREAT open of a
// file that already existed counts as its creation. Filter in the kernel:
// the deleting process (-p).

#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "tp_pass.bpf.h"
#include <bpf/bpf_tracing.h>

#include "maps.bpf.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

#define TASK_COMM_LEN 16
#define PATH_LEN 256
#define O_CREAT 0100
#define AT_REMOVEDIR 0x200

const volatile __u32 filter_tgid = 0;

struct path_key {
	char path[PATH_LEN];
};

// The path pointer of a call in flight, by thread id.
BPF_HASH(calls, __u32, __u64, 10240);

// Creation times by path.
BPF_HASH(births, struct path_key, __u64, 10240);

// A zeroed key to read a path into (too large for the stack).
BPF_PERCPU_ARRAY(scratch, struct path_key, 1);

struct life_event {
	__u64 age_ns;
	__u32 pid;
	__u32 tid;
	char comm[TASK_COMM_LEN];
	char path[PATH_LEN];
};

#include "ring.bpf.h"
#include "syscall_records.bpf.h"

static __always_inline void keep_call(__u64 path)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	bpf_map_update_elem(&calls, &tid, &path, BPF_ANY);
}

// The path of the call in flight, read into the scratch key (NULL when
// none was kept or the call failed).
static __always_inline struct path_key *take_call(long ret)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid(), zero = 0;
	__u64 *path = bpf_map_lookup_elem(&calls, &tid);
	if (!path)
		return NULL;
	__u64 user = *path;
	bpf_map_delete_elem(&calls, &tid);
	struct path_key *key = bpf_map_lookup_elem(&scratch, &zero);
	if (ret < 0 || !key)
		return NULL;
	__builtin_memset(key, 0, sizeof(*key));
	if (bpf_probe_read_user_str(key->path, sizeof(key->path), (const void *)user) < 0)
		return NULL;
	return key;
}

static __always_inline void on_created(long ret)
{
	struct path_key *key = take_call(ret);
	if (!key)
		return;
	__u64 now = bpf_ktime_get_ns();
	bpf_map_update_elem(&births, key, &now, BPF_ANY);
}

static __always_inline void on_deleted(long ret)
{
	struct path_key *key = take_call(ret);
	if (!key)
		return;
	__u64 *born = bpf_map_lookup_elem(&births, key);
	if (!born)
		return;
	__u64 id = bpf_get_current_pid_tgid();
	struct life_event *e = reserve_event(sizeof(*e));
	if (e) {
		e->age_ns = bpf_ktime_get_ns() - *born;
		e->pid = id >> 32;
		e->tid = (__u32)id;
		bpf_get_current_comm(&e->comm, sizeof(e->comm));
		bpf_probe_read_kernel(&e->path, sizeof(e->path), key->path);
		bpf_ringbuf_submit(e, 0);
	}
	bpf_map_delete_elem(&births, key);
}

// A creating open: PATH and FLAGS are argument numbers (FLAGS < 0:
// creat, always creating).
#define ON_CREATE(NAME, PATH, FLAGS)                                          \
	SEC("tracepoint/syscalls/sys_enter_" #NAME)                           \
	int scry_fl_##NAME(struct sys_enter_record *ctx)                      \
	{                                                                     \
		if (FLAGS < 0 || (ctx->args[FLAGS < 0 ? 0 : FLAGS] & O_CREAT)) \
			keep_call(ctx->args[PATH]);                           \
		return 0;                                                     \
	}                                                                     \
	SEC("tracepoint/syscalls/sys_exit_" #NAME)                            \
	int scry_fl_##NAME##_exit(struct sys_exit_record *ctx)                \
	{                                                                     \
		on_created(ctx->ret);                                         \
		return 0;                                                     \
	}

ON_CREATE(open, 0, 1)
ON_CREATE(openat, 1, 2)
ON_CREATE(creat, 0, -1)

// openat2: the flags are in struct open_how (its first field).
SEC("tracepoint/syscalls/sys_enter_openat2")
int scry_fl_openat2(struct sys_enter_record *ctx)
{
	__u64 flags = 0;
	if (bpf_probe_read_user(&flags, sizeof(flags), (const void *)ctx->args[2]) == 0 &&
	    (flags & O_CREAT))
		keep_call(ctx->args[1]);
	return TP_PASS;
}

SEC("tracepoint/syscalls/sys_exit_openat2")
int scry_fl_openat2_exit(struct sys_exit_record *ctx)
{
	on_created(ctx->ret);
	return TP_PASS;
}

static __always_inline int on_unlink(__u64 path)
{
	if (filter_tgid && (bpf_get_current_pid_tgid() >> 32) != filter_tgid)
		return 0;
	keep_call(path);
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_unlink")
int scry_fl_unlink(struct sys_enter_record *ctx) { on_unlink(ctx->args[0]);
 return TP_PASS; }

SEC("tracepoint/syscalls/sys_exit_unlink")
int scry_fl_unlink_exit(struct sys_exit_record *ctx)
{
	on_deleted(ctx->ret);
	return TP_PASS;
}

SEC("tracepoint/syscalls/sys_enter_unlinkat")
int scry_fl_unlinkat(struct sys_enter_record *ctx)
{
	if (ctx->args[2] & AT_REMOVEDIR)
		return TP_PASS;
	on_unlink(ctx->args[1]);
	return TP_PASS;
}

SEC("tracepoint/syscalls/sys_exit_unlinkat")
int scry_fl_unlinkat_exit(struct sys_exit_record *ctx)
{
	on_deleted(ctx->ret);
	return TP_PASS;
}
