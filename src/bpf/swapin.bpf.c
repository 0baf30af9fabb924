// SPDX-License-Identifier: (MIT OR Apache-2.0)
// scry swapin (bcc's swapin): calls of the kernel function that reads a
// swapped-out folio back, counted per process (tgid and comm, as bcc
// keys them); user space reads and deletes the map each interval.
//
// The function is swap_read_folio (Linux 6.6 and later) or swap_readpage
// (before): one group each, by fentry, else by kprobe; user space keeps
// the group of the one /proc/kallsyms lists and skips the other
// (sys::bpf_swapin). There is no tracepoint on a swap-in, so a kernel
// with neither fentry nor kprobes has no swapin.
// Filter in the kernel: one process (-p).

#include <linux/types.h>
#include <linux/bpf.h>
#include <asm/ptrace.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "maps.bpf.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

#define TASK_COMM_LEN 16
#define MAX_PROCESSES 10240

const volatile __u32 filter_tgid = 0;

struct swapin_key {
	__u32 tgid;
	char comm[TASK_COMM_LEN];
};

BPF_HASH(counts, struct swapin_key, __u64, MAX_PROCESSES);

static __always_inline int count(void)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	if (filter_tgid && tgid != filter_tgid)
		return 0;
	struct swapin_key key = { .tgid = tgid };
	bpf_get_current_comm(&key.comm, sizeof(key.comm));
	add_delta(&counts, &key, 1);
	return 0;
}

// The group of FUNC: fentry, else kprobe.
#define ON_SWAP_READ(FUNC)                                          \
	SEC("fentry/" #FUNC)                                        \
	int BPF_PROG(scry_k_##FUNC##__fentry)                       \
	{                                                           \
		return count();                                     \
	}                                                           \
	SEC("kprobe/" #FUNC)                                        \
	int BPF_KPROBE(scry_k_##FUNC##__kprobe)                     \
	{                                                           \
		return count();                                     \
	}

ON_SWAP_READ(swap_read_folio)
ON_SWAP_READ(swap_readpage)
