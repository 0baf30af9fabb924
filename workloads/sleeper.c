// build: -O1 -g -fno-omit-frame-pointer
// sleeper [N=20] [MS=5]: exactly N nanosleep calls of MS milliseconds each,
// nothing else between them; prints `sleeper pid PID` to stderr at the end.
// Each sleep is one blocking switch-out (S), one wakeup and one switch-in.
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 20;
    long ms = argc > 2 ? atol(argv[2]) : 5;
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    for (long i = 0; i < n; i++) {
        nanosleep(&ts, NULL);
    }
    fprintf(stderr, "sleeper pid %d\n", (int)getpid());
    return 0;
}
