// build: -O1 -g
// mallocs [N=100000]: exactly N malloc/free pairs (through a volatile
// function pointer, so the compiler cannot drop them), then exits. For
// uprobes on libc's malloc.
#include <stdio.h>
#include <stdlib.h>

void *(*volatile alloc)(size_t) = malloc;

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 100000;
    for (long i = 0; i < n; i++)
        free(alloc(32 + (i & 63)));
    return 0;
}
