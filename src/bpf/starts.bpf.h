// SPDX-License-Identifier: (MIT OR Apache-2.0)
// Per-thread start times (bpf_ktime_get_ns) of what a tool times, by tid:
// set when a wait or stretch starts, taken (read and removed) when it
// ends, so that a later end without a new start is never timed from a
// stale one. MAX_STARTS threads are timed at once (define it first for
// another size); more are not counted.

#include "maps.bpf.h"

#ifndef MAX_STARTS
#define MAX_STARTS 10240
#endif

BPF_HASH(starts, __u32, __u64, MAX_STARTS);

static __always_inline void start_at(__u32 tid, __u64 ts)
{
	bpf_map_update_elem(&starts, &tid, &ts, BPF_ANY);
}

// The nanoseconds since `tid`'s start, which is removed; false without one.
static __always_inline bool start_take(__u32 tid, __u64 *delta)
{
	__u64 *start = bpf_map_lookup_elem(&starts, &tid);
	if (!start)
		return false;
	__u64 now = bpf_ktime_get_ns();
	*delta = now > *start ? now - *start : 0;
	bpf_map_delete_elem(&starts, &tid);
	return true;
}
