// build: -O1 -g -fno-omit-frame-pointer -fno-inline -fno-optimize-sibling-calls -pthread
// piper [N] [MS]: N times (default 50) the main thread sends a byte down a
// pipe and blocks reading the answer in wait_for_reply(); a second thread,
// named `answerer`, reads the request, sleeps MS milliseconds (default 10)
// and answers in send_reply(). The read and the answer's write are
// `syscall` instructions inside those functions (not libc's read and
// write, whose missing frame pointer would hide their caller from a
// frame-pointer walk). On exit it prints, to stderr, `piper tid=T
// blocked_us=B`: the main thread's id and the time it spent in those
// reads, measured around each.
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int request[2], reply[2];
static int rounds, delay_ms;

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Writes the answer: the write wakes the main thread. */
__attribute__((noinline)) void send_reply(char c) {
    long ret;
    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "0"((long)SYS_write), "D"((long)reply[1]), "S"(&c), "d"(1L)
                     : "rcx", "r11", "memory");
    if (ret != 1) exit(1);
}

static void *answerer(void *arg) {
    (void)arg;
    char c;
    struct timespec delay = {0, delay_ms * 1000000L};
    pthread_setname_np(pthread_self(), "answerer");
    for (int i = 0; i < rounds; i++) {
        if (read(request[0], &c, 1) != 1) exit(1);
        nanosleep(&delay, NULL);
        send_reply(c);
    }
    return NULL;
}

/* Blocks until the answer comes; returns the nanoseconds it waited. */
__attribute__((noinline)) long long wait_for_reply(void) {
    volatile char c = 0;
    long long start = now_ns();
    long ret;
    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "0"((long)SYS_read), "D"((long)reply[0]), "S"(&c), "d"(1L)
                     : "rcx", "r11", "memory");
    long long waited = now_ns() - start;
    if (ret != 1) exit(1);
    return waited;
}

int main(int argc, char **argv) {
    rounds = argc > 1 ? atoi(argv[1]) : 50;
    delay_ms = argc > 2 ? atoi(argv[2]) : 10;
    if (pipe(request) || pipe(reply)) return 1;
    pthread_t t;
    pthread_create(&t, NULL, answerer, NULL);
    long long blocked = 0;
    for (int i = 0; i < rounds; i++) {
        char c = 'x';
        if (write(request[1], &c, 1) != 1) return 1;
        blocked += wait_for_reply();
    }
    pthread_join(t, NULL);
    fprintf(stderr, "piper tid=%ld blocked_us=%lld\n", (long)syscall(SYS_gettid), blocked / 1000);
    return 0;
}
