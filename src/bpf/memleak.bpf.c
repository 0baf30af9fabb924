// SPDX-License-Identifier: (MIT OR Apache-2.0)
// scry memleak (bcc's memleak): every allocation still outstanding, with
// its size, its time and the stack that made it, kept in the kernel
// (`allocs`, by address) until it is freed; user space reads the map at
// each interval and sums it per stack.
//
// User mode: uprobes on the allocator's entries (malloc, calloc, realloc,
// posix_memalign, aligned_alloc, valloc, memalign, pvalloc, mmap) keep the
// size by thread id; their return probes record the address returned. The
// stack is taken at the return (bcc does the same): there the registers
// are the caller's, its frame pointer intact, so the first frame is the
// function that called the allocator. At a function's entry the caller's
// frame is not yet on the frame-pointer chain and would be skipped. free
// and munmap delete. User space attaches each probe to the one process
// (the uprobe's pid filter: other processes sharing the libc never trap).
// A call made inside another (glibc's malloc calling mmap for a large
// block) overwrites the outer call's size: the inner one is recorded, the
// outer skipped, as bcc does.
//
// Kernel mode (no process given): kmem:kmalloc, kmem:kmem_cache_alloc and
// their frees, kernel stacks (bcc's kernel mode; page allocations are not
// followed); with --percpu, percpu:percpu_alloc_percpu and its free
// instead (bcc's size: what the caller asked, once, not times the CPUs).
// An allocation at an address still outstanding replaces it (the map's
// BPF_ANY): bcc's --wa-missing-free, always.
//
// -s N (bcc's sample rate): every N-th allocation entered is followed,
// counted by one global counter (bcc takes those whose entry nanosecond
// is a multiple of N, about one in N); -t sends each call followed
// (allocation entered, returned, freed) to `trace_events`, bcc's three
// trace messages.

#include <stdbool.h>
#include <linux/types.h>
#include <linux/bpf.h>
#include <asm/ptrace.h>
#include <bpf/bpf_helpers.h>
#include "tp_pass.bpf.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>

#include "maps.bpf.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

// bcc's -z / -Z (0: no bound).
const volatile __u64 min_size = 0;
const volatile __u64 max_size = 0;
// bcc's -s (0 or 1: every allocation) and -t.
const volatile __u64 sample_rate = 0;
const volatile bool trace_all = false;

struct alloc_info {
	__u64 size;
	__u64 timestamp_ns;
	__s32 stack_id;
	__u32 pad;
};

BPF_HASH(sizes, __u32, __u64, 10240);

// Outstanding allocations by address (bcc's 1,000,000).
BPF_HASH(allocs, __u64, struct alloc_info, 1000000);

// posix_memalign's out-pointer by thread id.
BPF_HASH(memptrs, __u32, __u64, 10240);

// Allocations that found `allocs` full (bcc is silent about them).
#include "drops.bpf.h"

#include "stackmap.bpf.h"
#include "hooks.bpf.h"

// The allocations entered so far (for -s).
BPF_ARRAY(entered, __u64, 1);

// -t's calls, and those its ring had no room for.
enum trace_kind { ALLOC_ENTERED = 1, ALLOC_EXITED = 2, FREE_ENTERED = 3 };

struct trace_event {
	__u64 timestamp_ns;
	__u64 size;
	__u64 address;
	__u32 pid;
	__u32 tid;
	__u32 kind;
	__u32 pad;
	char comm[16];
};

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 512 * 1024);
} trace_events SEC(".maps");

BPF_PERCPU_ARRAY(trace_drops, __u64, 1);

static __always_inline void trace_call(__u32 kind, __u64 size, __u64 address)
{
	if (!trace_all)
		return;
	struct trace_event *e = bpf_ringbuf_reserve(&trace_events, sizeof(*e), 0);
	if (!e) {
		__u32 zero = 0;
		__u64 *d = bpf_map_lookup_elem(&trace_drops, &zero);
		if (d)
			*d += 1;
		return;
	}
	__u64 id = bpf_get_current_pid_tgid();
	e->timestamp_ns = bpf_ktime_get_ns();
	e->size = size;
	e->address = address;
	e->pid = id >> 32;
	e->tid = (__u32)id;
	e->kind = kind;
	e->pad = 0;
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	bpf_ringbuf_submit(e, 0);
}

// Whether this allocation is the sample's (-s): the N-th, 2N-th, ...
static __always_inline bool sampled(void)
{
	if (sample_rate <= 1)
		return true;
	__u32 zero = 0;
	__u64 *n = bpf_map_lookup_elem(&entered, &zero);
	if (!n)
		return true;
	return __sync_fetch_and_add(n, 1) % sample_rate == 0;
}

// Whether an allocation of `size` is followed: -z, -Z, then -s.
static __always_inline bool wanted(__u64 size)
{
	if (min_size && size < min_size)
		return false;
	if (max_size && size > max_size)
		return false;
	return sampled();
}

static __always_inline int enter(__u64 size)
{
	if (!wanted(size))
		return 0;
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	bpf_map_update_elem(&sizes, &tid, &size, BPF_ANY);
	trace_call(ALLOC_ENTERED, size, 0);
	return 0;
}

static __always_inline int store(void *ctx, __u64 address, __u64 size, __u64 stack_flags)
{
	if (!address)
		return 0;
	struct alloc_info info = {.size = size};
	info.timestamp_ns = bpf_ktime_get_ns();
	info.stack_id = bpf_get_stackid(ctx, &stacks, stack_flags);
	if (bpf_map_update_elem(&allocs, &address, &info, BPF_ANY) != 0)
		count_drop();
	return 0;
}

// A return probe: the size its entry kept, then the address returned.
static __always_inline int record(void *ctx, __u64 address, __u64 stack_flags)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u64 *kept = bpf_map_lookup_elem(&sizes, &tid);
	if (!kept)
		return 0;
	__u64 size = *kept;
	bpf_map_delete_elem(&sizes, &tid);
	trace_call(ALLOC_EXITED, size, address);
	return store(ctx, address, size, stack_flags);
}

static __always_inline int release(__u64 address)
{
	if (trace_all) {
		struct alloc_info *info = bpf_map_lookup_elem(&allocs, &address);
		if (!info)
			return 0;
		trace_call(FREE_ENTERED, info->size, address);
	}
	bpf_map_delete_elem(&allocs, &address);
	return 0;
}

static __always_inline int user_exit(struct pt_regs *ctx)
{
	return record(ctx, PT_REGS_RC(ctx), BPF_F_USER_STACK);
}

SEC("uprobe")
int BPF_UPROBE(scry_ml_malloc, __u64 size) { return enter(size); }
SEC("uretprobe")
int scry_ml_malloc_ret(struct pt_regs *ctx) { return user_exit(ctx); }

SEC("uprobe")
int BPF_UPROBE(scry_ml_calloc, __u64 nmemb, __u64 size) { return enter(nmemb * size); }
SEC("uretprobe")
int scry_ml_calloc_ret(struct pt_regs *ctx) { return user_exit(ctx); }

SEC("uprobe")
int BPF_UPROBE(scry_ml_realloc, __u64 ptr, __u64 size)
{
	release(ptr);
	return enter(size);
}
SEC("uretprobe")
int scry_ml_realloc_ret(struct pt_regs *ctx) { return user_exit(ctx); }

SEC("uprobe")
int BPF_UPROBE(scry_ml_posix_memalign, __u64 memptr, __u64 align, __u64 size)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	bpf_map_update_elem(&memptrs, &tid, &memptr, BPF_ANY);
	return enter(size);
}
SEC("uretprobe")
int scry_ml_posix_memalign_ret(struct pt_regs *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u64 *memptr = bpf_map_lookup_elem(&memptrs, &tid);
	if (!memptr)
		return 0;
	__u64 out = *memptr, address = 0;
	bpf_map_delete_elem(&memptrs, &tid);
	// Non-zero: an error number, no allocation.
	if (PT_REGS_RC(ctx) == 0 && bpf_probe_read_user(&address, sizeof(address), (void *)out) != 0)
		address = 0;
	return record(ctx, address, BPF_F_USER_STACK);
}

SEC("uprobe")
int BPF_UPROBE(scry_ml_aligned_alloc, __u64 align, __u64 size) { return enter(size); }
SEC("uretprobe")
int scry_ml_aligned_alloc_ret(struct pt_regs *ctx) { return user_exit(ctx); }

SEC("uprobe")
int BPF_UPROBE(scry_ml_valloc, __u64 size) { return enter(size); }
SEC("uretprobe")
int scry_ml_valloc_ret(struct pt_regs *ctx) { return user_exit(ctx); }

SEC("uprobe")
int BPF_UPROBE(scry_ml_memalign, __u64 align, __u64 size) { return enter(size); }
SEC("uretprobe")
int scry_ml_memalign_ret(struct pt_regs *ctx) { return user_exit(ctx); }

SEC("uprobe")
int BPF_UPROBE(scry_ml_pvalloc, __u64 size) { return enter(size); }
SEC("uretprobe")
int scry_ml_pvalloc_ret(struct pt_regs *ctx) { return user_exit(ctx); }

SEC("uprobe")
int BPF_UPROBE(scry_ml_mmap, __u64 addr, __u64 len) { return enter(len); }
SEC("uretprobe")
int scry_ml_mmap_ret(struct pt_regs *ctx)
{
	// MAP_FAILED is (void *)-1.
	if (PT_REGS_RC(ctx) == (__u64)-1) {
		__u32 tid = (__u32)bpf_get_current_pid_tgid();
		bpf_map_delete_elem(&sizes, &tid);
		return 0;
	}
	return user_exit(ctx);
}

SEC("uprobe")
int BPF_UPROBE(scry_ml_free, __u64 ptr) { return release(ptr); }

SEC("uprobe")
int BPF_UPROBE(scry_ml_munmap, __u64 addr) { return release(addr); }

// kmem:kmalloc (format file: ptr at 16, bytes_alloc at 32) and kmem:kfree
// (ptr at 16): classic tracepoints, their offsets the same since 4.x.
struct kmalloc_record {
	__u64 common;
	__u64 call_site;
	__u64 ptr;
	__u64 bytes_req;
	__u64 bytes_alloc;
};

struct kfree_record {
	__u64 common;
	__u64 call_site;
	__u64 ptr;
};

// A kernel allocation, entered and returned at once (bcc's tracepoints).
static __always_inline int kernel_alloc(void *ctx, __u64 address, __u64 size)
{
	if (!wanted(size))
		return 0;
	trace_call(ALLOC_ENTERED, size, 0);
	trace_call(ALLOC_EXITED, size, address);
	return store(ctx, address, size, 0);
}

SEC("tracepoint/kmem/kmalloc")
int scry_ml_kmalloc(struct kmalloc_record *ctx)
{
	kernel_alloc(ctx, ctx->ptr, ctx->bytes_alloc);
	return TP_PASS;
}

SEC("tracepoint/kmem/kfree")
int scry_ml_kfree(struct kfree_record *ctx) { release(ctx->ptr);
 return TP_PASS; }

// kmem_cache_alloc's record gained a name before bytes_alloc (6.x): its
// raw arguments are read instead, the object size from the cache (CO-RE).
struct kmem_cache {
	unsigned int size;
} __attribute__((preserve_access_index));

BTF_OR_RAW(scry_ml_cache_alloc, "kmem_cache_alloc",
	   kernel_alloc(ctx, (__u64)ptr, BPF_CORE_READ(s, size)),
	   unsigned long call_site, const void *ptr, struct kmem_cache *s)

BTF_OR_RAW(scry_ml_cache_free, "kmem_cache_free", release((__u64)ptr),
	   unsigned long call_site, const void *ptr)

// --percpu: the per-CPU allocator's tracepoints, their fields found by
// name (CO-RE: 6.0 put call_site before size and ptr).
struct trace_event_raw_percpu_alloc_percpu {
	__u64 size;
	void *ptr;
} __attribute__((preserve_access_index));

struct trace_event_raw_percpu_free_percpu {
	void *ptr;
} __attribute__((preserve_access_index));

SEC("tracepoint/percpu/percpu_alloc_percpu")
int scry_ml_percpu_alloc(struct trace_event_raw_percpu_alloc_percpu *ctx)
{
	kernel_alloc(ctx, (__u64)ctx->ptr, ctx->size);
	return TP_PASS;
}

SEC("tracepoint/percpu/percpu_free_percpu")
int scry_ml_percpu_free(struct trace_event_raw_percpu_free_percpu *ctx)
{
	release((__u64)ctx->ptr);
	return TP_PASS;
}
