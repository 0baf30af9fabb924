// SPDX-License-Identifier: (MIT OR Apache-2.0)
// `drops`: a per-CPU count of what a program could not keep (events that
// did not fit the ring of ring.bpf.h, allocations that did not fit
// memleak's map, samples that did not fit oncpu's counts), read by the
// engine (`bpf_engine::dropped`) and printed by the tool at the end.

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} drops SEC(".maps");

static __always_inline void count_drop(void)
{
	__u32 zero = 0;
	__u64 *d = bpf_map_lookup_elem(&drops, &zero);
	if (d)
		*d += 1;
}
