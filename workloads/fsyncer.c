// build: -O1 -g -fno-omit-frame-pointer -fno-inline -fno-optimize-sibling-calls
// fsyncer [N] [PATH]: N times (default 100) writes 4 KiB to PATH (default a
// file in /tmp, removed at the end) and fsyncs it: a task that spends most
// of its life blocked in fsync. On exit it prints, to stderr,
// `fsyncer wall_ns=W cpu_ns=C`: the time from the start of main to the
// end of the work and the CPU it used in that same window (exec and the
// loader's CPU left out), so a test can check off-CPU totals against
// wall - cpu.
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/* The scheduler's own runtime, to the nanosecond (getrusage's can lag a
 * tick behind). */
static long long cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

__attribute__((noinline)) static void write_and_sync(int fd, const char *buf) {
    if (write(fd, buf, 4096) != 4096) exit(1);
    if (fsync(fd) != 0) exit(1);
    __asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv) {
    long long start = now_ns();
    long long cpu_start = cpu_ns();
    int n = argc > 1 ? atoi(argv[1]) : 100;
    char path[64];
    if (argc > 2) {
        snprintf(path, sizeof path, "%s", argv[2]);
    } else {
        snprintf(path, sizeof path, "/tmp/fsyncer.%d", (int)getpid());
    }
    static char buf[4096];
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return 1;
    for (int i = 0; i < n; i++) write_and_sync(fd, buf);
    close(fd);
    unlink(path);
    long long cpu = cpu_ns() - cpu_start;
    fprintf(stderr, "fsyncer wall_ns=%lld cpu_ns=%lld\n", now_ns() - start, cpu);
    return 0;
}
