// SPDX-License-Identifier: (MIT OR Apache-2.0)
// scry's tcptop (bcc's): bytes sent and received per TCP connection and
// process, summed in the kernel, on sock:sock_send_length and
// sock:sock_recv_length (6.3 and later; tp_btf, then raw_tp), which fire
// at the return of sock_sendmsg and sock_recvmsg with their result
// (bcc's own puts kprobes on tcp_sendmsg and tcp_cleanup_rbuf). Counted:
// results > 0 of IPv4 and IPv6 TCP sockets; a recv with MSG_PEEK is not
// (nothing was consumed). The process is the one calling. What these
// tracepoints cannot see: bytes that do not pass sock_recvmsg (splice
// from a socket, tcp_read_sock readers such as kTLS or sockmap) and
// kernel sockets' sends that call tcp_sendmsg directly.
// bcc's hooks come first where the kernel allows them (before 6.3 they
// are the only ones: the sock tracepoints are younger): the bytes asked of
// tcp_sendmsg at its entry (its size argument, as bcc counts) and the
// bytes tcp_cleanup_rbuf is told were copied to the reader, each by
// fentry, else kprobe; the engine loads the tracepoint programs only when
// one of the two cannot be hooked (src/sys/bpf_engine.rs).
// User space reads and deletes the map each interval.

#include <stdbool.h>
#include <linux/types.h>
#include <linux/bpf.h>
#include <asm/ptrace.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>

#include "maps.bpf.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

#include "hooks.bpf.h"
#include "sock.bpf.h"

struct sock;
struct msghdr;

#define TASK_COMM_LEN 16
#define MAX_FLOWS 10240
#define MSG_PEEK 2

const volatile __u32 filter_tgid = 0;
const volatile __u16 filter_family = 0;

struct flow_key {
	__u8 saddr[16];
	__u8 daddr[16];
	__u32 pid;
	__u16 lport;
	__u16 dport;
	__u16 family;
	__u16 pad;
};

struct flow_bytes {
	__u64 sent;
	__u64 received;
	char comm[TASK_COMM_LEN];
};

BPF_HASH(flows, struct flow_key, struct flow_bytes, MAX_FLOWS);

#include "cgroup.bpf.h"

static __always_inline void count(const void *sk, int ret, int flags, bool sent)
{
	if (ret <= 0 || (!sent && (flags & MSG_PEEK)))
		return;
	__u32 pid = bpf_get_current_pid_tgid() >> 32;
	if (filter_tgid && pid != filter_tgid)
		return;
	if (!in_cgroup())
		return;
	struct sock_ends ends = {};
	sock_ends(sk, &ends);
	if (ends.protocol != IPPROTO_TCP || (ends.family != AF_INET && ends.family != AF_INET6))
		return;
	if (filter_family && ends.family != filter_family)
		return;
	struct flow_key key = {
		.pid = pid,
		.lport = ends.sport,
		.dport = ends.dport,
		.family = ends.family,
	};
	__builtin_memcpy(key.saddr, ends.saddr, sizeof(key.saddr));
	__builtin_memcpy(key.daddr, ends.daddr, sizeof(key.daddr));
	struct flow_bytes *b = bpf_map_lookup_elem(&flows, &key);
	if (!b) {
		struct flow_bytes fresh = {};
		bpf_get_current_comm(&fresh.comm, sizeof(fresh.comm));
		bpf_map_update_elem(&flows, &key, &fresh, BPF_NOEXIST);
		b = bpf_map_lookup_elem(&flows, &key);
		if (!b)
			return;
	}
	if (sent)
		__sync_fetch_and_add(&b->sent, ret);
	else
		__sync_fetch_and_add(&b->received, ret);
}

BTF_OR_RAW(scry_tcptop_send, "sock_send_length", count(sk, ret, flags, true), struct sock *sk,
	   int ret, int flags)
BTF_OR_RAW(scry_tcptop_recv, "sock_recv_length", count(sk, ret, flags, false), struct sock *sk,
	   int ret, int flags)

SEC("fentry/tcp_sendmsg")
int BPF_PROG(scry_k_tcp_send__fentry, struct sock *sk, struct msghdr *msg, unsigned long size)
{
	count(sk, (int)size, 0, true);
	return 0;
}

SEC("kprobe/tcp_sendmsg")
int BPF_KPROBE(scry_k_tcp_send__kprobe, struct sock *sk, struct msghdr *msg, unsigned long size)
{
	count(sk, (int)size, 0, true);
	return 0;
}

SEC("fentry/tcp_cleanup_rbuf")
int BPF_PROG(scry_k_tcp_recv__fentry, struct sock *sk, int copied)
{
	count(sk, copied, 0, false);
	return 0;
}

SEC("kprobe/tcp_cleanup_rbuf")
int BPF_KPROBE(scry_k_tcp_recv__kprobe, struct sock *sk, int copied)
{
	count(sk, copied, 0, false);
	return 0;
}
