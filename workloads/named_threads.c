// build: -O1 -g -pthread
// named_threads [N=3]: starts N threads (1..8) one after another; thread i
// prints "thread <i> tid <tid>" on stdout, makes one getppid system call
// under the name it inherited (the main thread's, "named_threads"), names
// itself "worker-<i>" (prctl PR_SET_NAME), makes a second getppid and ends.
// For tracers that must name threads born after tracing began.
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static void *thread_main(void *arg) {
    long i = (long)arg;
    printf("thread %ld tid %ld\n", i, (long)syscall(SYS_gettid));
    fflush(stdout);
    syscall(SYS_getppid);
    char name[16];
    snprintf(name, sizeof name, "worker-%ld", i);
    prctl(PR_SET_NAME, name, 0, 0, 0);
    syscall(SYS_getppid);
    return NULL;
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 3;
    if (n < 1 || n > 8) {
        fprintf(stderr, "named_threads: N must be 1..8\n");
        return 2;
    }
    for (long i = 0; i < n; i++) {
        pthread_t t;
        if (pthread_create(&t, NULL, thread_main, (void *)i) != 0) {
            perror("pthread_create");
            return 1;
        }
        pthread_join(t, NULL);
    }
    return 0;
}
