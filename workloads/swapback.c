// build: -O1 -g
// swapback MB [ROUNDS=1]: maps MB MiB of anonymous memory (no huge pages:
// one folio per page), fills every page with a non-zero byte and its own
// number (so no page is zero-filled, which 6.12's swap keeps out of the
// swap device and reads back without counting a swap-in), then ROUNDS
// times reads every page back in order, checking its number; exits 1 on
// a wrong page. In a memory cgroup limited below MB with swap on, the
// pages written first are swapped out, and each round swaps them in.
// Prints "swapback pid PID pages N" when done.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	long mb = argc > 1 ? atol(argv[1]) : 64;
	long rounds = argc > 2 ? atol(argv[2]) : 1;
	long page = sysconf(_SC_PAGESIZE);
	long pages = mb * (1L << 20) / page;
	if (pages < 1 || page < (long)sizeof(long))
		return 2;
	char *mem = mmap(NULL, pages * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		return 1;
	madvise(mem, pages * page, MADV_NOHUGEPAGE);
	for (long i = 0; i < pages; i++) {
		char *p = mem + i * page;
		memset(p, (int)(i % 251) + 1, page);
		memcpy(p, &i, sizeof(i));
	}
	for (long r = 0; r < rounds; r++) {
		for (long i = 0; i < pages; i++) {
			long got;
			memcpy(&got, mem + i * page, sizeof(got));
			if (got != i)
				return 1;
		}
	}
	printf("swapback pid %d pages %ld\n", (int)getpid(), pages);
	return 0;
}
