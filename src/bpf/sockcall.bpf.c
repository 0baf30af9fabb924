// SPDX-License-Identifier: (MIT OR Apache-2.0)
// scry's bindsnoop and solisten (bcc's) in one object, on the system-call
// tracepoints syscalls:sys_enter/exit_bind and sys_enter/exit_listen
// (bcc's own put kprobes on inet_bind, inet6_bind and inet_listen). The
// entry keeps the call's arguments by thread; the exit finds the socket
// from the descriptor (fd_sock.bpf.h) and sends one event:
//   BIND    IPv4 and IPv6 binds only (the family the caller asked); on
//           success the socket's own address and port (the port the
//           kernel chose for port 0) and its options (SO_REUSEADDR,
//           SO_REUSEPORT, IP_FREEBIND, IP_TRANSPARENT,
//           IP_BIND_ADDRESS_NO_PORT), protocol and bound device; on
//           failure (-x) the address and port asked for.
//   LISTEN  IPv4 and IPv6 sockets; the backlog the socket got (the
//           kernel's sk_max_ack_backlog, capped at somaxconn, as
//           inet_listen sees it), the one asked for if the call failed.
// What the tracepoints cannot see: binds and listens made inside the
// kernel (kernel sockets, io_uring's IORING_OP_BIND/LISTEN).
// Filters in the kernel: process, cgroup, failures, local ports.

#include <stdbool.h>
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "tp_pass.bpf.h"
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>

#include "maps.bpf.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

#include "sock.bpf.h"
#include "fd_sock.bpf.h"
#include "syscall_records.bpf.h"

#define TASK_COMM_LEN 16
#define MAX_PORTS 8
#define MAX_CALLS 10240

#define KIND_BIND 1
#define KIND_LISTEN 2

const volatile __u32 filter_tgid = 0;
const volatile bool include_failed = false;
const volatile __u16 ports[MAX_PORTS] = {};

// The call's arguments, from its entry.
struct call {
	__u8 addr[16];
	__u32 backlog;
	__s32 fd;
	__u16 family;
	__u16 port;
	__u8 kind;
};

struct sockcall_event {
	__u8 addr[16];
	__u32 pid;
	__s32 ret;
	__u32 backlog;
	__s32 bound_dev_if;
	__u16 port;
	__u16 family;
	__u16 proto;
	__u16 type;
	__u8 opts;
	__u8 kind;
	__u8 pad[2];
	char comm[TASK_COMM_LEN];
};

BPF_HASH(calls, __u32, struct call, MAX_CALLS);

#include "cgroup.bpf.h"

#include "ring.bpf.h"

// The bind options' bits, in libbpf-tools' order (its OPTS column).
#define OPT_FREEBIND 0x1
#define OPT_TRANSPARENT 0x2
#define OPT_NO_PORT 0x4
#define OPT_REUSEADDR 0x8
#define OPT_REUSEPORT 0x10

// Since 6.6 the inet options are bits of inet_flags, numbered by an
// anonymous enum (CO-RE cannot relocate its values: these are 6.6's and
// still 6.18's); before, bitfields of inet_sock.
#define INET_FLAGS_FREEBIND 11
#define INET_FLAGS_TRANSPARENT 15
#define INET_FLAGS_BIND_ADDRESS_NO_PORT 18

struct inet_sock___scry_new {
	unsigned long inet_flags;
} __attribute__((preserve_access_index));

struct inet_sock___scry_old {
	__u8 freebind : 1;
	__u8 transparent : 1;
	__u8 bind_address_no_port : 1;
} __attribute__((preserve_access_index));

struct sock_common___scry_bind {
	unsigned char skc_reuse : 4;
	unsigned char skc_reuseport : 1;
	int skc_bound_dev_if;
} __attribute__((preserve_access_index));

struct sock___scry_bind {
	struct sock_common___scry_bind __sk_common;
	__u32 sk_max_ack_backlog;
} __attribute__((preserve_access_index));

static __always_inline __u8 bind_options(const void *sk)
{
	__u8 opts = 0;
	const struct inet_sock___scry_old *old = sk;
	if (bpf_core_field_exists(old->freebind)) {
		if (BPF_CORE_READ_BITFIELD_PROBED(old, freebind))
			opts |= OPT_FREEBIND;
		if (BPF_CORE_READ_BITFIELD_PROBED(old, transparent))
			opts |= OPT_TRANSPARENT;
		if (BPF_CORE_READ_BITFIELD_PROBED(old, bind_address_no_port))
			opts |= OPT_NO_PORT;
	} else {
		unsigned long flags = BPF_CORE_READ((const struct inet_sock___scry_new *)sk, inet_flags);
		if (flags & (1UL << INET_FLAGS_FREEBIND))
			opts |= OPT_FREEBIND;
		if (flags & (1UL << INET_FLAGS_TRANSPARENT))
			opts |= OPT_TRANSPARENT;
		if (flags & (1UL << INET_FLAGS_BIND_ADDRESS_NO_PORT))
			opts |= OPT_NO_PORT;
	}
	const struct sock___scry_bind *s = sk;
	if (BPF_CORE_READ_BITFIELD_PROBED(s, __sk_common.skc_reuse))
		opts |= OPT_REUSEADDR;
	if (BPF_CORE_READ_BITFIELD_PROBED(s, __sk_common.skc_reuseport))
		opts |= OPT_REUSEPORT;
	return opts;
}

static __always_inline bool port_wanted(__u16 port)
{
	if (ports[0] == 0)
		return true;
	for (int i = 0; i < MAX_PORTS; i++) {
		if (ports[i] == 0)
			return false;
		if (ports[i] == port)
			return true;
	}
	return false;
}

static __always_inline bool task_wanted(void)
{
	if (filter_tgid && (bpf_get_current_pid_tgid() >> 32) != filter_tgid)
		return false;
	return in_cgroup();
}

struct sockaddr_in___scry {
	__u16 family;
	__be16 port;
	__u8 addr[4];
};

struct sockaddr_in6___scry {
	__u16 family;
	__be16 port;
	__u32 flowinfo;
	__u8 addr[16];
};

SEC("tracepoint/syscalls/sys_enter_bind")
int scry_bind_enter(struct sys_enter_record *ctx)
{
	if (!task_wanted())
		return TP_PASS;
	const void *uaddr = (const void *)ctx->args[1];
	struct call c = {.kind = KIND_BIND, .fd = (__s32)ctx->args[0]};
	if (bpf_probe_read_user(&c.family, sizeof(c.family), uaddr))
		return TP_PASS;
	if (c.family == AF_INET) {
		struct sockaddr_in___scry in = {};
		bpf_probe_read_user(&in, sizeof(in), uaddr);
		c.port = bpf_ntohs(in.port);
		__builtin_memcpy(c.addr, in.addr, 4);
	} else if (c.family == AF_INET6) {
		struct sockaddr_in6___scry in6 = {};
		bpf_probe_read_user(&in6, sizeof(in6), uaddr);
		c.port = bpf_ntohs(in6.port);
		__builtin_memcpy(c.addr, in6.addr, 16);
	} else {
		return TP_PASS;
	}
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	bpf_map_update_elem(&calls, &tid, &c, BPF_ANY);
	return TP_PASS;
}

SEC("tracepoint/syscalls/sys_enter_listen")
int scry_listen_enter(struct sys_enter_record *ctx)
{
	if (!task_wanted())
		return TP_PASS;
	struct call c = {
		.kind = KIND_LISTEN,
		.fd = (__s32)ctx->args[0],
		.backlog = (__u32)ctx->args[1],
	};
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	bpf_map_update_elem(&calls, &tid, &c, BPF_ANY);
	return TP_PASS;
}

static __always_inline void on_exit(long ret, __u8 kind)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct call *c = bpf_map_lookup_elem(&calls, &tid);
	if (!c)
		return;
	if (c->kind != kind || (ret != 0 && kind == KIND_BIND && !include_failed))
		goto done;
	struct socket___scry *sock = fd_socket(c->fd);
	const void *sk = sock ? BPF_CORE_READ(sock, sk) : 0;
	struct sockcall_event e = {
		.pid = bpf_get_current_pid_tgid() >> 32,
		.ret = ret,
		.kind = kind,
		.family = c->family,
		.port = c->port,
		.backlog = c->backlog,
	};
	__builtin_memcpy(e.addr, c->addr, sizeof(e.addr));
	if (sk) {
		struct sock_ends ends = {};
		sock_ends(sk, &ends);
		e.family = ends.family;
		e.proto = ends.protocol;
		e.type = BPF_CORE_READ(sock, type);
		if (ret == 0) {
			e.port = ends.sport;
			__builtin_memcpy(e.addr, ends.saddr, sizeof(e.addr));
			if (kind == KIND_LISTEN)
				e.backlog = BPF_CORE_READ((const struct sock___scry_bind *)sk,
							  sk_max_ack_backlog);
		}
		if (kind == KIND_BIND) {
			e.opts = bind_options(sk);
			e.bound_dev_if = BPF_CORE_READ((const struct sock___scry_bind *)sk,
						       __sk_common.skc_bound_dev_if);
		}
	}
	if (e.family != AF_INET && e.family != AF_INET6)
		goto done;
	if (!port_wanted(e.port))
		goto done;
	bpf_get_current_comm(&e.comm, sizeof(e.comm));
	emit(&e, sizeof(e));
done:
	bpf_map_delete_elem(&calls, &tid);
}

SEC("tracepoint/syscalls/sys_exit_bind")
int scry_bind_exit(struct sys_exit_record *ctx)
{
	on_exit(ctx->ret, KIND_BIND);
	return TP_PASS;
}

SEC("tracepoint/syscalls/sys_exit_listen")
int scry_listen_exit(struct sys_exit_record *ctx)
{
	on_exit(ctx->ret, KIND_LISTEN);
	return TP_PASS;
}
