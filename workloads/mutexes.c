// build: -O1 -g -fno-omit-frame-pointer -fno-inline -fno-optimize-sibling-calls -pthread
// mutexes [THREADS=4] [ROUNDS=50] [HOLD_US=1000]: THREADS threads, named
// `locker0`.., each ROUNDS times take one shared pthread mutex in
// take_lock(), hold it HOLD_US microseconds (asleep, so the others block
// in the kernel) and let it go. Each measures the time it spent inside
// pthread_mutex_lock; on exit it prints, to stderr, one line per thread
// `locker tid=T blocked_us=B` and the mutex's address `lock=0xADDR`.
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t shared = PTHREAD_MUTEX_INITIALIZER;
static int rounds, hold_us;

struct locker {
    pthread_t thread;
    int index;
    long tid;
    long long blocked_ns;
};

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Takes the shared mutex; returns the nanoseconds it waited for it. */
__attribute__((noinline)) long long take_lock(void) {
    long long start = now_ns();
    pthread_mutex_lock(&shared);
    return now_ns() - start;
}

static void *locker(void *arg) {
    struct locker *me = arg;
    char name[16];
    snprintf(name, sizeof name, "locker%d", me->index);
    pthread_setname_np(pthread_self(), name);
    me->tid = syscall(SYS_gettid);
    struct timespec hold = {0, hold_us * 1000L};
    for (int i = 0; i < rounds; i++) {
        me->blocked_ns += take_lock();
        nanosleep(&hold, NULL);
        pthread_mutex_unlock(&shared);
    }
    return NULL;
}

int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 4;
    rounds = argc > 2 ? atoi(argv[2]) : 50;
    hold_us = argc > 3 ? atoi(argv[3]) : 1000;
    if (threads < 1 || threads > 64) return 2;
    struct locker lockers[64] = {0};
    for (int i = 0; i < threads; i++) {
        lockers[i].index = i;
        if (pthread_create(&lockers[i].thread, NULL, locker, &lockers[i])) return 1;
    }
    for (int i = 0; i < threads; i++) pthread_join(lockers[i].thread, NULL);
    for (int i = 0; i < threads; i++)
        fprintf(stderr, "locker tid=%ld blocked_us=%lld\n", lockers[i].tid,
                lockers[i].blocked_ns / 1000);
    fprintf(stderr, "lock=%p\n", (void *)&shared);
    return 0;
}
