// build: -O1 -g -fno-omit-frame-pointer -fno-inline -fno-optimize-sibling-calls
// leak_sites NB B NC C: NB allocations of B bytes from `leak_big` and NC
// of C bytes from `leak_small`, all kept until exit, a third of a second
// later (memleak reads a command's maps every quarter second: a program
// that ends sooner leaves its stacks unnamed). For memleak's
// --sort: with NB x B above NC x C and NC above NB, the top stack by size
// is leak_big's and by count leak_small's.
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void *volatile kept[100000];

void *leak_big(size_t size)
{
	void *p = malloc(size);
	memset(p, 1, size);
	return p;
}

void *leak_small(size_t size)
{
	void *p = malloc(size);
	memset(p, 1, size);
	return p;
}

int main(int argc, char **argv)
{
	if (argc != 5)
		return 2;
	long nb = atol(argv[1]), nc = atol(argv[3]);
	size_t b = (size_t)atol(argv[2]), c = (size_t)atol(argv[4]);
	if (nb < 0 || nc < 0 || nb + nc > 100000 || b == 0 || c == 0)
		return 2;
	for (long i = 0; i < nb; i++)
		kept[i] = leak_big(b);
	for (long i = 0; i < nc; i++)
		kept[nb + i] = leak_small(c);
	usleep(330000);
	return 0;
}
