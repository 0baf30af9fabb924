// build: -O1 -g -fno-omit-frame-pointer -fno-inline -fno-optimize-sibling-calls -pthread
// threads [N] [ROUNDS]: starts N threads (1..8, default 4); thread i burns
// ROUNDS work units (default 30, about 10 ms each) in its own function
// worker_<i>. Each thread prints "thread <i> tid <tid>" on stdout first, so
// a test can match the tid it sees in the samples with the function, and
// "done <i> tid <tid> cpu_ms <ms>" when its work is done.
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "work.h"

#define MAX_THREADS 8

static volatile unsigned long sink;
static long unit = 8000000L;
/* ROUNDS may be a CPU time per thread ("1s"); SCRY_WORK_SCALE scales a
   unit (work.h). */
static struct work_budget rounds = {30, 0, 0, 0};
static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;

/* Each worker holds its own loop, so samples land in worker_<i> itself.
   The volatile local makes it touch its stack, so gcc keeps the frame
   pointer in this leaf (it drops it otherwise). */
#define WORKER(n)                                                        \
    __attribute__((noinline)) void worker_##n(void) {                    \
        volatile unsigned long x = sink;                                 \
        struct work_budget units = rounds;                               \
        while (work_more(&units)) {                                      \
            for (long i = 0; i < unit; i++) {                            \
                x = x * 6364136223846793005UL + 1442695040888963407UL;   \
            }                                                            \
        }                                                                \
        sink = x;                                                        \
    }
WORKER(0) WORKER(1) WORKER(2) WORKER(3) WORKER(4) WORKER(5) WORKER(6) WORKER(7)

static void (*const workers[MAX_THREADS])(void) = {
    worker_0, worker_1, worker_2, worker_3, worker_4, worker_5, worker_6, worker_7,
};

static void *thread_main(void *arg) {
    long i = (long)arg;
    pthread_mutex_lock(&out_lock);
    printf("thread %ld tid %ld\n", i, (long)syscall(SYS_gettid));
    fflush(stdout);
    pthread_mutex_unlock(&out_lock);
    workers[i]();
    /* The CPU time the thread had, for tests that add up its runs. */
    double cpu = work_thread_seconds();
    pthread_mutex_lock(&out_lock);
    printf("done %ld tid %ld cpu_ms %.3f\n", i, (long)syscall(SYS_gettid), cpu * 1e3);
    fflush(stdout);
    pthread_mutex_unlock(&out_lock);
    return NULL;
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 4;
    unit = work_unit(unit);
    if (argc > 2) rounds = work_budget(argv[2], 30);
    if (n < 1 || n > MAX_THREADS) {
        fprintf(stderr, "threads: N must be 1..%d\n", MAX_THREADS);
        return 2;
    }
    pthread_t tids[MAX_THREADS];
    for (long i = 0; i < n; i++) {
        if (pthread_create(&tids[i], NULL, thread_main, (void *)i) != 0) {
            perror("pthread_create");
            return 1;
        }
    }
    for (long i = 0; i < n; i++) pthread_join(tids[i], NULL);
    return 0;
}
