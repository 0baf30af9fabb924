// build: -O2
// stats N K MISSING PRESENT: N stat-family system calls, call i being
// statfs, stat, lstat, statx and newfstatat in turn (the (i % 5)th, each
// through syscall(2), so libc picks no other call); the first K of the
// path MISSING (which must not exist: ENOENT), the others of PRESENT
// (which must exist). Exits 1 if a result is not the expected one. Prints nothing.
// Used for exact statsnoop answers.
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc < 5)
		return 2;
	long n = atol(argv[1]), k = atol(argv[2]);
	const char *missing = argv[3], *present = argv[4];
	struct stat st;
	struct statx stx;
	struct statfs sfs;
	for (long i = 0; i < n; i++) {
		const char *path = i < k ? missing : present;
		long ret;
		switch (i % 5) {
		case 0:
			ret = syscall(SYS_statfs, path, &sfs);
			break;
		case 1:
			ret = syscall(SYS_stat, path, &st);
			break;
		case 2:
			ret = syscall(SYS_lstat, path, &st);
			break;
		case 3:
			ret = syscall(SYS_statx, AT_FDCWD, path, 0, STATX_BASIC_STATS, &stx);
			break;
		default:
			ret = syscall(SYS_newfstatat, AT_FDCWD, path, &st, 0);
			break;
		}
		if ((ret == 0) != (i >= k))
			return 1;
	}
	return 0;
}
