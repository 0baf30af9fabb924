// SPDX-License-Identifier: (MIT OR Apache-2.0)
// The socket behind a descriptor of the current task, read through its
// file table with CO-RE: how tcpaccept, bindsnoop and solisten find the
// socket a system call worked on, at the call's exit (no kprobe on
// inet_bind or inet_listen needed). A descriptor that is not a socket
// (its inode is not S_IFSOCK: a failed bind on a regular file) gives
// NULL, so a file's private_data is never read as a socket. Include
// after sock.bpf.h.

#define S_IFMT 00170000
#define S_IFSOCK 0140000

struct inode___scry {
	unsigned short i_mode;
} __attribute__((preserve_access_index));

struct file___scry {
	struct inode___scry *f_inode;
	void *private_data;
} __attribute__((preserve_access_index));

struct fdtable___scry {
	unsigned int max_fds;
	struct file___scry **fd;
} __attribute__((preserve_access_index));

struct files_struct___scry {
	struct fdtable___scry *fdt;
} __attribute__((preserve_access_index));

struct task_struct___scry_files {
	struct files_struct___scry *files;
} __attribute__((preserve_access_index));

struct socket___scry {
	short type;
	struct sock___scry *sk;
} __attribute__((preserve_access_index));

static __always_inline struct socket___scry *fd_socket(long fd)
{
	if (fd < 0)
		return 0;
	struct task_struct___scry_files *task = (void *)bpf_get_current_task();
	struct fdtable___scry *fdt = BPF_CORE_READ(task, files, fdt);
	if (!fdt || (unsigned long)fd >= BPF_CORE_READ(fdt, max_fds))
		return 0;
	struct file___scry **fds = BPF_CORE_READ(fdt, fd);
	struct file___scry *file = 0;
	bpf_probe_read_kernel(&file, sizeof(file), &fds[fd]);
	if (!file)
		return 0;
	if ((BPF_CORE_READ(file, f_inode, i_mode) & S_IFMT) != S_IFSOCK)
		return 0;
	return BPF_CORE_READ(file, private_data);
}
