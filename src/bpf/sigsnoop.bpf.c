// SPDX-License-Identifier: (MIT OR Apache-2.0)
// scry sigsnoop and killsnoop (bcc's, as libbpf-tools' sigsnoop, which is
// killsnoop under that name): each signal streamed to user space through
// the ring of ring.bpf.h.
//
// Two sources in one object; user space loads one of them (GroupRules
// skip): sigsnoop, every signal the kernel generates (signal:
// signal_generate, whoever sends it: kill(2), a fault, a child's exit,
// a timer), its RESULT the tracepoint's `errno` field as libbpf-tools
// shows it; killsnoop (-k), the kill(2), tkill(2) and tgkill(2) calls,
// their RESULT the call's return value, so a call that failed (no such
// process: it generates no signal) is seen too. The entry keeps the
// event by thread id, the exit completes and sends it.
// Filters in the kernel: the sending process (-p), a set of signals (-s,
// a bit per signal 1..64), failed only (-x).
//
// Only classic tracepoints exist for one system call (syscalls:*), and
// signal_generate's record has not changed since 3.x: one variant each.

#include <stdbool.h>
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "tp_pass.bpf.h"
#include <bpf/bpf_tracing.h>

#include "maps.bpf.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

#define TASK_COMM_LEN 16

const volatile __u32 filter_tgid = 0;
// Bit sig-1 set: signal `sig` is shown; 0: every signal.
const volatile __u64 target_signals = 0;
const volatile bool failed_only = false;

// Which call sent it (0: signal_generate).
enum sig_source { SRC_GENERATE, SRC_KILL, SRC_TKILL, SRC_TGKILL };

struct sig_event {
	__u32 pid;
	__u32 tid;
	int tpid;
	int sig;
	int ret;
	__u32 source;
	char comm[TASK_COMM_LEN];
};

BPF_HASH(starts, __u32, struct sig_event, 10240);

// 4 MiB, as opensnoop's: a process signalling itself in a loop sends
// an event per microsecond or two.
#define RING_BYTES (4 * 1024 * 1024)
#include "ring.bpf.h"
#include "syscall_records.bpf.h"

static __always_inline bool wanted(int sig)
{
	if (!target_signals)
		return true;
	if (sig < 1 || sig > 64)
		return false;
	return (target_signals >> (sig - 1)) & 1;
}

static __always_inline int on_enter(int tpid, int sig, __u32 source)
{
	if (!wanted(sig))
		return 0;
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id;
	if (filter_tgid && tgid != filter_tgid)
		return 0;
	struct sig_event e = {
		.pid = tgid,
		.tid = tid,
		.tpid = tpid,
		.sig = sig,
		.source = source,
	};
	bpf_get_current_comm(&e.comm, sizeof(e.comm));
	bpf_map_update_elem(&starts, &tid, &e, BPF_ANY);
	return 0;
}

static __always_inline int on_exit(long ret)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct sig_event *e = bpf_map_lookup_elem(&starts, &tid);
	if (!e)
		return 0;
	if (!failed_only || ret < 0) {
		e->ret = ret;
		emit(e, sizeof(*e));
	}
	bpf_map_delete_elem(&starts, &tid);
	return 0;
}

// The entry and exit of one of the kill calls; TPID and SIG: the
// argument numbers of the target and the signal.
#define KILL_CALL(NAME, TPID, SIG, SOURCE)                                 \
	SEC("tracepoint/syscalls/sys_enter_" #NAME)                        \
	int scry_sig_##NAME(struct sys_enter_record *ctx)                  \
	{                                                                  \
		return on_enter((int)ctx->args[TPID], (int)ctx->args[SIG], \
				SOURCE);                                   \
	}                                                                  \
	SEC("tracepoint/syscalls/sys_exit_" #NAME)                         \
	int scry_sig_##NAME##_exit(struct sys_exit_record *ctx)            \
	{                                                                  \
		return on_exit(ctx->ret);                                  \
	}

KILL_CALL(kill, 0, 1, SRC_KILL)
KILL_CALL(tkill, 0, 1, SRC_TKILL)
KILL_CALL(tgkill, 1, 2, SRC_TGKILL)

// signal:signal_generate's record (format file: sig at 8, errno 12, code
// 16, comm 20, pid 36, group 40, result 44).
struct signal_generate_record {
	__u64 common;
	int sig;
	int errno_;
	int code;
	char comm[TASK_COMM_LEN];
	int pid;
	int group;
	int result;
};

SEC("tracepoint/signal/signal_generate")
int scry_sig_generate(struct signal_generate_record *ctx)
{
	int ret = ctx->errno_;
	if (failed_only && ret == 0)
		return TP_PASS;
	int sig = ctx->sig;
	if (!wanted(sig))
		return TP_PASS;
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;
	if (filter_tgid && tgid != filter_tgid)
		return TP_PASS;
	struct sig_event e = {
		.pid = tgid,
		.tid = (__u32)id,
		.tpid = ctx->pid,
		.sig = sig,
		.ret = ret,
		.source = SRC_GENERATE,
	};
	bpf_get_current_comm(&e.comm, sizeof(e.comm));
	emit(&e, sizeof(e));
	return TP_PASS;
}
