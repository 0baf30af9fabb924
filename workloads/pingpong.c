// build: -O1 -g -fno-omit-frame-pointer -pthread
// pingpong [M]: two threads pass a byte back and forth over two pipes, M
// round trips (default 1000); every read blocks, so each round trip is two
// wakeups (one of each thread). Prints `pingpong tids A B` to stderr.
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

static int ping[2], pong[2];
static int rounds;

static void *ponger(void *arg) {
    (void)arg;
    char c;
    fprintf(stderr, "pingpong ponger %ld\n", (long)syscall(SYS_gettid));
    for (int i = 0; i < rounds; i++) {
        if (read(ping[0], &c, 1) != 1 || write(pong[1], &c, 1) != 1) exit(1);
    }
    return NULL;
}

int main(int argc, char **argv) {
    rounds = argc > 1 ? atoi(argv[1]) : 1000;
    if (pipe(ping) || pipe(pong)) return 1;
    pthread_t t;
    pthread_create(&t, NULL, ponger, NULL);
    fprintf(stderr, "pingpong pinger %ld\n", (long)syscall(SYS_gettid));
    char c = 'x';
    for (int i = 0; i < rounds; i++) {
        if (write(ping[1], &c, 1) != 1 || read(pong[0], &c, 1) != 1) return 1;
    }
    pthread_join(t, NULL);
    return 0;
}
