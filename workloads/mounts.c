// build: -O2
// mounts N K DIR: in a mount namespace of its own (unshare, / made
// private: nothing it mounts is seen outside), N times mount(2) of a
// tmpfs on DIR (source "scry-mounts", flags MS_NOSUID | MS_NODEV, data
// "size=Ik" for the i-th, 1-based) then umount2(DIR, 0); then K mounts
// on DIR/missing (which must not exist: ENOENT). Exits 1 if a result is
// not the expected one. Prints nothing. Used for exact mountsnoop answers.
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mount.h>

int main(int argc, char **argv)
{
	if (argc < 4)
		return 2;
	long n = atol(argv[1]), k = atol(argv[2]);
	const char *dir = argv[3];
	char missing[4096], data[32];
	snprintf(missing, sizeof(missing), "%s/missing", dir);
	if (unshare(CLONE_NEWNS) != 0 || mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
		return 1;
	for (long i = 1; i <= n; i++) {
		snprintf(data, sizeof(data), "size=%ldk", i);
		if (mount("scry-mounts", dir, "tmpfs", MS_NOSUID | MS_NODEV, data) != 0)
			return 1;
		if (umount2(dir, 0) != 0)
			return 1;
	}
	for (long i = 0; i < k; i++)
		if (mount("scry-mounts", missing, "tmpfs", MS_NOSUID | MS_NODEV, "size=1k") == 0)
			return 1;
	return 0;
}
