// SPDX-License-Identifier: (MIT OR Apache-2.0)
// The stack map of the tools that sum per stack (offcputime,
// wakeuptime, oncpu): up to MAX_DEPTH addresses per stack, its number of
// stacks set by user space before load (bcc's --stack-storage-size,
// `bpf_engine::size_stack_map`), read by `bpf_engine::stack_ips`.

#define MAX_DEPTH 127

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, 1024);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, MAX_DEPTH * sizeof(__u64));
} stacks SEC(".maps");
