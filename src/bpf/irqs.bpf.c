// SPDX-License-Identifier: (MIT OR Apache-2.0)
// scry hardirqs and softirqs (bcc's tools of those names): time spent in
// each hard interrupt handler (by the handler's name, as the irqaction
// calls it) and in each softirq vector, summed, as log2 histograms
// (`dist`), or counted (`do_count`), in one hash map keyed by (vector,
// name): a hard irq has vector 0 and its name, a softirq its vector and
// no name (user space names the vectors).
//
// The rules are libbpf-tools' own, so that both count the same events:
// the entry stores the time in a per-CPU slot (one for hard irqs, one for
// softirqs: a hard irq may interrupt a softirq), the exit adds the time
// since; counting counts at the entry. Units (µs or ns) are applied here.
// With `filter_cgroup` (-c), only interrupts that came while a task under
// the cgroup was current count (libbpf-tools' hardirqs filter); with
// `filter_cpu` (bcc's -c CPU, --cpu here), only those on that CPU.
// Each tool loads only its own pair of hooks (the other group skipped).
//
// Variants: tp_btf, then raw_tp.

#include <stdbool.h>
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "maps.bpf.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

#include "hooks.bpf.h"
#include "hist.bpf.h"
#include "cgroup.bpf.h"

#define MAX_SLOTS 36
#define MAX_KEYS 256
#define NAME_LEN 32
#define SLOT_HARDIRQ 0
#define SLOT_SOFTIRQ 1

const volatile bool do_count = false;
const volatile bool dist = false;
const volatile bool nanoseconds = false;
// -1: every CPU.
const volatile __s32 filter_cpu = -1;

static __always_inline bool on_cpu(void)
{
	return filter_cpu < 0 || bpf_get_smp_processor_id() == (__u32)filter_cpu;
}

struct irq_key {
	__u32 vec;
	char name[NAME_LEN];
};

struct info {
	__u64 count;
	__u64 slots[MAX_SLOTS];
};

struct irqaction___scry {
	const char *name;
} __attribute__((preserve_access_index));

struct irqaction;

BPF_PERCPU_ARRAY(start, __u64, 2);

BPF_HASH(infos, struct irq_key, struct info, MAX_KEYS);

static struct info zero_info;

static __always_inline struct info *info_of(struct irq_key *key)
{
	struct info *info = bpf_map_lookup_elem(&infos, key);
	if (info)
		return info;
	bpf_map_update_elem(&infos, key, &zero_info, BPF_NOEXIST);
	return bpf_map_lookup_elem(&infos, key);
}

static __always_inline void hardirq_name(struct irq_key *key, struct irqaction *action)
{
	const char *name = BPF_CORE_READ((struct irqaction___scry *)action, name);
	bpf_probe_read_kernel_str(key->name, sizeof(key->name), name);
}

// Entry: a count, or the start of a stretch in per-CPU slot `slot`.
static __always_inline void on_entry(__u32 slot, struct irq_key *key)
{
	if (do_count) {
		struct info *info = info_of(key);
		if (info)
			__sync_fetch_and_add(&info->count, 1);
		return;
	}
	__u64 ts = bpf_ktime_get_ns();
	bpf_map_update_elem(&start, &slot, &ts, BPF_ANY);
}

// Exit: the stretch since the entry in slot `slot`, summed or in a slot.
static __always_inline void on_exit(__u32 slot, struct irq_key *key)
{
	if (do_count)
		return;
	__u64 *ts = bpf_map_lookup_elem(&start, &slot);
	if (!ts || *ts == 0)
		return;
	__u64 delta = bpf_ktime_get_ns() - *ts;
	*ts = 0;
	if (!nanoseconds)
		delta /= 1000;
	struct info *info = info_of(key);
	if (!info)
		return;
	if (!dist) {
		__sync_fetch_and_add(&info->count, delta);
		return;
	}
	__u32 s = log2_slot(delta);
	if (s >= MAX_SLOTS)
		s = MAX_SLOTS - 1;
	__sync_fetch_and_add(&info->slots[s], 1);
}

static __always_inline void hardirq(bool entry, struct irqaction *action)
{
	if (!on_cpu() || !in_cgroup())
		return;
	struct irq_key key = {};
	// The name is only needed where the key is: at the exit, or counting.
	if (!entry || do_count)
		hardirq_name(&key, action);
	if (entry)
		on_entry(SLOT_HARDIRQ, &key);
	else
		on_exit(SLOT_HARDIRQ, &key);
}

static __always_inline void softirq(bool entry, unsigned int vec)
{
	if (!on_cpu() || !in_cgroup())
		return;
	struct irq_key key = {.vec = vec};
	if (entry)
		on_entry(SLOT_SOFTIRQ, &key);
	else
		on_exit(SLOT_SOFTIRQ, &key);
}

BTF_OR_RAW(scry_hi_entry, "irq_handler_entry", hardirq(true, action),
	   int irq, struct irqaction *action)
BTF_OR_RAW(scry_hi_exit, "irq_handler_exit", hardirq(false, action),
	   int irq, struct irqaction *action, int ret)
BTF_OR_RAW(scry_si_entry, "softirq_entry", softirq(true, vec), unsigned int vec)
BTF_OR_RAW(scry_si_exit, "softirq_exit", softirq(false, vec), unsigned int vec)
