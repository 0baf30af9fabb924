// SPDX-License-Identifier: (MIT OR Apache-2.0)
// scry cachestat (bcc's cachestat): page-cache accesses, misses and
// dirtied pages, from the filemap and writeback tracepoints (bcc's
// kprobes and fentry on mark_page_accessed, add_to_page_cache_lru,
// folio_account_dirtied and mark_buffer_dirty do not load on every
// kernel; these do). User space reads the counters at each interval and
// prints the difference.
//
// What is counted: MISS, the pages of each folio added to the page cache
// (filemap:mm_filemap_add_to_page_cache, 1 << order pages); DIRTY, each
// folio dirtied (writeback:writeback_dirty_folio); ACCESS, the pages each
// read asks of the cache (filemap:mm_filemap_get_pages, index to
// last_index: a read the cache answers in pieces is counted again for
// the pages it asks again) and the pages of each mmap fault and fault-
// around (mm_filemap_fault, mm_filemap_map_pages). Accesses that go
// through neither (a write into a cached page, splice) are not seen:
// HITS is ACCESS - MISS, as bcc computes it, never below 0.
//
// bcc's own hooks come first where the kernel allows them (the engine's
// kernel-function groups, src/sys/bpf_engine.rs: fentry, else kprobe;
// the folio function first, else the page one it replaced): each call
// counted once in its own counter, and user space computes bcc's figures
// per interval: accesses = folio_mark_accessed - mark_buffer_dirty,
// misses = filemap_add_folio - folio_account_dirtied, dirties =
// mark_buffer_dirty (sys::bpf_cachestat). The tracepoint programs are
// loaded only when one of these cannot be hooked (folio_account_dirtied
// may be inlined: its group is optional).

#include <linux/types.h>
#include <linux/bpf.h>
#include <asm/ptrace.h>
#include <bpf/bpf_helpers.h>
#include "tp_pass.bpf.h"
#include <bpf/bpf_tracing.h>

#include "maps.bpf.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

// The order of sys::bpf_cachestat's counters: the tracepoints', then one
// per kernel function.
enum cache_stat { S_ACCESS, S_MISS, S_DIRTY, K_ACCESSED, K_ADDED, K_ACCOUNTED, K_BUFFER_DIRTY,
		  S_MAX };

BPF_ARRAY(counts, __u64, S_MAX);

struct add_record {
	__u64 common;
	unsigned long pfn;
	unsigned long i_ino;
	unsigned long index;
	__u32 s_dev;
	unsigned char order;
};

// mm_filemap_get_pages and mm_filemap_map_pages.
struct range_record {
	__u64 common;
	unsigned long i_ino;
	__u32 s_dev;
	unsigned long index;
	unsigned long last_index;
};

static __always_inline int add(__u32 stat, __u64 n)
{
	__u64 *c = bpf_map_lookup_elem(&counts, &stat);
	if (c)
		__sync_fetch_and_add(c, n);
	return 0;
}

static __always_inline __u64 pages(struct range_record *r)
{
	return r->last_index >= r->index ? r->last_index - r->index + 1 : 0;
}

SEC("tracepoint/filemap/mm_filemap_add_to_page_cache")
int scry_cache_add(struct add_record *ctx)
{
	add(S_MISS, 1ULL << (ctx->order & 31));
	return TP_PASS;
}

SEC("tracepoint/writeback/writeback_dirty_folio")
int scry_cache_dirty(void *ctx)
{
	add(S_DIRTY, 1);
	return TP_PASS;
}

SEC("tracepoint/filemap/mm_filemap_get_pages")
int scry_cache_get_pages(struct range_record *ctx)
{
	add(S_ACCESS, pages(ctx));
	return TP_PASS;
}

SEC("tracepoint/filemap/mm_filemap_map_pages")
int scry_cache_map_pages(struct range_record *ctx)
{
	add(S_ACCESS, pages(ctx));
	return TP_PASS;
}

SEC("tracepoint/filemap/mm_filemap_fault")
int scry_cache_fault(void *ctx)
{
	add(S_ACCESS, 1);
	return TP_PASS;
}

// A kernel function counted in STAT: fentry on FUNC, else on OLD (the
// page function the folio one replaced), else kprobes on the same.
#define ON_FUNC(GROUP, FUNC, OLD, STAT)                             \
	SEC("fentry/" #FUNC)                                        \
	int BPF_PROG(GROUP##__fentry)                               \
	{                                                           \
		return add(STAT, 1);                                \
	}                                                           \
	SEC("fentry/" #OLD)                                         \
	int BPF_PROG(GROUP##__fentry2)                              \
	{                                                           \
		return add(STAT, 1);                                \
	}                                                           \
	SEC("kprobe/" #FUNC)                                        \
	int BPF_KPROBE(GROUP##__kprobe)                             \
	{                                                           \
		return add(STAT, 1);                                \
	}                                                           \
	SEC("kprobe/" #OLD)                                         \
	int BPF_KPROBE(GROUP##__kprobe2)                            \
	{                                                           \
		return add(STAT, 1);                                \
	}

ON_FUNC(scry_k_cache_accessed, folio_mark_accessed, mark_page_accessed, K_ACCESSED)
ON_FUNC(scry_k_cache_added, filemap_add_folio, add_to_page_cache_lru, K_ADDED)
ON_FUNC(scry_k_cache_accounted, folio_account_dirtied, account_page_dirtied, K_ACCOUNTED)

// mark_buffer_dirty has no other name.
SEC("fentry/mark_buffer_dirty")
int BPF_PROG(scry_k_cache_buffer_dirty__fentry)
{
	return add(K_BUFFER_DIRTY, 1);
}

SEC("kprobe/mark_buffer_dirty")
int BPF_KPROBE(scry_k_cache_buffer_dirty__kprobe)
{
	return add(K_BUFFER_DIRTY, 1);
}
