// build: -O2
// vfsops R W F O C FILE: prints "ready" and waits for a byte on stdin
// (so a tracer can attach to a process past its startup), then makes
// exactly C opens of FILE with O_CREAT (the first kept open), O opens of
// /dev/null without, W one-byte writes, F fsyncs and R one-byte preads,
// all through the first descriptor; exits 1 if one fails. Nothing else
// between the byte and the exit reads, writes, syncs or opens.
// Used for exact vfsstat counts.
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc < 7)
		return 2;
	long r = atol(argv[1]), w = atol(argv[2]), f = atol(argv[3]);
	long o = atol(argv[4]), c = atol(argv[5]);
	if (c < 1)
		return 2;
	printf("ready\n");
	fflush(stdout);
	char byte;
	if (read(0, &byte, 1) != 1)
		return 1;
	int fd = -1;
	for (long i = 0; i < c; i++) {
		int created = open(argv[6], O_RDWR | O_CREAT, 0600);
		if (created < 0)
			return 1;
		if (fd < 0)
			fd = created;
		else
			close(created);
	}
	for (long i = 0; i < o; i++) {
		int null = open("/dev/null", O_RDONLY);
		if (null < 0)
			return 1;
		close(null);
	}
	for (long i = 0; i < w; i++)
		if (write(fd, "x", 1) != 1)
			return 1;
	for (long i = 0; i < f; i++)
		if (fsync(fd))
			return 1;
	for (long i = 0; i < r; i++)
		if (pread(fd, &byte, 1, 0) != 1)
			return 1;
	return 0;
}
