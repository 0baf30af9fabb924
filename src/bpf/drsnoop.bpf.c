// SPDX-License-Identifier: (MIT OR Apache-2.0)
// scry drsnoop (bcc's drsnoop): each direct reclaim (an allocation that
// found too little free memory and reclaimed pages itself), with its
// latency and the pages reclaimed, from vmscan:mm_vmscan_direct_reclaim_
// begin/end (as libbpf-tools' drsnoop), streamed through the ring of
// ring.bpf.h. With --memcg (scry's addition) also the reclaims a task
// makes when its memory cgroup is at its limit (mm_vmscan_memcg_reclaim_
// begin/end), which the direct-reclaim tracepoints do not see. Filters in
// the kernel: process (-p), thread (-t). With -e (libbpf-tools'), the
// free pages when the reclaim began: vm_zone_stat[NR_FREE_PAGES]
// (NR_FREE_PAGES is 0), at the address user space found in /proc/kallsyms.

#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "maps.bpf.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

#define TASK_COMM_LEN 16

const volatile __u32 filter_tgid = 0;
const volatile __u32 filter_tid = 0;
// vm_zone_stat's address (-e); 0: not read.
const volatile __u64 vm_zone_stat_addr = 0;

#include "ring.bpf.h"
#include "hooks.bpf.h"

struct reclaim_start {
	__u64 ts;
	__u64 free_pages;
};

BPF_HASH(starts, __u32, struct reclaim_start, 8192);

struct reclaim_event {
	__u64 delta_ns;
	__u64 nr_reclaimed;
	__u32 pid;
	__u32 tid;
	__u32 memcg;
	__u32 pad;
	__u64 free_pages;
	char comm[TASK_COMM_LEN];
};

static __always_inline void on_begin(void)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;
	if (filter_tgid && (id >> 32) != filter_tgid)
		return;
	if (filter_tid && tid != filter_tid)
		return;
	struct reclaim_start start = {.ts = bpf_ktime_get_ns()};
	if (vm_zone_stat_addr)
		bpf_probe_read_kernel(&start.free_pages, sizeof(start.free_pages),
				      (const void *)vm_zone_stat_addr);
	bpf_map_update_elem(&starts, &tid, &start, BPF_ANY);
}

static __always_inline void on_end(unsigned long nr_reclaimed, __u32 memcg)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;
	struct reclaim_start *start = bpf_map_lookup_elem(&starts, &tid);
	if (!start)
		return;
	struct reclaim_event e = {
		.delta_ns = bpf_ktime_get_ns() - start->ts,
		.free_pages = start->free_pages,
		.nr_reclaimed = nr_reclaimed,
		.pid = id >> 32,
		.tid = tid,
		.memcg = memcg,
	};
	bpf_map_delete_elem(&starts, &tid);
	bpf_get_current_comm(&e.comm, sizeof(e.comm));
	emit(&e, sizeof(e));
}

BTF_OR_RAW(scry_dr_begin, "mm_vmscan_direct_reclaim_begin", on_begin(), int order,
	   unsigned int gfp_flags)
BTF_OR_RAW(scry_dr_end, "mm_vmscan_direct_reclaim_end", on_end(nr_reclaimed, 0),
	   unsigned long nr_reclaimed)
BTF_OR_RAW(scry_dr_memcg_begin, "mm_vmscan_memcg_reclaim_begin", on_begin(), int order,
	   unsigned int gfp_flags)
BTF_OR_RAW(scry_dr_memcg_end, "mm_vmscan_memcg_reclaim_end", on_end(nr_reclaimed, 1),
	   unsigned long nr_reclaimed)
