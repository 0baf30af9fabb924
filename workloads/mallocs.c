// build: -O1 -g
// mallocs [N=100000] [wait]: exactly N malloc/free pairs (through a
// volatile function pointer, so the compiler cannot drop them), then
// exits. With `wait`, first prints "ready" and waits for a line on stdin
// (so a tracer can attach to the running program with -p). For uprobes
// on libc's malloc.
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

void *(*volatile alloc)(size_t) = malloc;

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 100000;
    if (argc > 2) {
        char line[16];
        printf("ready\n");
        fflush(stdout);
        if (read(0, line, sizeof(line)) <= 0)
            return 1;
    }
    for (long i = 0; i < n; i++)
        free(alloc(32 + (i & 63)));
    return 0;
}
