// build: -O1 -g -fno-omit-frame-pointer -fno-inline -fno-optimize-sibling-calls
// forker [K] [ROUNDS]: forks K children (default 3); each prints
// "child <i> pid <pid>", burns ROUNDS work units (default 20, about 10 ms
// each) in child_work and exits; the parent waits for all of them, then
// burns ROUNDS/4 units in parent_work. ROUNDS may be a CPU time ("1s": each
// child that long, the parent a quarter); SCRY_WORK_SCALE scales a unit
// (work.h).
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "work.h"

static long unit = 8000000L;

static volatile unsigned long sink;

/* Each function holds its own loop, so samples land in it. The volatile
   local makes it touch its stack, so gcc keeps the frame pointer in this
   leaf (it drops it otherwise). */
#define BURNER(name)                                                     \
    __attribute__((noinline)) void name(struct work_budget units) {      \
        volatile unsigned long x = sink;                                 \
        while (work_more(&units)) {                                      \
            for (long i = 0; i < unit; i++) {                            \
                x = x * 6364136223846793005UL + 1442695040888963407UL;   \
            }                                                            \
        }                                                                \
        sink = x;                                                        \
    }
BURNER(child_work)
BURNER(parent_work)

int main(int argc, char **argv) {
    long k = argc > 1 ? atol(argv[1]) : 3;
    unit = work_unit(unit);
    struct work_budget rounds = work_budget(argc > 2 ? argv[2] : NULL, 20);
    fflush(stdout);
    for (long i = 0; i < k; i++) {
        pid_t pid = fork();
        if (pid < 0) {
            perror("fork");
            return 1;
        }
        if (pid == 0) {
            printf("child %ld pid %ld\n", i, (long)getpid());
            fflush(stdout);
            child_work(rounds);
            _exit(0);
        }
    }
    int status = 0;
    while (wait(&status) > 0) {
    }
    struct work_budget quarter = rounds;
    quarter.rounds = rounds.rounds / 4 > 0 ? rounds.rounds / 4 : (rounds.rounds < 0 ? -1 : 1);
    quarter.seconds = rounds.seconds / 4;
    parent_work(quarter);
    return 0;
}
