// build: -O2 -pthread
// storm CALLS RATE [THREADS]: exactly CALLS getppid system calls through
// syscall(SYS_getppid) (as calls does), split over THREADS threads (default
// 1), paced to RATE calls per second in total (0: as fast as they go).
// Pacing spins on clock_gettime (the vDSO: no system call), so the only
// system calls in the loop are the counted ones. Prints "storm: CALLS
// calls in SECS s" to stderr at the end (the achieved rate). Used for event
// rates.
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static double per_thread_rate;
static atomic_int finished;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *storm(void *arg) {
    long n = *(long *)arg;
    double start = now();
    for (long i = 0; i < n; i++) {
        if (per_thread_rate > 0 && i % 32 == 0) {
            double due = start + i / per_thread_rate;
            while (now() < due) {
            }
        }
        syscall(SYS_getppid);
    }
    atomic_fetch_add(&finished, 1);
    return NULL;
}

// Other threads spin once done (no futex, no exit: the system calls of a
// run are exactly the counted ones plus a fixed startup) until exit_group.
static void *storm_then_spin(void *arg) {
    storm(arg);
    for (;;) {
    }
    return NULL;
}

int main(int argc, char **argv) {
    long calls = argc > 1 ? atol(argv[1]) : 1000000;
    double rate = argc > 2 ? atof(argv[2]) : 0;
    int threads = argc > 3 ? atoi(argv[3]) : 1;
    if (threads < 1)
        threads = 1;
    long share = calls / threads;
    // The main thread takes its share plus the remainder.
    long mine = share + calls % threads;
    per_thread_rate = rate / threads;
    pthread_t tids[threads];
    for (int t = 1; t < threads; t++)
        pthread_create(&tids[t], NULL, storm_then_spin, &share);
    double start = now();
    storm(&mine);
    while (atomic_load(&finished) < threads) {
    }
    fprintf(stderr, "storm: %ld calls in %.6f s\n", calls, now() - start);
    return 0;
}
