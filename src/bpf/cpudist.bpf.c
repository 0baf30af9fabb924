// SPDX-License-Identifier: (MIT OR Apache-2.0)
// scry cpudist (bcc's cpudist): how long tasks ran on a CPU (or, with
// off_cpu, how long they were away) per stretch, as log2 histograms in a
// hash map: one histogram, or one per process (-P) or thread (-L).
//
// The rules are libbpf-tools' own, so that both count the same stretches:
// at each sched_switch, on-CPU mode closes the stretch of `prev` only when
// it was preempted (its state is still TASK_RUNNING: a task that blocks is
// not counted) and opens one for `next`; off-CPU mode opens a stretch for
// `prev` and closes the one of `next`. A start is kept per tid and not
// removed once used (as libbpf-tools). Units (µs or ms) are applied here,
// so the slots are those of the printed histogram. With `filter_cgroup`
// (-c), a switch counts only when the current task (the one switching
// out) is under the cgroup, as libbpf-tools filters.
//
// The idle task (pid 0, one per CPU) is left out unless include_idle
// (bcc's default and -I; libbpf-tools always counts it, its stretches of
// every CPU under one start): with it, its start is kept per CPU. Each
// histogram also sums its values (HIST_SUM) for bcc's -e average.
//
// Variants: tp_btf, then raw_tp (the classic tracepoint has no tgid).

#include <stdbool.h>
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

char LICENSE[] SEC("license") = "Dual MIT/GPL";

#include "hooks.bpf.h"
#include "task.bpf.h"
#include "starts.bpf.h"
#define HIST_SUM
#include "task_hist.bpf.h"
#include "cgroup.bpf.h"

const volatile bool per_process = false;
const volatile bool per_thread = false;
const volatile bool off_cpu = false;
const volatile bool milliseconds = false;
// 0: every process.
const volatile __u32 filter_tgid = 0;
// bcc's -I.
const volatile bool include_idle = false;

// Where a task's stretch starts: its tid; the idle task's, per CPU (the
// switch runs on the CPU whose idle task it is).
static __always_inline __u32 start_key(__u32 tid)
{
	return tid ? tid : (__u32)-1 - bpf_get_smp_processor_id();
}

static __always_inline void store_start(__u32 tgid, __u32 tid, __u64 ts)
{
	if (filter_tgid != 0 && filter_tgid != tgid)
		return;
	if (tid == 0 && !include_idle)
		return;
	start_at(start_key(tid), ts);
}

static __always_inline void update_hist(void *task, __u32 tgid, __u32 tid, __u64 ts)
{
	if (filter_tgid != 0 && filter_tgid != tgid)
		return;
	if (tid == 0 && !include_idle)
		return;
	__u32 at = start_key(tid);
	__u64 *start = bpf_map_lookup_elem(&starts, &at);
	if (!start || ts < *start)
		return;
	__u32 key = per_process ? tgid : per_thread ? tid : (__u32)-1;
	__u64 delta = ts - *start;
	hist_add(key, task, delta / (milliseconds ? 1000000 : 1000));
}

static __always_inline void on_switch(void *prev, void *next)
{
	if (!in_cgroup())
		return;
	struct task_struct___scry *p = prev, *n = next;
	__u32 prev_tid = BPF_CORE_READ(p, pid), prev_tgid = BPF_CORE_READ(p, tgid);
	__u32 next_tid = BPF_CORE_READ(n, pid), next_tgid = BPF_CORE_READ(n, tgid);
	__u64 ts = bpf_ktime_get_ns();
	if (off_cpu) {
		store_start(prev_tgid, prev_tid, ts);
		update_hist(next, next_tgid, next_tid, ts);
	} else {
		if (task_state(prev) == TASK_RUNNING)
			update_hist(prev, prev_tgid, prev_tid, ts);
		store_start(next_tgid, next_tid, ts);
	}
}

BTF_OR_RAW(scry_cd_switch, "sched_switch", on_switch(prev, next),
	   bool preempt, struct task_struct *prev, struct task_struct *next)
