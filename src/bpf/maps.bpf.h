// SPDX-License-Identifier: (MIT OR Apache-2.0)
// The maps the programs declare, one line each, spelled as bcc spells them
// (BPF_HASH, BPF_ARRAY, BPF_PERCPU_ARRAY: name first, then the types, then
// the size); libbpf sees the same BTF-defined map as the four-line struct.

#pragma once

// A hash map `name`: up to `entries` keys of `key_type`, each to a `value_type`.
#define BPF_HASH(name, key_type, value_type, entries)                   \
	struct {                                                        \
		__uint(type, BPF_MAP_TYPE_HASH);                        \
		__uint(max_entries, entries);                           \
		__type(key, key_type);                                  \
		__type(value, value_type);                              \
	} name SEC(".maps")

// An array `name` of `entries` `value_type`s, indexed by a __u32.
#define BPF_ARRAY(name, value_type, entries)                            \
	struct {                                                        \
		__uint(type, BPF_MAP_TYPE_ARRAY);                       \
		__uint(max_entries, entries);                           \
		__type(key, __u32);                                     \
		__type(value, value_type);                              \
	} name SEC(".maps")

// As BPF_ARRAY, one array per CPU (read back as one value per CPU).
#define BPF_PERCPU_ARRAY(name, value_type, entries)                     \
	struct {                                                        \
		__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);                \
		__uint(max_entries, entries);                           \
		__type(key, __u32);                                     \
		__type(value, value_type);                              \
	} name SEC(".maps")

// Adds `delta` to the u64 sum of `key` in hash map `map` (made at 0 first).
#define add_delta(map, key, delta)                                      \
	do {                                                            \
		__u64 zero_ = 0;                                        \
		bpf_map_update_elem(map, key, &zero_, BPF_NOEXIST);     \
		__u64 *sum_ = bpf_map_lookup_elem(map, key);            \
		if (sum_)                                               \
			__sync_fetch_and_add(sum_, delta);              \
	} while (0)
