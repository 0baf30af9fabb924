// SPDX-License-Identifier: (MIT OR Apache-2.0)
// scry runqlen (bcc's runqlen): the length of each CPU's run queue,
// sampled by a software clock on every CPU (99 Hz by default), counted in
// linear slots per CPU (the run queue's tasks less the one running: 0 is
// an idle CPU or one task alone).
//
// Unlike bcc, which counts the current task's `se.cfs_rq->nr_running`
// (under cgroups, the queue of that task's group only, and a field
// renamed `nr_queued` in 6.14), this counts the CPU's own run queue: the
// current task's cfs_rq leads to it (`cfs_rq->rq` with group scheduling,
// else the cfs_rq is the one inside the rq), whose `nr_running` holds
// every runnable task of every class on that CPU. (The per-CPU
// `runqueues` would be shorter, but kernels without KALLSYMS_ALL cannot
// resolve it.)
//
// One program on a perf event (no hook variants: the caller attaches it
// to one clock per CPU).

#include <stdbool.h>
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "maps.bpf.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

#define MAX_SLOTS 32
#define MAX_CPUS 512

const volatile bool per_cpu = false;

struct rq___scry {
	unsigned int nr_running;
	char cfs;
} __attribute__((preserve_access_index));

struct cfs_rq___scry {
	struct rq___scry *rq;
} __attribute__((preserve_access_index));

struct sched_entity___scry {
	struct cfs_rq___scry *cfs_rq;
} __attribute__((preserve_access_index));

struct task_struct___scry_se {
	struct sched_entity___scry se;
} __attribute__((preserve_access_index));

struct hist {
	__u64 slots[MAX_SLOTS];
};

// One histogram per CPU (index 0 only, without per_cpu).
BPF_ARRAY(hists, struct hist, MAX_CPUS);

SEC("perf_event")
int scry_rl_sample(void *ctx)
{
	struct task_struct___scry_se *task = (void *)bpf_get_current_task();
	struct cfs_rq___scry *cfs_rq = BPF_CORE_READ(task, se.cfs_rq);
	struct rq___scry *rq;
	if (bpf_core_field_exists(cfs_rq->rq))
		rq = BPF_CORE_READ(cfs_rq, rq);
	else
		rq = (void *)cfs_rq - bpf_core_field_offset(struct rq___scry, cfs);
	if (!rq)
		return 0;
	__u64 len = BPF_CORE_READ(rq, nr_running);
	if (len > 0)
		len--;
	if (len >= MAX_SLOTS)
		len = MAX_SLOTS - 1;
	__u32 key = per_cpu ? bpf_get_smp_processor_id() : 0;
	struct hist *h = bpf_map_lookup_elem(&hists, &key);
	if (!h)
		return 0;
	__sync_fetch_and_add(&h->slots[len], 1);
	return 0;
}
