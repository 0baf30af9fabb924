// SPDX-License-Identifier: (MIT OR Apache-2.0)
// The struct sock fields the TCP tools read, relocated against the running
// kernel's BTF (CO-RE), so one reader serves every hook: the typed pointer
// of tp_btf and raw_tp, the `skaddr` of the classic tracepoint, and the
// socket behind a descriptor. `sk_protocol` is read as a bitfield where
// older kernels keep it in one (before 5.6), as a u16 where newer do.

#define AF_INET 2
#define AF_INET6 10
#define IPPROTO_TCP 6

struct in6_addr___scry {
	__u8 bytes[16];
} __attribute__((preserve_access_index));

struct sock_common___scry {
	__be32 skc_daddr;
	__be32 skc_rcv_saddr;
	__be16 skc_dport;
	unsigned short skc_family;
	unsigned char skc_state;
	struct in6_addr___scry skc_v6_daddr;
	struct in6_addr___scry skc_v6_rcv_saddr;
} __attribute__((preserve_access_index));

struct sock___scry {
	struct sock_common___scry __sk_common;
	__u16 sk_protocol;
} __attribute__((preserve_access_index));

// The source port as the socket keeps it for its life: skc_num is cleared
// when a closing socket gives its port back, before the CLOSE transition
// is traced; inet_sport is not (the tracepoint's own record reads it).
struct inet_sock___scry {
	__be16 inet_sport;
} __attribute__((preserve_access_index));

struct tcp_sock___scry {
	__u64 bytes_received;
	__u64 bytes_acked;
} __attribute__((preserve_access_index));

// Where a socket is: family, ports in host order, addresses in network
// order (IPv4 in the first four bytes).
struct sock_ends {
	__u8 saddr[16];
	__u8 daddr[16];
	__u16 sport;
	__u16 dport;
	__u16 family;
	__u16 protocol;
};

static __always_inline void sock_ends(const void *sk, struct sock_ends *e)
{
	const struct sock___scry *s = sk;
	e->family = BPF_CORE_READ(s, __sk_common.skc_family);
	e->protocol = BPF_CORE_READ_BITFIELD_PROBED(s, sk_protocol);
	e->sport = bpf_ntohs(BPF_CORE_READ((const struct inet_sock___scry *)sk, inet_sport));
	e->dport = bpf_ntohs(BPF_CORE_READ(s, __sk_common.skc_dport));
	if (e->family == AF_INET6) {
		BPF_CORE_READ_INTO(&e->saddr, s, __sk_common.skc_v6_rcv_saddr);
		BPF_CORE_READ_INTO(&e->daddr, s, __sk_common.skc_v6_daddr);
	} else {
		BPF_CORE_READ_INTO((__be32 *)e->saddr, s, __sk_common.skc_rcv_saddr);
		BPF_CORE_READ_INTO((__be32 *)e->daddr, s, __sk_common.skc_daddr);
	}
}
