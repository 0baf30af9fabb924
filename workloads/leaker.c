// build: -O1 -g -fno-omit-frame-pointer -fno-inline -fno-optimize-sibling-calls
// leaker K S N [wait]: exactly K allocations of S bytes from one call site
// (`leak_here`, through malloc) kept until exit, among N allocations
// freed again through each of malloc, calloc, realloc, posix_memalign,
// aligned_alloc and mmap (`freed_*`, each with its free or munmap). With
// `wait`: first prints "ready" and waits for a line on stdin (so a tracer
// can attach to it with -p), and after, prints "leaked" and waits for end
// of file on stdin (so the tracer reports while it lives). For memleak:
// K x S outstanding at leak_here, nothing from the freed sites.
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static void *volatile kept[100000];
// Each freed site stores its pointer here before it frees it: without the
// volatile store gcc drops `free(malloc(n))` (and calloc's, aligned_alloc's)
// as a whole, and those sites would never call the allocator.
static void *volatile passing;

void *leak_here(size_t size)
{
	void *p = malloc(size);
	memset(p, 1, size);
	return p;
}

void freed_malloc(size_t size)
{
	passing = malloc(size);
	free(passing);
}

void freed_calloc(size_t size)
{
	passing = calloc(2, size);
	free(passing);
}

void freed_realloc(size_t size)
{
	passing = malloc(size);
	passing = realloc(passing, size * 4);
	free(passing);
}

void freed_memalign(size_t size)
{
	void *p = NULL;
	if (posix_memalign(&p, 64, size) == 0) {
		passing = p;
		free(passing);
	}
}

void freed_aligned(size_t size)
{
	passing = aligned_alloc(64, size);
	free(passing);
}

void freed_mmap(size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p != MAP_FAILED)
		munmap(p, size);
}

int main(int argc, char **argv)
{
	if (argc < 4)
		return 2;
	long k = atol(argv[1]), n = atol(argv[3]);
	size_t s = (size_t)atol(argv[2]);
	if (k < 0 || k > 100000 || s == 0)
		return 2;
	char buf[64];
	if (argc > 4) {
		printf("ready\n");
		fflush(stdout);
		if (read(0, buf, sizeof(buf)) <= 0)
			return 1;
	}
	for (long i = 0; i < n; i++) {
		freed_malloc(16 + (size_t)(i & 63));
		freed_calloc(8);
		freed_realloc(32);
		freed_memalign(128);
		freed_aligned(256);
		freed_mmap(4096);
		if (i < k)
			kept[i] = leak_here(s);
	}
	for (long i = n; i < k; i++)
		kept[i] = leak_here(s);
	if (argc > 4) {
		printf("leaked\n");
		fflush(stdout);
		while (read(0, buf, sizeof(buf)) > 0)
			;
	}
	return 0;
}
