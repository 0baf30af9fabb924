// build: -O1 -g -fno-omit-frame-pointer -fno-inline -fno-optimize-sibling-calls
// funcs N K MS [wait]: calls fn_alpha exactly N times and fn_beta exactly
// 2N times (each a few instructions), then fn_nap K times, each sleeping
// MS ms in nanosleep, and prints `nap_ns=D` (CLOCK_MONOTONIC around each
// call, measured by the caller) for each nap to stderr. The three are
// the only functions named fn_*. With `wait`, first prints "ready" and
// waits for a line on stdin (so a tracer can attach with -p). For
// funccount and funclatency.
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

volatile long sink;

__attribute__((noinline)) void fn_alpha(long i) { sink += i; }

__attribute__((noinline)) void fn_beta(long i) { sink -= i; }

__attribute__((noinline)) void fn_nap(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

static long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 1000;
    long k = argc > 2 ? atol(argv[2]) : 0;
    long ms = argc > 3 ? atol(argv[3]) : 10;
    if (argc > 4) {
        char line[16];
        printf("ready\n");
        fflush(stdout);
        if (read(0, line, sizeof(line)) <= 0)
            return 1;
    }
    for (long i = 0; i < n; i++) {
        fn_alpha(i);
        fn_beta(i);
        fn_beta(i);
    }
    for (long i = 0; i < k; i++) {
        long start = now_ns();
        fn_nap(ms);
        fprintf(stderr, "nap_ns=%ld\n", now_ns() - start);
    }
    return 0;
}
