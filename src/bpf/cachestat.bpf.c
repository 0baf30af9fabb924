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

#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "maps.bpf.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

// The order of sys::bpf_cachestat's counters.
enum cache_stat { S_ACCESS, S_MISS, S_DIRTY, S_MAX };

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
	return add(S_MISS, 1ULL << (ctx->order & 31));
}

SEC("tracepoint/writeback/writeback_dirty_folio")
int scry_cache_dirty(void *ctx)
{
	return add(S_DIRTY, 1);
}

SEC("tracepoint/filemap/mm_filemap_get_pages")
int scry_cache_get_pages(struct range_record *ctx)
{
	return add(S_ACCESS, pages(ctx));
}

SEC("tracepoint/filemap/mm_filemap_map_pages")
int scry_cache_map_pages(struct range_record *ctx)
{
	return add(S_ACCESS, pages(ctx));
}

SEC("tracepoint/filemap/mm_filemap_fault")
int scry_cache_fault(void *ctx)
{
	return add(S_ACCESS, 1);
}
