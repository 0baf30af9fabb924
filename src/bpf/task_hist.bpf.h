// SPDX-License-Identifier: (MIT OR Apache-2.0)
// Log2 histograms per key counted in the kernel (bcc's `bpf_log2l`
// slots), shared by the histogram tools: a hash map of `struct hist` by a
// u32 key (a tgid, a tid, a pid namespace, or (u32)-1 for the single
// histogram; a program that needs more defines HIST_KEY as __u64 before
// including this), each with the name of the task that opened it. User space
// reads and deletes them (src/sys/bpf_hists.rs), so each interval starts
// from zero. A program that wants the values' total too (an average)
// defines HIST_SUM: each histogram then ends with `sum`. Include after
// task.bpf.h.

#include "maps.bpf.h"

#include "hist.bpf.h"

#ifndef HIST_KEY
#define HIST_KEY __u32
#endif

#define MAX_SLOTS 36
#define MAX_KEYS 10240

struct hist {
	__u64 slots[MAX_SLOTS];
	char comm[TASK_COMM_LEN];
#ifdef HIST_SUM
	__u64 sum;
#endif
};

BPF_HASH(hists, HIST_KEY, struct hist, MAX_KEYS);

// A zeroed histogram to insert (too big for the BPF stack).
BPF_PERCPU_ARRAY(zero_hist, struct hist, 1);

// Counts `value` in the histogram of `key`, opened under `task`'s name.
static __always_inline void hist_add(HIST_KEY key, void *task, __u64 value)
{
	struct hist *h = bpf_map_lookup_elem(&hists, &key);
	if (!h) {
		__u32 zero = 0;
		struct hist *fresh = bpf_map_lookup_elem(&zero_hist, &zero);
		if (!fresh)
			return;
		bpf_map_update_elem(&hists, &key, fresh, BPF_NOEXIST);
		h = bpf_map_lookup_elem(&hists, &key);
		if (!h)
			return;
		BPF_CORE_READ_STR_INTO(&h->comm, (struct task_struct___scry *)task, comm);
	}
	__u32 slot = log2_slot(value);
	if (slot >= MAX_SLOTS)
		slot = MAX_SLOTS - 1;
	__sync_fetch_and_add(&h->slots[slot], 1);
#ifdef HIST_SUM
	__sync_fetch_and_add(&h->sum, value);
#endif
}
