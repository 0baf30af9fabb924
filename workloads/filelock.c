// build: -O1 -g -fno-omit-frame-pointer -pthread
// filelock FILE [WRITERS=4] [ROUNDS=200] [KB=4]: WRITERS threads each
// append KB KiB to FILE with O_DIRECT, ROUNDS times: an appending direct
// write holds the file's inode lock (i_rwsem, for writing) until its I/O
// is done, so the writers sleep waiting for it in the kernel
// (lock:contention_begin, rwsem:W).
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

static int fd, rounds;
static size_t bytes;

static void *writer(void *arg) {
    void *buf;
    (void)arg;
    if (posix_memalign(&buf, 4096, bytes)) exit(1);
    for (int i = 0; i < rounds; i++)
        if (write(fd, buf, bytes) != (ssize_t)bytes) exit(1);
    free(buf);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    int writers = argc > 2 ? atoi(argv[2]) : 4;
    rounds = argc > 3 ? atoi(argv[3]) : 200;
    bytes = (size_t)(argc > 4 ? atoi(argv[4]) : 4) * 1024;
    if (writers < 1 || writers > 64 || rounds < 1 || bytes < 1) return 2;
    fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_DIRECT, 0600);
    if (fd < 0) return 1;
    pthread_t threads[64];
    for (int i = 0; i < writers; i++) pthread_create(&threads[i], NULL, writer, NULL);
    for (int i = 0; i < writers; i++) pthread_join(threads[i], NULL);
    return 0;
}
