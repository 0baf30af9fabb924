// build: -shared -fPIC -O1 -g -fno-omit-frame-pointer
// bump_alloc: a shared library (built as a file without the .so name) with
// its own malloc, calloc, realloc and free over a static arena: preloaded
// (LD_PRELOAD) it replaces libc's allocator, so that memleak -O must name
// it to see the allocations (libc's malloc is never called). Allocations
// are 16-byte aligned and never reused; free does nothing.
#include <stddef.h>
#include <string.h>

#define ARENA (32 << 20)

static char arena[ARENA] __attribute__((aligned(16)));
static size_t used;

void *malloc(size_t size)
{
	size_t need = (size + 15) & ~(size_t)15;
	if (need < size || need > ARENA - used)
		return NULL;
	void *p = arena + used;
	used += need;
	return p;
}

void free(void *p)
{
	(void)p;
}

void *calloc(size_t n, size_t size)
{
	if (size && n > (size_t)-1 / size)
		return NULL;
	void *p = malloc(n * size);
	if (p)
		memset(p, 0, n * size);
	return p;
}

void *realloc(void *old, size_t size)
{
	void *p = malloc(size);
	if (p && old) {
		// The old block's size is unknown: copy what fits in the arena.
		size_t room = (size_t)(arena + used - (char *)old);
		memcpy(p, old, size < room ? size : room);
	}
	return p;
}
