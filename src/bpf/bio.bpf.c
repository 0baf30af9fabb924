// SPDX-License-Identifier: (MIT OR Apache-2.0)
// scry's block I/O tools (bcc's biolatency, biosnoop, biotop, bitesize) in one object, on
// the block tracepoints: block_rq_insert (queued, -Q), block_rq_issue (to
// the driver), block_rq_complete, and block_io_start (the process that
// started the I/O, for biosnoop's COMM and PID: it runs in the submitter's
// context, unlike the completion). tp_btf, then raw_tp; all take the
// request as their first argument (since 5.11).
//
// A request's start is kept by its address: issue, or insert with -Q (as
// libbpf-tools: with -Q, a request that went through an I/O scheduler is
// timed from its insert, one that did not from its issue). At complete:
//   LATENCY a log2 slot (µs or ms) in the histogram of its key: the disk
//           (-D, MKDEV as the kernel makes it), its flags (-F, the
//           canonical flags below), both (-D -F: the disk in the high 32
//           bits of the 64-bit key, the flags in the low), or one for all
//           (task_hist.bpf.h), with the values' sum (biolatency -e).
//   SNOOP   one event: disk, flags, sector, bytes, latency, queued time,
//           and the process from block_io_start (biosnoop; biotop sums
//           them in user space).
// With -c (biolatency, biosnoop: libbpf-tools' flag) a request is followed
// only when the task current at its first hook (insert, attached for this
// even without -Q, else issue: the submitter's context) is under the
// cgroup. Unlike libbpf-tools, the completion is not checked too: it runs
// in an interrupt or a driver's worker, rarely in the submitter.
// And at issue, without the completion:
//   SIZE    a log2 slot of the request's Kbytes in the histogram of the
//           current process (bitesize: libbpf-tools takes the process
//           current at block_rq_issue too).
// The request flag bits moved between kernels, so the program reads them
// by name from the running kernel's BTF (CO-RE enum values) and hands user
// space canonical flags: the operation in bits 0-7, then one bit each for
// Sync, Metadata, FUA, PreFlush, ReadAhead, Background, NoWait, Priority,
// NoMerge, Idle, Integrity (render::bio names them).

#include <stdbool.h>
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "maps.bpf.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

#include "hooks.bpf.h"
#include "task.bpf.h"
#include "cgroup.bpf.h"
#define HIST_KEY __u64
#define HIST_SUM
#include "task_hist.bpf.h"

struct request;

#define MODE_LATENCY 1
#define MODE_SNOOP 2
#define MODE_SIZE 3
#define MAX_REQUESTS 10240

const volatile __u8 mode = MODE_LATENCY;
const volatile bool per_disk = false;
const volatile bool per_flag = false;
const volatile bool queued = false;
const volatile bool milliseconds = false;
const volatile bool filter_by_dev = false;
const volatile __u32 filter_dev = 0;

struct gendisk___scry {
	int major;
	int first_minor;
} __attribute__((preserve_access_index));

struct request_queue___scry {
	struct gendisk___scry *disk;
	void *elevator;
} __attribute__((preserve_access_index));

struct request___scry {
	struct request_queue___scry *q;
	unsigned int cmd_flags;
	__u64 __sector;
	unsigned int __data_len;
} __attribute__((preserve_access_index));

// Before 5.16 a request names its disk itself.
struct request___scry_old {
	struct gendisk___scry *rq_disk;
} __attribute__((preserve_access_index));

enum req_flag_bits___scry {
	__REQ_SYNC,
	__REQ_META,
	__REQ_PRIO,
	__REQ_NOMERGE,
	__REQ_IDLE,
	__REQ_INTEGRITY,
	__REQ_FUA,
	__REQ_PREFLUSH,
	__REQ_RAHEAD,
	__REQ_BACKGROUND,
	__REQ_NOWAIT,
};

struct stage {
	__u64 insert;
	__u64 issue;
	__u32 dev;
};

struct owner {
	__u32 pid;
	char comm[TASK_COMM_LEN];
};

struct bio_event {
	__u64 ts;
	__u64 latency_ns;
	// (__u64)-1: not queued through a scheduler, or its insert missed.
	__u64 queued_ns;
	__u64 sector;
	__u32 bytes;
	__u32 dev;
	__u32 flags;
	__u32 pid;
	char comm[TASK_COMM_LEN];
};

BPF_HASH(stages, __u64, struct stage, MAX_REQUESTS);

BPF_HASH(owners, __u64, struct owner, MAX_REQUESTS);

#define RING_BYTES (1024 * 1024)
#include "ring.bpf.h"

static __always_inline __u32 request_dev(struct request___scry *rq)
{
	struct gendisk___scry *disk;
	if (bpf_core_field_exists(((struct request___scry_old *)rq)->rq_disk))
		disk = BPF_CORE_READ((struct request___scry_old *)rq, rq_disk);
	else
		disk = BPF_CORE_READ(rq, q, disk);
	if (!disk)
		return 0;
	return ((__u32)BPF_CORE_READ(disk, major) << 20) | (__u32)BPF_CORE_READ(disk, first_minor);
}

// The kernel's flag bit `name`, where this kernel has it, as canonical bit `to`.
#define CANON(name, to)                                                                   \
	if (bpf_core_enum_value_exists(enum req_flag_bits___scry, name) &&                \
	    (raw & (1u << bpf_core_enum_value(enum req_flag_bits___scry, name))))         \
		flags |= 1u << (to)

static __always_inline __u32 canonical_flags(unsigned int raw)
{
	__u32 flags = raw & 0xff;
	CANON(__REQ_SYNC, 8);
	CANON(__REQ_META, 9);
	CANON(__REQ_FUA, 10);
	CANON(__REQ_PREFLUSH, 11);
	CANON(__REQ_RAHEAD, 12);
	CANON(__REQ_BACKGROUND, 13);
	CANON(__REQ_NOWAIT, 14);
	CANON(__REQ_PRIO, 15);
	CANON(__REQ_NOMERGE, 16);
	CANON(__REQ_IDLE, 17);
	CANON(__REQ_INTEGRITY, 18);
	return flags;
}

static __always_inline void on_start(void *req, bool insert)
{
	struct request___scry *rq = req;
	if (insert && !queued && !filter_cgroup)
		return;
	if (mode == MODE_SIZE) {
		if (filter_by_dev && request_dev(rq) != filter_dev)
			return;
		__u64 tgid = bpf_get_current_pid_tgid() >> 32;
		hist_add(tgid, (void *)bpf_get_current_task(), BPF_CORE_READ(rq, __data_len) / 1024);
		return;
	}
	__u64 key = (__u64)req;
	__u64 now = bpf_ktime_get_ns();
	struct stage *s = bpf_map_lookup_elem(&stages, &key);
	if (!s) {
		struct stage fresh = {.dev = request_dev(rq)};
		if (filter_by_dev && fresh.dev != filter_dev)
			return;
		if (!in_cgroup())
			return;
		if (insert)
			fresh.insert = now;
		else
			fresh.issue = now;
		bpf_map_update_elem(&stages, &key, &fresh, BPF_ANY);
		return;
	}
	if (insert)
		s->insert = now;
	else
		s->issue = now;
}

static __always_inline void on_io_start(void *req)
{
	if (mode != MODE_SNOOP)
		return;
	__u64 key = (__u64)req;
	struct owner o = {.pid = bpf_get_current_pid_tgid() >> 32};
	bpf_get_current_comm(&o.comm, sizeof(o.comm));
	bpf_map_update_elem(&owners, &key, &o, BPF_ANY);
}

static __always_inline void on_complete(void *req)
{
	struct request___scry *rq = req;
	__u64 key = (__u64)req;
	__u64 now = bpf_ktime_get_ns();
	struct stage *s = bpf_map_lookup_elem(&stages, &key);
	if (!s)
		goto cleanup;
	bool scheduled = queued && BPF_CORE_READ(rq, q, elevator);
	__u64 from = scheduled && s->insert ? s->insert : s->issue;
	if (!from || now < from)
		goto cleanup;
	if (mode == MODE_LATENCY) {
		__u64 delta = (now - from) / (milliseconds ? 1000000 : 1000);
		__u64 hkey = (__u32)-1;
		if (per_disk || per_flag)
			hkey = (per_disk ? (__u64)s->dev << 32 : 0) |
			       (per_flag ? canonical_flags(BPF_CORE_READ(rq, cmd_flags)) : 0);
		hist_add(hkey, (void *)bpf_get_current_task(), delta);
		goto cleanup;
	}
	struct bio_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		__u32 zero = 0;
		__u64 *d = bpf_map_lookup_elem(&drops, &zero);
		if (d)
			*d += 1;
		goto cleanup;
	}
	e->ts = now;
	e->latency_ns = s->issue && now >= s->issue ? now - s->issue : now - from;
	e->queued_ns = scheduled && s->insert && s->issue >= s->insert ? s->issue - s->insert : (__u64)-1;
	e->sector = BPF_CORE_READ(rq, __sector);
	e->bytes = BPF_CORE_READ(rq, __data_len);
	e->dev = s->dev;
	e->flags = canonical_flags(BPF_CORE_READ(rq, cmd_flags));
	struct owner *o = bpf_map_lookup_elem(&owners, &key);
	if (o) {
		e->pid = o->pid;
		__builtin_memcpy(&e->comm, o->comm, sizeof(e->comm));
	} else {
		e->pid = 0;
		__builtin_memset(&e->comm, 0, sizeof(e->comm));
		e->comm[0] = '?';
	}
	bpf_ringbuf_submit(e, 0);
cleanup:
	bpf_map_delete_elem(&stages, &key);
	bpf_map_delete_elem(&owners, &key);
}

BTF_OR_RAW(scry_bio_insert, "block_rq_insert", on_start(rq, true), struct request *rq)
BTF_OR_RAW(scry_bio_issue, "block_rq_issue", on_start(rq, false), struct request *rq)
BTF_OR_RAW(scry_bio_complete, "block_rq_complete", on_complete(rq),
	   struct request *rq, int error, unsigned int nr_bytes)
BTF_OR_RAW(scry_bio_io_start, "block_io_start", on_io_start(rq), struct request *rq)
