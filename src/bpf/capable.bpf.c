// SPDX-License-Identifier: (MIT OR Apache-2.0)
// scry capable (bcc's capable): each capability check, streamed through
// the ring of ring.bpf.h, from capability:cap_capable (Linux 6.14 and
// later; bcc probes the cap_capable function, refused here). The
// tracepoint fires after the check with its verdict (ret: 0 allowed,
// else -EPERM) in the checking task; it does not carry the check's
// options, so bcc's AUDIT column (CAP_OPT_NOAUDIT) cannot be shown and
// -x's INSETID neither. Filters in the kernel: process (-p), cgroup (-c,
// cgroup.bpf.h: the checking task's).

#include <stdbool.h>
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "Dual MIT/GPL";

#define TASK_COMM_LEN 16

const volatile __u32 filter_tgid = 0;

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

static __always_inline void on_check(int cap, int ret)
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
	emit(&e, sizeof(e));
}

BTF_OR_RAW(scry_cap_check, "cap_capable", on_check(cap, ret), const struct cred *cred,
	   struct user_namespace *target_ns, const struct user_namespace *capable_ns, int cap,
	   int ret)
