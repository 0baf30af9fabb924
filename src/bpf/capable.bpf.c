// SPDX-License-Identifier: (MIT OR Apache-2.0)
// scry capable (bcc's capable): each capability check, streamed through
// the ring of ring.bpf.h, from capability:cap_capable (Linux 6.14 and
// later; bcc probes the cap_capable function, refused here). The
// tracepoint fires after the check with its verdict (ret: 0 allowed,
// else -EPERM) in the checking task; it does not carry the check's
// options, so bcc's AUDIT column (CAP_OPT_NOAUDIT) cannot be shown and
// -x's INSETID neither. Filters in the kernel: process (-p), cgroup (-c,
// cgroup.bpf.h: the checking task's). -K / -U: the kernel and user
// stacks of the check copied into the event itself (bpf_get_stack, not
// a stack map: a streamed event is printed once, and a map's ids could
// be reused before user space reads them); the ring is larger for them.

#include <stdbool.h>
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "Dual MIT/GPL";

#define TASK_COMM_LEN 16

const volatile __u32 filter_tgid = 0;
const volatile bool kernel_stack = false;
const volatile bool user_stack = false;

#define RING_BYTES (4 * 1024 * 1024)
#define MAX_STACK 127

#include "ring.bpf.h"
#include "cgroup.bpf.h"
#include "hooks.bpf.h"

struct cred;
struct user_namespace;

struct cap_event {
	__u32 pid;
	__u32 tid;
	__u32 uid;
	int cap;
	int ret;
	char comm[TASK_COMM_LEN];
	__u32 pad;
	// The checking task's cgroup v2 id (--unique=cgroup).
	__u64 cgroup_id;
};

// A check with its stacks (-K, -U): the bytes each stack took, then the
// addresses, innermost first.
struct cap_stack_event {
	struct cap_event e;
	__u32 kernel_bytes;
	__u32 user_bytes;
	__u64 kernel[MAX_STACK];
	__u64 user[MAX_STACK];
};

static __always_inline void on_check(void *ctx, int cap, int ret)
{
	__u64 id = bpf_get_current_pid_tgid();
	if (filter_tgid && (id >> 32) != filter_tgid)
		return;
	if (!in_cgroup())
		return;
	struct cap_event e = {
		.pid = id >> 32,
		.tid = (__u32)id,
		.uid = (__u32)bpf_get_current_uid_gid(),
		.cap = cap,
		.ret = ret,
		.cgroup_id = bpf_get_current_cgroup_id(),
	};
	bpf_get_current_comm(&e.comm, sizeof(e.comm));
	if (!kernel_stack && !user_stack) {
		emit(&e, sizeof(e));
		return;
	}
	struct cap_stack_event *s = reserve_event(sizeof(*s));
	if (!s)
		return;
	s->e = e;
	long k = kernel_stack ? bpf_get_stack(ctx, s->kernel, sizeof(s->kernel), 0) : 0;
	long u = user_stack ? bpf_get_stack(ctx, s->user, sizeof(s->user), BPF_F_USER_STACK) : 0;
	s->kernel_bytes = k > 0 ? k : 0;
	s->user_bytes = u > 0 ? u : 0;
	bpf_ringbuf_submit(s, 0);
}

BTF_OR_RAW(scry_cap_check, "cap_capable", on_check(ctx, cap, ret), const struct cred *cred,
	   struct user_namespace *target_ns, const struct user_namespace *capable_ns, int cap,
	   int ret)
