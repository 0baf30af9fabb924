// build: -O2
// lifes N DIR MS: prints "ready", waits for a line on stdin, then creates
// N files DIR/life_0 .. DIR/life_<N-1> (open O_CREAT|O_EXCL, close),
// sleeps MS ms, and unlinks each. Exits 1 if a call fails.
// filelife -p: N deletions, each of its path as written, at least MS ms old.
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc < 4)
		return 2;
	long n = atol(argv[1]), ms = atol(argv[3]);
	char path[4096], line[16];
	printf("ready\n");
	fflush(stdout);
	if (read(0, line, sizeof(line)) <= 0)
		return 1;
	for (long i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/life_%ld", argv[2], i);
		int fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0600);
		if (fd < 0 || close(fd))
			return 1;
	}
	struct timespec pause = {ms / 1000, (ms % 1000) * 1000000};
	nanosleep(&pause, NULL);
	for (long i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/life_%ld", argv[2], i);
		if (unlink(path))
			return 1;
	}
	return 0;
}
