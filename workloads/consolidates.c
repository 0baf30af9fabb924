// build: -O1 -g
// consolidates [N=1000]: N rounds of 16 small (32-byte) blocks allocated
// and freed, then a 2000-byte block: glibc keeps 7 freed small blocks per
// thread (tcache) and puts the other 9 in a fastbin, and a request that
// size sees fastbin blocks and consolidates them first, so each round
// calls libc's static malloc_consolidate once (its name is only in
// libc's debug file). For funccount LIB:PATTERN on a stripped library.
#include <stdlib.h>

void *(*volatile alloc)(size_t) = malloc;

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 1000;
    void *small[16];
    for (long i = 0; i < n; i++) {
        for (int k = 0; k < 16; k++)
            small[k] = alloc(32);
        for (int k = 0; k < 16; k++)
            free(small[k]);
        free(alloc(2000));
    }
    return 0;
}
