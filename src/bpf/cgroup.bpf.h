// SPDX-License-Identifier: (MIT OR Apache-2.0)
// `--cgroup PATH`'s filter: `cgroup_map`, a one-slot cgroup array that user
// space fills with the directory's descriptor before attaching
// (`bpf_execsnoop::fill_cgroup`), switched on by `filter_cgroup`.

const volatile bool filter_cgroup = false;

struct {
	__uint(type, BPF_MAP_TYPE_CGROUP_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} cgroup_map SEC(".maps");

// True when the filter is off or the current task is in the cgroup (the
// helper's 1; an empty slot's error lets no task through).
static __always_inline bool in_cgroup(void)
{
	return !filter_cgroup || bpf_current_task_under_cgroup(&cgroup_map, 0) == 1;
}
