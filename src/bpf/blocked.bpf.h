// SPDX-License-Identifier: (MIT OR Apache-2.0)
// The filters of the tools that time blocks (offcputime, offwaketime),
// set by user space before load: a process, a thread, user or kernel
// threads only, bcc's --state (0: TASK_RUNNING only, i.e. preempted;
// another value: a state with one of its bits), the blocks' bounds in µs.

// 0: every process, every thread.
const volatile __u32 filter_tgid = 0;
const volatile __u32 filter_tid = 0;
const volatile bool user_threads_only = false;
const volatile bool kernel_threads_only = false;
// -1: every state.
const volatile long state = -1;
const volatile __u64 min_block_us = 1;
const volatile __u64 max_block_us = (__u64)-1;

// Whether a task of this state, process, thread and kind is watched.
static __always_inline bool blocked_allowed(long task_state, __u32 tgid, __u32 tid, bool kthread)
{
	if (filter_tgid != 0 && filter_tgid != tgid)
		return false;
	if (filter_tid != 0 && filter_tid != tid)
		return false;
	if (user_threads_only && kthread)
		return false;
	if (kernel_threads_only && !kthread)
		return false;
	if (state == -1)
		return true;
	if (state == 0)
		return task_state == 0;
	return (task_state & state) != 0;
}
