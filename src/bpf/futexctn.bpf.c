// SPDX-License-Identifier: (MIT OR Apache-2.0)
// scry futexctn (libbpf-tools' futexctn): user-space lock contention,
// seen as the time threads wait in futex(FUTEX_WAIT), summed in the
// kernel per (thread, futex address, user stack): count, total, max, min
// and a log2 histogram of the waits in µs.
//
// The rules are libbpf-tools': a futex call whose command is FUTEX_WAIT
// (private or not) starts a wait at sys_enter, which sys_exit ends; a
// call that failed (EAGAIN: the word changed before it slept, a timeout,
// a signal) is not counted. Filters: process, thread, futex address.
//
// The decision: the user stack is taken at sys_enter by frame pointers,
// which skip the caller of a frameless libc function (the function that
// took the lock, the one that matters); so the first time a stack id is
// seen, the user registers (ip, sp, bp, from the syscall's pt_regs) and
// COPY_BYTES of the stack above sp are kept with it, and user space
// repairs the chain with the binaries' unwind tables (symbol::stack_join).
//
// Variants: tp_btf, then raw_tp on raw_syscalls (x86-64 only: the futex
// number, the registers).

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
#include "stackmap.bpf.h"

#define MAX_KEYS 10240
#define MAX_SLOTS 32
#define COPY_BYTES 1024
#define NR_FUTEX 202
#define FUTEX_WAIT 0
#define FUTEX_CMD_MASK ~(128 | 256)

// 0: every process, every thread, every address.
const volatile __u32 filter_tgid = 0;
const volatile __u32 filter_tid = 0;
const volatile __u64 filter_lock = 0;

struct pt_regs___scry_fx {
	unsigned long di;
	unsigned long si;
	unsigned long bp;
	unsigned long sp;
	unsigned long ip;
} __attribute__((preserve_access_index));

struct wait_t {
	__u64 ts;
	__u64 uaddr;
	__s32 stack_id;
	__u32 pad;
};

struct key_t {
	__u32 tid;
	__u32 tgid;
	__u64 uaddr;
	__s32 stack_id;
	__u32 pad;
};

struct hist_t {
	__u64 contended;
	__u64 total_ns;
	__u64 max_ns;
	__u64 min_ns;
	__u32 slots[MAX_SLOTS];
	char comm[16];
};

// The user registers and the top of the stack when a stack id was first
// seen.
struct copy_t {
	__u64 ip;
	__u64 sp;
	__u64 bp;
	__u64 size;
	__u8 bytes[COPY_BYTES];
};

BPF_HASH(starts, __u64, struct wait_t, MAX_KEYS);

BPF_HASH(hists, struct key_t, struct hist_t, MAX_KEYS);

BPF_HASH(copies, __u32, struct copy_t, 1024);

BPF_PERCPU_ARRAY(scratch, struct copy_t, 1);

// Keeps the registers and stack top of stack `id`, once.
static __always_inline void keep_copy(struct pt_regs___scry_fx *regs, __s32 id)
{
	if (id < 0)
		return;
	__u32 key = id, zero = 0;
	if (bpf_map_lookup_elem(&copies, &key))
		return;
	struct copy_t *c = bpf_map_lookup_elem(&scratch, &zero);
	if (!c)
		return;
	c->ip = BPF_CORE_READ(regs, ip);
	c->sp = BPF_CORE_READ(regs, sp);
	c->bp = BPF_CORE_READ(regs, bp);
	c->size = COPY_BYTES;
	// Near the top of the stack less may be mapped.
	if (bpf_probe_read_user(c->bytes, COPY_BYTES, (void *)c->sp) != 0) {
		c->size = COPY_BYTES / 4;
		if (bpf_probe_read_user(c->bytes, COPY_BYTES / 4, (void *)c->sp) != 0)
			return;
	}
	bpf_map_update_elem(&copies, &key, c, BPF_NOEXIST);
}

static __always_inline void on_enter(void *ctx, void *raw_regs, long id)
{
	if (id != NR_FUTEX)
		return;
	struct pt_regs___scry_fx *regs = raw_regs;
	if ((BPF_CORE_READ(regs, si) & FUTEX_CMD_MASK) != FUTEX_WAIT)
		return;
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u64 uaddr = BPF_CORE_READ(regs, di);
	if (filter_tgid != 0 && filter_tgid != pid_tgid >> 32)
		return;
	if (filter_tid != 0 && filter_tid != (__u32)pid_tgid)
		return;
	if (filter_lock != 0 && filter_lock != uaddr)
		return;
	struct wait_t w = {.ts = bpf_ktime_get_ns(), .uaddr = uaddr};
	w.stack_id = bpf_get_stackid(ctx, &stacks, BPF_F_USER_STACK);
	keep_copy(regs, w.stack_id);
	bpf_map_update_elem(&starts, &pid_tgid, &w, BPF_ANY);
}

static __always_inline void on_exit(long ret)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct wait_t *w = bpf_map_lookup_elem(&starts, &pid_tgid);
	if (!w)
		return;
	__u64 now = bpf_ktime_get_ns();
	struct key_t key = {
		.tid = (__u32)pid_tgid,
		.tgid = pid_tgid >> 32,
		.uaddr = w->uaddr,
		.stack_id = w->stack_id,
	};
	__u64 delta = now > w->ts ? now - w->ts : 0;
	bpf_map_delete_elem(&starts, &pid_tgid);
	if (ret < 0)
		return;
	struct hist_t *h = bpf_map_lookup_elem(&hists, &key);
	if (!h) {
		struct hist_t init = {.min_ns = (__u64)-1};
		bpf_get_current_comm(&init.comm, sizeof(init.comm));
		bpf_map_update_elem(&hists, &key, &init, BPF_NOEXIST);
		h = bpf_map_lookup_elem(&hists, &key);
		if (!h)
			return;
	}
	// The key holds the thread: only it updates this entry.
	h->contended++;
	h->total_ns += delta;
	if (delta > h->max_ns)
		h->max_ns = delta;
	if (delta < h->min_ns)
		h->min_ns = delta;
	__u32 slot = log2_slot(delta / 1000);
	if (slot >= MAX_SLOTS)
		slot = MAX_SLOTS - 1;
	h->slots[slot]++;
}

BTF_OR_RAW(scry_fx_enter, "sys_enter", on_enter(ctx, regs, id), struct pt_regs *regs, long id)
BTF_OR_RAW(scry_fx_exit, "sys_exit", on_exit(ret), struct pt_regs *regs, long ret)
