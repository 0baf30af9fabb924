// SPDX-License-Identifier: (MIT OR Apache-2.0)
// The records of the classic system-call tracepoints (raw_syscalls:* and
// syscalls:sys_enter_NAME / sys_exit_NAME): eight bytes of common fields,
// then the call number, then the arguments or the return value.

struct sys_enter_record {
	__u64 common;
	long id;
	unsigned long args[6];
};

struct sys_exit_record {
	__u64 common;
	long id;
	long ret;
};
