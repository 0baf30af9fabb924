// build: -O2 -fno-omit-frame-pointer -fno-optimize-sibling-calls
// caps N: prints "ready", lowers its hard RLIMIT_NOFILE by one, waits
// for a line on stdin, then N times tries to raise it back (and, when
// that worked, lowers it again): each raise is one capability check of
// CAP_SYS_RESOURCE (24), allowed with the capability, denied (EPERM)
// without; nothing else it does after the line checks a capability.
// Prints "raised R of N" at the end. The raises are made from
// raise_limits (through try_raise, so a frame-pointer walk from libc's
// frameless setrlimit still finds raise_limits): capable -U's stack.
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

// One raise, lowered again when it worked: 1 raised, 0 denied, -1 error.
__attribute__((noinline)) static int try_raise(const struct rlimit *lim,
					       const struct rlimit *lower)
{
	if (setrlimit(RLIMIT_NOFILE, lim))
		return 0;
	return setrlimit(RLIMIT_NOFILE, lower) ? -1 : 1;
}

// N raises; how many worked, -1 on an error.
__attribute__((noinline)) long raise_limits(long n, const struct rlimit *lim,
					    const struct rlimit *lower)
{
	long raised = 0;
	for (long i = 0; i < n; i++) {
		int r = try_raise(lim, lower);
		if (r < 0)
			return -1;
		raised += r;
	}
	return raised;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 10;
	struct rlimit lim;
	if (getrlimit(RLIMIT_NOFILE, &lim) || lim.rlim_max < 2)
		return 2;
	struct rlimit lower = {lim.rlim_cur < lim.rlim_max - 1 ? lim.rlim_cur : lim.rlim_max - 1,
			       lim.rlim_max - 1};
	if (setrlimit(RLIMIT_NOFILE, &lower))
		return 1;
	printf("ready\n");
	fflush(stdout);
	char line[16];
	if (read(0, line, sizeof(line)) <= 0)
		return 1;
	long raised = raise_limits(n, &lim, &lower);
	if (raised < 0)
		return 1;
	printf("raised %ld of %ld\n", raised, n);
	return 0;
}
