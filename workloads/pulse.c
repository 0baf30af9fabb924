// build: -O1 -g -fno-omit-frame-pointer -fno-inline -fno-optimize-sibling-calls
// pulse [SECONDS=4] [BUSY_MS=100]: for SECONDS seconds, busy for the first
// BUSY_MS ms of every second (in `pulse_busy`), asleep for the rest; the
// seconds count from the program's start (CLOCK_MONOTONIC), so a profile's
// samples fall in one band of the sub-second offset heat map. Prints
// `pulse pid PID` to stderr at the end. The busy time is wall time (the
// band's place, not its sample count, is what the workload promises).
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Burns CPU until `until_ns`, reading the clock once every 100k rounds so
   the samples land in this function, not in the vDSO. */
__attribute__((noinline)) void pulse_busy(long long until_ns) {
    volatile unsigned long x = sink;
    do {
        for (long i = 0; i < 100000; i++) {
            x = x * 6364136223846793005UL + 1442695040888963407UL;
        }
    } while (now_ns() < until_ns);
    sink = x;
}

__attribute__((noinline)) void pulse_sleep(long long until_ns) {
    struct timespec ts = {until_ns / 1000000000LL, until_ns % 1000000000LL};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0) {
    }
}

int main(int argc, char **argv) {
    long seconds = argc > 1 ? atol(argv[1]) : 4;
    long busy_ms = argc > 2 ? atol(argv[2]) : 100;
    long long start = now_ns();
    for (long s = 0; s < seconds; s++) {
        long long second = start + s * 1000000000LL;
        pulse_busy(second + busy_ms * 1000000LL);
        pulse_sleep(second + 1000000000LL);
    }
    fprintf(stderr, "pulse pid %d\n", (int)getpid());
    return 0;
}
