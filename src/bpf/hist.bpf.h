// SPDX-License-Identifier: (MIT OR Apache-2.0)
// The log2 slot of a value, as bcc's `bpf_log2l`: slot 0 holds 0 and 1,
// slot i holds 2^i ..= 2^(i+1) - 1 (`analysis::hist` reads them so).

static __always_inline __u32 log2_slot(__u64 v)
{
	__u32 slot = 0;
	// 64 iterations at most; the verifier bounds the loop.
	for (int i = 0; i < 64 && v > 1; i++) {
		v >>= 1;
		slot++;
	}
	return slot;
}
