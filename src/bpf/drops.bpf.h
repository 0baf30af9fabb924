// SPDX-License-Identifier: (MIT OR Apache-2.0)
// `drops`: a per-CPU count of what a program could not keep (events that
// did not fit the ring of ring.bpf.h, allocations that did not fit
// memleak's map, samples that did not fit oncpu's counts), read by the
// engine (`bpf_engine::dropped`) and printed by the tool at the end.

#include "maps.bpf.h"

BPF_PERCPU_ARRAY(drops, __u64, 1);

static __always_inline void count_drop(void)
{
	__u32 zero = 0;
	__u64 *d = bpf_map_lookup_elem(&drops, &zero);
	if (d)
		*d += 1;
}
