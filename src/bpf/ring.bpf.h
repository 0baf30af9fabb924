// SPDX-License-Identifier: (MIT OR Apache-2.0)
// The stream of a BPF tool that sends events to user space: one BPF ring
// buffer (`events`, RING_BYTES) shared by all CPUs, read by the engine's
// ring reader (src/sys/bpf_engine.rs), and `drops`, a per-CPU count of the
// events that did not fit, which the tool prints at the end.

#ifndef RING_BYTES
#define RING_BYTES (256 * 1024)
#endif

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, RING_BYTES);
} events SEC(".maps");

#include "drops.bpf.h"

// Room for `size` bytes in the ring, filled in place then submitted
// (bpf_ringbuf_submit); NULL, and a drop counted, when the ring is full.
#define reserve_event(size)                                              \
	({                                                               \
		void *room_ = bpf_ringbuf_reserve(&events, (size), 0);   \
		if (!room_)                                              \
			count_drop();                                    \
		room_;                                                   \
	})

// Sends `size` bytes of `data`; counts a drop when the ring is full.
static __always_inline void emit(void *data, __u64 size)
{
	if (bpf_ringbuf_output(&events, data, size, 0) != 0)
		count_drop();
}
