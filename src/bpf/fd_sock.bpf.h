// SPDX-License-Identifier: (MIT OR Apache-2.0)
// The socket behind a descriptor of the current task, read through its
// file table with CO-RE: how tcpaccept, bindsnoop and solisten find the
// socket a system call worked on, at the call's exit (no kprobe on
// inet_bind or inet_listen needed). A descriptor that is not a socket
// (its inode is not S_IFSOCK: a failed bind on a regular file) gives
// NULL, so a file's private_data is never read as a socket. Include
// after sock.bpf.h.

#include "fd_file.bpf.h"

struct socket___scry {
	short type;
	struct sock___scry *sk;
} __attribute__((preserve_access_index));

static __always_inline struct socket___scry *fd_socket(long fd)
{
	struct file___scry *file = fd_file(fd);
	if (!file || (file_mode(file) & S_IFMT) != S_IFSOCK)
		return 0;
	return BPF_CORE_READ(file, private_data);
}
