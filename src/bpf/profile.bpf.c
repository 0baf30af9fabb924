// SPDX-License-Identifier: (MIT OR Apache-2.0)
// scry profile's in-kernel pairs: system calls (raw_syscalls sys_enter ->
// sys_exit per task), hard and soft interrupts, page-fault counts, summed
// per (task, kind, number) in maps that user space reads once at the end.
// Nothing is streamed. The hot path (two events per system call, millions a
// second under load) touches only arrays the verifier inlines: starts
// direct-mapped by tid, statistics direct-mapped by a hash of their key
// with a hash map behind for the keys that collide; no locks.
//
// Which tasks count: every task when `all_tasks`, else the processes in
// `targets` (by tgid) and what they fork. A value of TARGET_AT_EXEC means
// "from its next exec on" (the workload, forked and waiting before exec, as
// perf's enable_on_exec): the exec turns it into TARGET_WATCHED and drops
// the open execve, whose exit is then not counted (as the perf path).
//
// Matching follows analysis::pairs: a sys_exit counts only when the same
// task's last sys_enter had the same number (an exit without a seen enter,
// e.g. the first return of a new thread, is not counted, only tallied in
// `counters`); an irq exit matches the entry of the same irq on the same
// CPU; softirq raise -> entry -> exit per CPU and vector.

#include <stdbool.h>
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "maps.bpf.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

#include "targets.bpf.h"

// Kinds of statistic (key.kind); the numbers are kept in src/sys/bpf_profile.rs.
#define KIND_SYSCALL 0
#define KIND_PAGE_FAULT_USER 1
#define KIND_PAGE_FAULT_KERNEL 2
#define KIND_IRQ 3
#define KIND_SOFTIRQ 4
#define KIND_SOFTIRQ_RAISE 5

// Indices of `counters` (per CPU). Calls still open at the end are not
// counted here but read off `starts` (slots with a time): a counter bumped
// on every enter and exit cost a per-CPU map update twice per system call.
#define COUNTER_EXIT_WITHOUT_ENTER 0
#define COUNTER_STATS_FULL 1
#define COUNTER_STARTS_FULL 2
#define COUNTERS 3

#define NR_SOFTIRQS 10

struct key {
	__u32 tid;
	__u32 kind;
	__u64 nr;
};

struct stat {
	__u64 count;
	__u64 total;
	__u64 max;
	__u64 max_ts;
	__u64 min;
	__u64 min_ts;
};

struct start {
	__u64 ts;
	__u32 tid;
	__u32 nr;
};

struct stat_slot {
	__u64 key;	// tid << 32 | kind << 24 | nr; 0: free
	struct stat stat;
};

#define START_SLOTS 65536
#define STAT_SLOTS 65536
#define STAT_SLOT_BITS 16

struct irq_start {
	__u64 ts;
	__u32 irq;
	__u32 tid;
};

struct softirq_state {
	__u64 raised[NR_SOFTIRQS];
	__u64 entered[NR_SOFTIRQS];
	__u32 tid[NR_SOFTIRQS];
};

// Set before load.
const volatile bool all_tasks = false;

// Direct-mapped by tid (tid % START_SLOTS): an array lookup the verifier
// inlines, no hash and no lock. Two tasks of one slot inside a call at the
// same moment: the later enter wins, the earlier call is not counted
// (COUNTER_STARTS_FULL). `ts` is 0 when the slot holds no open call.
BPF_ARRAY(starts, struct start, START_SLOTS);

// Statistics, direct-mapped by a hash of their key: a slot belongs to the
// first key that claims it (compare-and-swap), for good. A key whose slot
// another key holds goes to the `stats` hash map instead.
BPF_ARRAY(stat_slots, struct stat_slot, STAT_SLOTS);

BPF_HASH(stats, struct key, struct stat, 65536);

BPF_PERCPU_ARRAY(counters, __u64, COUNTERS);

BPF_PERCPU_ARRAY(irq_at, struct irq_start, 1);

BPF_PERCPU_ARRAY(softirq_at, struct softirq_state, 1);

// Only the fields read, relocated against the running kernel's BTF (CO-RE).
struct pt_regs___scry {
	long orig_ax;
} __attribute__((preserve_access_index));

static __always_inline void bump(__u32 index)
{
	__u64 *c = bpf_map_lookup_elem(&counters, &index);
	if (c)
		*c += 1;
}

static __always_inline bool watched_tgid(__u32 tgid)
{
	if (all_tasks)
		return true;
	__u8 *t = bpf_map_lookup_elem(&targets, &tgid);
	return t && *t == TARGET_WATCHED;
}

static __always_inline bool watched_task(__u64 pid_tgid)
{
	return (__u32)pid_tgid != 0 && watched_tgid(pid_tgid >> 32);
}

static __always_inline struct stat *stat_of(__u32 tid, __u32 kind, __u64 nr)
{
	__u64 packed = (__u64)tid << 32 | (__u64)kind << 24 | (nr & 0xffffff);
	__u32 index = (packed * 0x9E3779B97F4A7C15ull) >> (64 - STAT_SLOT_BITS);
	struct stat_slot *slot = bpf_map_lookup_elem(&stat_slots, &index);
	if (slot && nr <= 0xffffff) {
		if (slot->key == packed)
			return &slot->stat;
		if (slot->key == 0) {
			__u64 old = __sync_val_compare_and_swap(&slot->key, 0, packed);
			if (old == 0 || old == packed)
				return &slot->stat;
		}
	}
	struct key k = { .tid = tid, .kind = kind, .nr = nr };
	struct stat *s = bpf_map_lookup_elem(&stats, &k);
	if (s)
		return s;
	struct stat zero = {};
	// Fails when the key exists (an interrupt raced us) or the map is full.
	bpf_map_update_elem(&stats, &k, &zero, BPF_NOEXIST);
	s = bpf_map_lookup_elem(&stats, &k);
	if (!s)
		bump(COUNTER_STATS_FULL);
	return s;
}

// One pair of `tid` that ended at `now` after `duration` ns. A task runs
// on one CPU at a time, so its statistics are never updated concurrently.
static __always_inline void add_pair(__u32 tid, __u32 kind, __u64 nr, __u64 duration, __u64 now)
{
	struct stat *s = stat_of(tid, kind, nr);
	if (!s)
		return;
	if (s->count == 0 || duration > s->max) {
		s->max = duration;
		s->max_ts = now;
	}
	if (s->count == 0 || duration < s->min) {
		s->min = duration;
		s->min_ts = now;
	}
	s->count += 1;
	s->total += duration;
}

// The system call hooks run twice per call: they cost what the tracepoints
// (the syscall slow path, a BPF dispatch each) and the two clock reads cost,
// plus as little as possible. Measured on a 2-CPU 6.18 VM: ~170 ns
// tracepoints, ~100 ns clocks, ~40 ns of this code.
SEC("tp_btf/sys_enter")
int BPF_PROG(scry_sys_enter, struct pt_regs *regs, long id)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	if (!watched_task(pid_tgid))
		return 0;
	__u32 tid = pid_tgid;
	__u32 index = tid & (START_SLOTS - 1);
	struct start *st = bpf_map_lookup_elem(&starts, &index);
	if (!st)
		return 0;
	if (st->ts != 0 && st->tid != tid)
		bump(COUNTER_STARTS_FULL);
	st->tid = tid;
	st->nr = id;
	st->ts = bpf_ktime_get_ns();
	return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(scry_sys_exit, struct pt_regs *regs, long ret)
{
	__u64 now = bpf_ktime_get_ns();
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tid = pid_tgid;
	__u32 index = tid & (START_SLOTS - 1);
	struct start *st = bpf_map_lookup_elem(&starts, &index);
	if (!st || st->ts == 0 || st->tid != tid) {
		if (watched_task(pid_tgid))
			bump(COUNTER_EXIT_WITHOUT_ENTER);
		return 0;
	}
	__u64 ts = st->ts;
	__u32 nr = st->nr;
	st->ts = 0;
	if ((__u32)((struct pt_regs___scry *)regs)->orig_ax != nr || now < ts)
		return 0;
	add_pair(tid, KIND_SYSCALL, nr, now - ts, now);
	return 0;
}

// Closes the call of the current task, if it has one open.
static __always_inline void close_start(void)
{
	__u32 tid = bpf_get_current_pid_tgid();
	__u32 index = tid & (START_SLOTS - 1);
	struct start *st = bpf_map_lookup_elem(&starts, &index);
	if (st && st->ts && st->tid == tid)
		st->ts = 0;
}

// Forks of watched processes are watched (a new thread shares its tgid).
SEC("raw_tp/sched_process_fork")
int BPF_PROG(scry_fork, struct task_struct *parent, struct task_struct *child)
{
	if (!all_tasks)
		targets_fork(child);
	return 0;
}

// The workload counts from its exec on; the execve itself is not counted.
SEC("tp_btf/sched_process_exec")
int BPF_PROG(scry_exec)
{
	if (targets_exec())
		close_start();
	return 0;
}

// A task that ends inside a system call (exit, exit_group) closes it.
SEC("tp_btf/sched_process_exit")
int BPF_PROG(scry_task_exit)
{
	close_start();
	return 0;
}

SEC("raw_tp/page_fault_user")
int BPF_PROG(scry_page_fault_user)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	if (watched_task(pid_tgid)) {
		struct stat *s = stat_of(pid_tgid, KIND_PAGE_FAULT_USER, 0);
		if (s)
			s->count += 1;
	}
	return 0;
}

SEC("raw_tp/page_fault_kernel")
int BPF_PROG(scry_page_fault_kernel)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	if (watched_task(pid_tgid)) {
		struct stat *s = stat_of(pid_tgid, KIND_PAGE_FAULT_KERNEL, 0);
		if (s)
			s->count += 1;
	}
	return 0;
}

SEC("raw_tp/irq_handler_entry")
int BPF_PROG(scry_irq_entry, int irq)
{
	__u32 zero = 0;
	struct irq_start *s = bpf_map_lookup_elem(&irq_at, &zero);
	if (!s)
		return 0;
	s->ts = bpf_ktime_get_ns();
	s->irq = irq;
	s->tid = bpf_get_current_pid_tgid();
	return 0;
}

SEC("raw_tp/irq_handler_exit")
int BPF_PROG(scry_irq_exit, int irq)
{
	__u64 now = bpf_ktime_get_ns();
	__u32 zero = 0;
	struct irq_start *s = bpf_map_lookup_elem(&irq_at, &zero);
	if (!s || s->ts == 0)
		return 0;
	__u64 ts = s->ts;
	s->ts = 0;
	if (s->irq != (__u32)irq)
		return 0;
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	if (!watched_task(pid_tgid) || (__u32)pid_tgid != s->tid)
		return 0;
	add_pair(s->tid, KIND_IRQ, (__u32)irq, now - ts, now);
	return 0;
}

SEC("raw_tp/softirq_raise")
int BPF_PROG(scry_softirq_raise, unsigned int vec)
{
	__u32 zero = 0;
	struct softirq_state *s = bpf_map_lookup_elem(&softirq_at, &zero);
	if (!s || vec >= NR_SOFTIRQS)
		return 0;
	s->raised[vec] = bpf_ktime_get_ns();
	return 0;
}

SEC("raw_tp/softirq_entry")
int BPF_PROG(scry_softirq_entry, unsigned int vec)
{
	__u64 now = bpf_ktime_get_ns();
	__u32 zero = 0;
	struct softirq_state *s = bpf_map_lookup_elem(&softirq_at, &zero);
	if (!s || vec >= NR_SOFTIRQS)
		return 0;
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u64 raised = s->raised[vec];
	s->raised[vec] = 0;
	if (raised && watched_task(pid_tgid))
		add_pair(pid_tgid, KIND_SOFTIRQ_RAISE, vec, now - raised, now);
	s->entered[vec] = now;
	s->tid[vec] = pid_tgid;
	return 0;
}

SEC("raw_tp/softirq_exit")
int BPF_PROG(scry_softirq_exit, unsigned int vec)
{
	__u64 now = bpf_ktime_get_ns();
	__u32 zero = 0;
	struct softirq_state *s = bpf_map_lookup_elem(&softirq_at, &zero);
	if (!s || vec >= NR_SOFTIRQS)
		return 0;
	__u64 entered = s->entered[vec];
	s->entered[vec] = 0;
	if (!entered)
		return 0;
	__u32 tid = s->tid[vec];
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	if ((__u32)pid_tgid == tid && watched_task(pid_tgid))
		add_pair(tid, KIND_SOFTIRQ, vec, now - entered, now);
	return 0;
}
