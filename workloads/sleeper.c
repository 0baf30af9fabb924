// build: -O1 -g -fno-omit-frame-pointer -Wl,-z,now
// sleeper [N=20] [MS=5]: exactly N nanosleep calls of MS milliseconds each,
// nothing else between them; prints `sleeper pid PID` to stderr at the end,
// then `sleeper blocked K`: the times it switched out blocked during the
// sleeps (its voluntary context switches, by getrusage before and after;
// bound at load, -z now, so no lazy binding can block between them).
// Each sleep is one blocking switch-out (S), one wakeup and one switch-in,
// unless it was preempted between arming its timer and blocking and stayed
// off the CPU past the timer (it then never blocks): K says how many did.
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 20;
    long ms = argc > 2 ? atol(argv[2]) : 5;
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    struct rusage before, after;
    getrusage(RUSAGE_SELF, &before);
    for (long i = 0; i < n; i++) {
        nanosleep(&ts, NULL);
    }
    getrusage(RUSAGE_SELF, &after);
    fprintf(stderr, "sleeper pid %d\n", (int)getpid());
    fprintf(stderr, "sleeper blocked %ld\n", after.ru_nvcsw - before.ru_nvcsw);
    return 0;
}
