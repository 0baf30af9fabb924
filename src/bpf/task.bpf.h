// SPDX-License-Identifier: (MIT OR Apache-2.0)
// The task_struct fields the scheduler tools read, relocated against the
// running kernel's BTF (CO-RE), and the task's state under either name
// (`__state` since 5.14, `state` before), and whether it is a kernel thread.

#define TASK_COMM_LEN 16
#define TASK_RUNNING 0

struct task_struct___scry {
	int pid;
	int tgid;
	unsigned int __state;
	char comm[TASK_COMM_LEN];
} __attribute__((preserve_access_index));

struct task_struct___scry_old {
	long state;
} __attribute__((preserve_access_index));

static __always_inline long task_state(void *task)
{
	struct task_struct___scry *t = task;
	if (bpf_core_field_exists(t->__state))
		return BPF_CORE_READ(t, __state);
	return BPF_CORE_READ((struct task_struct___scry_old *)task, state);
}

#define PF_KTHREAD 0x00200000

struct task_struct___scry_flags {
	unsigned int flags;
} __attribute__((preserve_access_index));

// A kernel thread (PF_KTHREAD): no user stack.
static __always_inline bool task_is_kthread(void *task)
{
	return BPF_CORE_READ((struct task_struct___scry_flags *)task, flags) & PF_KTHREAD;
}
