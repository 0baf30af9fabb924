// build: -O1 -g
// hog MB [wait]: allocates MB MiB one MiB at a time and writes every page
// (anonymous memory, kept), then exits 0. With `wait`, first prints
// "ready" and waits for a line on stdin (so a test can move it into a
// memory cgroup and attach tracers). In a cgroup limited below MB, the
// allocations make the cgroup reclaim and then the OOM killer kill it.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	long mb = argc > 1 ? atol(argv[1]) : 64;
	if (argc > 2) {
		char line[16];
		printf("ready\n");
		fflush(stdout);
		if (read(0, line, sizeof(line)) <= 0)
			return 1;
	}
	for (long i = 0; i < mb; i++) {
		char *p = malloc(1 << 20);
		if (!p)
			return 1;
		memset(p, 1, 1 << 20);
	}
	return 0;
}
