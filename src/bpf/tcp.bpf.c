// SPDX-License-Identifier: (MIT OR Apache-2.0)
// scry's TCP tools (bcc's tcplife, tcpconnect, tcpaccept, tcpstates,
// tcpretrans) in one object: each streams `struct tcp_event`s through the
// ring (ring.bpf.h); `mode` says which rules the state hook follows, and
// the loader leaves out the programs a mode does not use.
//
// Hooks: sock:inet_sock_set_state (tp_btf, raw_tp, then the classic
// tracepoint: the socket is read through its pointer with CO-RE in all
// three, sock.bpf.h), tcp:tcp_retransmit_skb (the same three), and
// syscalls:sys_exit_accept/accept4 (tcpaccept: the new socket is found
// from the returned descriptor in the caller's file table, so the line
// names the accepting process, as bcc's kretprobe does; io_uring's
// accepts are not seen). No kprobe is needed; but tcpconnect takes
// bcc's own hooks where the kernel allows them (see "tcpconnect on bcc's
// hooks" below).
//
// The rules, per mode:
//   STATES  every transition, with the time since the socket's previous
//           one (libbpf-tools' tcpstates).
//   LIFE    libbpf-tools' tcplife: the birth is the last move into
//           ESTABLISHED, SYN_SENT or SYN_RECV; the process is the one at
//           SYN_SENT (connect) or LAST_ACK (close after the peer's), else
//           the one current at CLOSE; at CLOSE, one event with the bytes
//           acked by the peer and received (tcp_sock's bytes_acked and
//           bytes_received: counts of sequence space, so a FIN the peer
//           acked counts one byte).
//   CONNECT an active open: the process at SYN_SENT (in connect()), the
//           event when the socket leaves SYN_SENT (its source port is
//           chosen after SYN_SENT), whether it connected or failed.
// Filters in the kernel: family, process (at the moment the process is
// known), uid and cgroup (tcpconnect: the connecting task's,
// cgroup.bpf.h), local and remote port lists (at the event,
// when both ports are known).

#include <stdbool.h>
#include <linux/types.h>
#include <linux/bpf.h>
#include <asm/ptrace.h>
#include <bpf/bpf_helpers.h>
#include "tp_pass.bpf.h"
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>

#include "maps.bpf.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

#include "hooks.bpf.h"
#include "sock.bpf.h"

struct sock;
struct sk_buff;
struct sockaddr;

#define TASK_COMM_LEN 16
#define MAX_PORTS 8
#define MAX_SOCKS 65536

#define MODE_STATES 1
#define MODE_LIFE 2
#define MODE_CONNECT 3
#define MODE_ACCEPT 4
#define MODE_RETRANS 5

#define TCP_ESTABLISHED 1
#define TCP_SYN_SENT 2
#define TCP_FIN_WAIT1 4
#define TCP_CLOSE 7
#define TCP_LAST_ACK 9

const volatile __u8 mode = MODE_STATES;
// 0: any family, any process; (__u32)-1: any uid; an empty list (first 0):
// any port.
const volatile __u16 filter_family = 0;
const volatile __u32 filter_tgid = 0;
const volatile __u32 filter_uid = (__u32)-1;
const volatile __u16 lports[MAX_PORTS] = {};
const volatile __u16 rports[MAX_PORTS] = {};

struct tcp_event {
	__u64 skaddr;
	__u64 ts;
	// LIFE: since the birth; STATES: since the previous transition;
	// RETRANS: the segment's sequence number.
	__u64 span_ns;
	__u64 tx_bytes;
	__u64 rx_bytes;
	struct sock_ends ends;
	__u32 pid;
	__u32 uid;
	__u8 oldstate;
	__u8 newstate;
	__u8 kind;
	__u8 pad;
	char comm[TASK_COMM_LEN];
};

// Per socket: the last transition (or birth), and who owns it.
struct sock_info {
	__u64 ts;
	__u32 pid;
	__u32 uid;
	__u8 has_owner;
	char comm[TASK_COMM_LEN];
};

BPF_HASH(socks, __u64, struct sock_info, MAX_SOCKS);

#define RING_BYTES (1024 * 1024)
#include "ring.bpf.h"
#include "cgroup.bpf.h"

#include "syscall_records.bpf.h"

static __always_inline bool port_listed(const volatile __u16 *list, __u16 port)
{
	if (list[0] == 0)
		return true;
	for (int i = 0; i < MAX_PORTS; i++) {
		if (list[i] == 0)
			return false;
		if (list[i] == port)
			return true;
	}
	return false;
}

static __always_inline bool ends_wanted(const struct sock_ends *e)
{
	if (e->protocol != IPPROTO_TCP)
		return false;
	if (filter_family && e->family != filter_family)
		return false;
	return port_listed(lports, e->sport) && port_listed(rports, e->dport);
}

static __always_inline void take_owner(struct sock_info *info)
{
	__u64 id = bpf_get_current_pid_tgid();
	info->pid = id >> 32;
	info->uid = (__u32)bpf_get_current_uid_gid();
	info->has_owner = 1;
	bpf_get_current_comm(&info->comm, sizeof(info->comm));
}

// Sends an event for `sk`, its owner from `info` (or the current task).
static __always_inline void send_event(const void *sk, const struct sock_ends *ends,
				 const struct sock_info *info, __u64 now, __u64 span,
				 int oldstate, int newstate, __u8 kind)
{
	struct tcp_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		__u32 zero = 0;
		__u64 *d = bpf_map_lookup_elem(&drops, &zero);
		if (d)
			*d += 1;
		return;
	}
	e->skaddr = (__u64)sk;
	e->ts = now;
	e->span_ns = span;
	e->tx_bytes = 0;
	e->rx_bytes = 0;
	if (kind == MODE_LIFE) {
		const struct tcp_sock___scry *tp = sk;
		e->tx_bytes = BPF_CORE_READ(tp, bytes_acked);
		e->rx_bytes = BPF_CORE_READ(tp, bytes_received);
	}
	__builtin_memcpy(&e->ends, ends, sizeof(e->ends));
	e->oldstate = oldstate;
	e->newstate = newstate;
	e->kind = kind;
	e->pad = 0;
	if (info && info->has_owner) {
		e->pid = info->pid;
		e->uid = info->uid;
		__builtin_memcpy(&e->comm, info->comm, sizeof(e->comm));
	} else {
		__u64 id = bpf_get_current_pid_tgid();
		e->pid = id >> 32;
		e->uid = (__u32)bpf_get_current_uid_gid();
		bpf_get_current_comm(&e->comm, sizeof(e->comm));
	}
	bpf_ringbuf_submit(e, 0);
}

static __always_inline void on_states(const void *sk, int oldstate, int newstate,
				      const struct sock_ends *ends, __u64 now)
{
	__u64 key = (__u64)sk;
	struct sock_info *last = bpf_map_lookup_elem(&socks, &key);
	__u64 span = last ? now - last->ts : 0;
	if (ends_wanted(ends))
		send_event(sk, ends, 0, now, span, oldstate, newstate, MODE_STATES);
	if (newstate == TCP_CLOSE) {
		bpf_map_delete_elem(&socks, &key);
		return;
	}
	struct sock_info info = {.ts = now};
	bpf_map_update_elem(&socks, &key, &info, BPF_ANY);
}

static __always_inline void on_life(const void *sk, int oldstate, int newstate,
				    const struct sock_ends *ends, __u64 now)
{
	__u64 key = (__u64)sk;
	struct sock_info *info = bpf_map_lookup_elem(&socks, &key);
	if (newstate < TCP_FIN_WAIT1) {
		if (info) {
			info->ts = now;
		} else {
			struct sock_info fresh = {.ts = now};
			bpf_map_update_elem(&socks, &key, &fresh, BPF_ANY);
			info = bpf_map_lookup_elem(&socks, &key);
		}
	}
	if (info && (newstate == TCP_SYN_SENT || newstate == TCP_LAST_ACK))
		take_owner(info);
	if (newstate != TCP_CLOSE || !info)
		return;
	__u32 pid = info->has_owner ? info->pid : bpf_get_current_pid_tgid() >> 32;
	if ((!filter_tgid || pid == filter_tgid) && ends_wanted(ends))
		send_event(sk, ends, info, now, now - info->ts, oldstate, newstate, MODE_LIFE);
	bpf_map_delete_elem(&socks, &key);
}

static __always_inline void on_connect(const void *sk, int oldstate, int newstate,
				       const struct sock_ends *ends, __u64 now)
{
	__u64 key = (__u64)sk;
	if (newstate == TCP_SYN_SENT) {
		__u64 id = bpf_get_current_pid_tgid();
		if (filter_tgid && (id >> 32) != filter_tgid)
			return;
		if (filter_uid != (__u32)-1 && (__u32)bpf_get_current_uid_gid() != filter_uid)
			return;
		if (!in_cgroup())
			return;
		struct sock_info info = {.ts = now};
		take_owner(&info);
		bpf_map_update_elem(&socks, &key, &info, BPF_ANY);
		return;
	}
	if (oldstate != TCP_SYN_SENT)
		return;
	struct sock_info *info = bpf_map_lookup_elem(&socks, &key);
	if (!info)
		return;
	if (ends_wanted(ends))
		send_event(sk, ends, info, now, now - info->ts, oldstate, newstate, MODE_CONNECT);
	bpf_map_delete_elem(&socks, &key);
}

static __always_inline void on_state(const void *sk, int oldstate, int newstate)
{
	struct sock_ends ends = {};
	sock_ends(sk, &ends);
	if (ends.protocol != IPPROTO_TCP)
		return;
	__u64 now = bpf_ktime_get_ns();
	if (mode == MODE_STATES)
		on_states(sk, oldstate, newstate, &ends, now);
	else if (mode == MODE_LIFE)
		on_life(sk, oldstate, newstate, &ends, now);
	else if (mode == MODE_CONNECT)
		on_connect(sk, oldstate, newstate, &ends, now);
}

BTF_OR_RAW(scry_tcp_state, "inet_sock_set_state", on_state(sk, oldstate, newstate),
	   const struct sock *sk, const int oldstate, const int newstate)

// The classic tracepoint's record (its first fields).
struct set_state_record {
	__u64 common;
	const void *skaddr;
	int oldstate;
	int newstate;
};

SEC("tracepoint/sock/inet_sock_set_state")
int scry_tcp_state__tp(struct set_state_record *ctx)
{
	on_state(ctx->skaddr, ctx->oldstate, ctx->newstate);
	return TP_PASS;
}

// tcpretrans: each retransmitted segment, the socket's state at the time,
// and the segment's first sequence number (TCP_SKB_CB(skb)->seq: the
// first field of the control block in skb->cb, where bcc's -s reads it)
// in the event's span_ns.
struct sk_buff___scry {
	char cb[48];
} __attribute__((preserve_access_index));

static __always_inline void on_retransmit(const void *sk, const void *skb)
{
	struct sock_ends ends = {};
	sock_ends(sk, &ends);
	if (!ends_wanted(&ends))
		return;
	const struct sock___scry *s = sk;
	__u8 state = BPF_CORE_READ(s, __sk_common.skc_state);
	__u32 seq = 0;
	if (skb)
		bpf_core_read(&seq, sizeof(seq), &((const struct sk_buff___scry *)skb)->cb);
	send_event(sk, &ends, 0, bpf_ktime_get_ns(), seq, state, state, MODE_RETRANS);
}

BTF_OR_RAW(scry_tcp_retrans, "tcp_retransmit_skb", on_retransmit(sk, skb),
	   const struct sock *sk, const struct sk_buff *skb)

struct retransmit_record {
	__u64 common;
	const void *skbaddr;
	const void *skaddr;
};

SEC("tracepoint/tcp/tcp_retransmit_skb")
int scry_tcp_retrans__tp(struct retransmit_record *ctx)
{
	on_retransmit(ctx->skaddr, ctx->skbaddr);
	return TP_PASS;
}

// tcpaccept: the socket behind the descriptor accept returned.
#include "fd_sock.bpf.h"

static __always_inline void on_accept(long ret)
{
	if (ret < 0)
		return;
	__u64 id = bpf_get_current_pid_tgid();
	if (filter_tgid && (id >> 32) != filter_tgid)
		return;
	struct socket___scry *sock = fd_socket(ret);
	if (!sock)
		return;
	const void *sk = BPF_CORE_READ(sock, sk);
	if (!sk)
		return;
	struct sock_ends ends = {};
	sock_ends(sk, &ends);
	if (ends_wanted(&ends))
		send_event(sk, &ends, 0, bpf_ktime_get_ns(), 0, TCP_ESTABLISHED, TCP_ESTABLISHED,
		     MODE_ACCEPT);
}

SEC("tracepoint/syscalls/sys_exit_accept4")
int scry_tcp_accept4(struct sys_exit_record *ctx)
{
	on_accept(ctx->ret);
	return TP_PASS;
}

SEC("tracepoint/syscalls/sys_exit_accept")
int scry_tcp_accept(struct sys_exit_record *ctx)
{
	on_accept(ctx->ret);
	return TP_PASS;
}

// tcpconnect on bcc's hooks: tcp_v4_connect and tcp_v6_connect, the
// socket kept by thread at the entry (fentry, else kprobe), the event at
// the return (fexit, else kretprobe) when it returned 0: the SYN is on its
// way and the source port chosen, where bcc reports the connect too
// (whether it then succeeds is not waited for). The engine loads the state
// hook above only when one of the four cannot be hooked.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u64);
} connecting SEC(".maps");

static __always_inline void connect_enter(const void *sk)
{
	__u64 id = bpf_get_current_pid_tgid();
	if (filter_tgid && (id >> 32) != filter_tgid)
		return;
	if (filter_uid != (__u32)-1 && (__u32)bpf_get_current_uid_gid() != filter_uid)
		return;
	if (!in_cgroup())
		return;
	__u32 tid = (__u32)id;
	__u64 addr = (__u64)sk;
	bpf_map_update_elem(&connecting, &tid, &addr, BPF_ANY);
}

static __always_inline void connect_return(int ret)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u64 *addr = bpf_map_lookup_elem(&connecting, &tid);
	if (!addr)
		return;
	const void *sk = (const void *)*addr;
	bpf_map_delete_elem(&connecting, &tid);
	if (ret != 0)
		return;
	struct sock_ends ends = {};
	sock_ends(sk, &ends);
	if (ends_wanted(&ends))
		send_event(sk, &ends, 0, bpf_ktime_get_ns(), 0, TCP_CLOSE, TCP_SYN_SENT,
			   MODE_CONNECT);
}

#define ON_CONNECT(FUNC, GROUP)                                                    \
	SEC("fentry/" #FUNC)                                                       \
	int BPF_PROG(GROUP##__fentry, struct sock *sk)                             \
	{                                                                          \
		connect_enter(sk);                                                 \
		return 0;                                                          \
	}                                                                          \
	SEC("kprobe/" #FUNC)                                                       \
	int BPF_KPROBE(GROUP##__kprobe, struct sock *sk)                           \
	{                                                                          \
		connect_enter(sk);                                                 \
		return 0;                                                          \
	}                                                                          \
	SEC("fexit/" #FUNC)                                                        \
	int BPF_PROG(GROUP##_ret__fexit, struct sock *sk, struct sockaddr *uaddr, \
		     int addr_len, int ret)                                        \
	{                                                                          \
		connect_return(ret);                                               \
		return 0;                                                          \
	}                                                                          \
	SEC("kretprobe/" #FUNC)                                                    \
	int BPF_KRETPROBE(GROUP##_ret__kretprobe, int ret)                         \
	{                                                                          \
		connect_return(ret);                                               \
		return 0;                                                          \
	}

ON_CONNECT(tcp_v4_connect, scry_k_connect4)
ON_CONNECT(tcp_v6_connect, scry_k_connect6)
