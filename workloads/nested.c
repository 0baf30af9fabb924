// build: -O1 -g -fno-omit-frame-pointer -fno-inline -fno-optimize-sibling-calls
// nested R D MS: calls the recursive `rec_nap(D)` R times; rec_nap(d)
// calls rec_nap(d - 1) while d > 1, then sleeps MS << (d - 1) ms, so the
// call at depth K (1 the outermost) lasts about MS * (2^(D-K+1) - 1) ms and
// each level lasts about twice the one below. Prints `depth=K ns=N` for
// every call to stderr: N its caller's CLOCK_MONOTONIC time around the
// call. rec_nap is the only function named rec_*. For funclatency -l.
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

static void nap(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

static long top;
static long ms;

__attribute__((noinline)) void rec_nap(long d) {
    if (d > 1) {
        long start = now_ns();
        rec_nap(d - 1);
        fprintf(stderr, "depth=%ld ns=%ld\n", top - d + 2, now_ns() - start);
    }
    nap(ms << (d - 1));
}

int main(int argc, char **argv) {
    long r = argc > 1 ? atol(argv[1]) : 3;
    top = argc > 2 ? atol(argv[2]) : 4;
    ms = argc > 3 ? atol(argv[3]) : 1;
    if (top < 1 || top > 20 || ms < 0) {
        fprintf(stderr, "nested: D in 1..20, MS >= 0\n");
        return 2;
    }
    for (long i = 0; i < r; i++) {
        long start = now_ns();
        rec_nap(top);
        fprintf(stderr, "depth=1 ns=%ld\n", now_ns() - start);
    }
    return 0;
}
