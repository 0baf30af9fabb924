// SPDX-License-Identifier: (MIT OR Apache-2.0)
// The open file behind a descriptor of the current task, read through its
// file table with CO-RE (task->files->fdt->fd[fd]), and what the file
// tools read of it: its inode (mode, number, device), its dentry's name
// and its position. How the tools on system-call tracepoints (filetop,
// fsslower; tcpaccept, bindsnoop and solisten through fd_sock.bpf.h) find
// the file a call worked on without a kprobe on vfs_read or inet_bind.
// The walk is only valid for the current task, in its own call: the
// table cannot change under a call of the task's own thread, though
// another thread of the process may close the descriptor (then NULL, or
// the file that took its number: the race bcc's fd-based tools have too).

#define S_IFMT 00170000
#define S_IFSOCK 0140000
#define S_IFREG 0100000

struct file_system_type___scry {
	const char *name;
} __attribute__((preserve_access_index));

struct super_block___scry {
	unsigned int s_dev;
	struct file_system_type___scry *s_type;
} __attribute__((preserve_access_index));

struct inode___scry {
	unsigned short i_mode;
	unsigned long i_ino;
	unsigned int i_rdev;
	struct super_block___scry *i_sb;
} __attribute__((preserve_access_index));

struct qstr___scry {
	const unsigned char *name;
} __attribute__((preserve_access_index));

struct dentry___scry {
	struct qstr___scry d_name;
	struct dentry___scry *d_parent;
	struct inode___scry *d_inode;
} __attribute__((preserve_access_index));

struct path___scry {
	struct dentry___scry *dentry;
} __attribute__((preserve_access_index));

struct file___scry {
	struct path___scry f_path;
	struct inode___scry *f_inode;
	long long f_pos;
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

// The file open as `fd` in the current task; NULL when none.
static __always_inline struct file___scry *fd_file(long fd)
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
	return file;
}

// The file's inode mode (S_IFMT bits and permissions).
static __always_inline unsigned short file_mode(struct file___scry *file)
{
	return BPF_CORE_READ(file, f_inode, i_mode);
}

// The file's name (its dentry's, the last component of its path) into
// `buf` of `len` bytes; an empty string when unreadable.
static __always_inline void file_name(struct file___scry *file, char *buf, __u32 len)
{
	const unsigned char *name = BPF_CORE_READ(file, f_path.dentry, d_name.name);
	if (bpf_probe_read_kernel_str(buf, len, name) < 0)
		buf[0] = '\0';
}
