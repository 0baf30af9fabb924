// SPDX-License-Identifier: (MIT OR Apache-2.0)
// One hook written once, compiled as two programs: `GROUP__btf` on
// tp_btf/TP and `GROUP__raw` on raw_tp/TP, the same body (its arguments
// read with BPF_CORE_READ, which both allow). The engine
// (src/sys/bpf_engine.rs) loads the first the kernel accepts.
//
//   BTF_OR_RAW(scry_cd_switch, "sched_switch", on_switch(prev, next),
//              bool preempt, struct task_struct *prev, struct task_struct *next)

#define BTF_OR_RAW(group, tp, call, ...)                        \
	SEC("tp_btf/" tp)                                       \
	int BPF_PROG(group##__btf, __VA_ARGS__)                 \
	{                                                       \
		call;                                           \
		return 0;                                       \
	}                                                       \
	SEC("raw_tp/" tp)                                       \
	int BPF_PROG(group##__raw, __VA_ARGS__)                 \
	{                                                       \
		call;                                           \
		return 0;                                       \
	}
