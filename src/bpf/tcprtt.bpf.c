// SPDX-License-Identifier: (MIT OR Apache-2.0)
// scry's tcprtt (bcc's): the smoothed RTT of TCP sockets as a log2
// histogram counted in the kernel, on tcp:tcp_probe (tp_btf, then
// raw_tp), which the kernel calls from tcp_rcv_established for each
// segment an established socket receives: the hook libbpf-tools' tcprtt
// takes with fentry or a kprobe. The value is tcp_sock's srtt_us >> 3
// (µs, or ms), as libbpf-tools reads it. Filters: local and remote port,
// local and remote address (family 0: none; an IPv4 address is its first
// four bytes, as sock_ends holds it).
// Key: an address (libbpf-tools' hist_key): the local one (`by_addr` 1,
// -b), the remote one (2, -B), or family 0 and zeros (one histogram for
// all). Each histogram also sums its values (HIST_SUM: -e's average).

#include <stdbool.h>
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>

char LICENSE[] SEC("license") = "Dual MIT/GPL";

#include "hooks.bpf.h"
#include "sock.bpf.h"
#include "task.bpf.h"

struct addr_key {
	__u16 family;
	__u8 addr[16];
};

#define HIST_KEY struct addr_key
#define HIST_SUM
#include "task_hist.bpf.h"

struct sock;
struct sk_buff;

const volatile __u16 filter_lport = 0;
const volatile __u16 filter_rport = 0;
const volatile bool milliseconds = false;
const volatile __u16 filter_laddr_family = 0;
const volatile __u8 filter_laddr[16] = {};
const volatile __u16 filter_raddr_family = 0;
const volatile __u8 filter_raddr[16] = {};
// 0: one histogram; 1: per local address; 2: per remote address.
const volatile __u8 by_addr = 0;

// Whether `addr` of a socket of `family` is the filter's (none: any).
static __always_inline bool addr_matches(const __u8 *addr, __u16 family, __u16 want_family,
					 const volatile __u8 *want)
{
	if (!want_family)
		return true;
	if (family != want_family)
		return false;
	int len = family == AF_INET6 ? 16 : 4;
	for (int i = 0; i < 16; i++) {
		if (i < len && addr[i] != want[i])
			return false;
	}
	return true;
}

struct tcp_sock___scry_rtt {
	__u32 srtt_us;
} __attribute__((preserve_access_index));

static __always_inline void on_probe(const void *sk)
{
	struct sock_ends ends = {};
	sock_ends(sk, &ends);
	if (ends.protocol != IPPROTO_TCP)
		return;
	if (filter_lport && ends.sport != filter_lport)
		return;
	if (filter_rport && ends.dport != filter_rport)
		return;
	if (!addr_matches(ends.saddr, ends.family, filter_laddr_family, filter_laddr) ||
	    !addr_matches(ends.daddr, ends.family, filter_raddr_family, filter_raddr))
		return;
	__u64 srtt = BPF_CORE_READ((const struct tcp_sock___scry_rtt *)sk, srtt_us) >> 3;
	if (milliseconds)
		srtt /= 1000;
	struct addr_key key = {};
	if (by_addr) {
		key.family = ends.family;
		__builtin_memcpy(key.addr, by_addr == 1 ? ends.saddr : ends.daddr, sizeof(key.addr));
	}
	hist_add(key, (void *)bpf_get_current_task(), srtt);
}

BTF_OR_RAW(scry_tcprtt_probe, "tcp_probe", on_probe(sk), struct sock *sk, struct sk_buff *skb)
