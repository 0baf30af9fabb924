// SPDX-License-Identifier: (MIT OR Apache-2.0)
// scry oomkill (bcc's oomkill): each process the OOM killer chose,
// streamed through the ring of ring.bpf.h, from oom:mark_victim (bcc
// probes oom_kill_process, a kernel function: refused here). The
// tracepoint runs in the task whose allocation invoked the killer (bcc's
// "triggered by"); its argument is the victim. PAGES is the victim's
// address-space size (mm->total_vm, pages): bcc prints the OOM control's
// totalpages (the memory the killer weighed against), which the
// tracepoint does not carry.

#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

char LICENSE[] SEC("license") = "Dual MIT/GPL";

#define TASK_COMM_LEN 16

#include "ring.bpf.h"
#include "hooks.bpf.h"

struct task_struct;

struct oom_event {
	__u32 fpid;
	__u32 tpid;
	__u64 pages;
	char fcomm[TASK_COMM_LEN];
	char tcomm[TASK_COMM_LEN];
};

struct mm_struct___scry_oom {
	unsigned long total_vm;
} __attribute__((preserve_access_index));

struct task_struct___scry_oom {
	int tgid;
	char comm[TASK_COMM_LEN];
	struct mm_struct___scry_oom *mm;
} __attribute__((preserve_access_index));

static __always_inline void on_victim(void *task)
{
	struct task_struct___scry_oom *t = task;
	struct oom_event e = {};
	e.fpid = bpf_get_current_pid_tgid() >> 32;
	bpf_get_current_comm(&e.fcomm, sizeof(e.fcomm));
	e.tpid = BPF_CORE_READ(t, tgid);
	BPF_CORE_READ_STR_INTO(&e.tcomm, t, comm);
	e.pages = BPF_CORE_READ(t, mm, total_vm);
	emit(&e, sizeof(e));
}

BTF_OR_RAW(scry_oom_victim, "mark_victim", on_victim(task), struct task_struct *task)
