/* work.h: what the workloads that burn CPU share.

   SCRY_WORK_SCALE (a number, default 1) scales the size of a unit of work:
   0.5 makes every unit take half as long, as on a machine twice as fast,
   so a run of the tests with it shows which assertions assume a speed.
   The split of the work between functions does not change.

   A count of rounds (or units) may instead be a time, "1.5s": whole rounds
   until the calling thread has had that much CPU time
   (CLOCK_THREAD_CPUTIME_ID, what perf's cpu-clock samples), so a test asks
   for as many samples as it needs on any machine, loaded or not. Reading
   the clock once a round (vDSO, no system call) leaves the profile alone.
   The time is not scaled. */
#ifndef SCRY_WORK_H
#define SCRY_WORK_H

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* `base` iterations, times SCRY_WORK_SCALE (at least 1). */
static long work_unit(long base) {
    const char *text = getenv("SCRY_WORK_SCALE");
    double scale = text ? atof(text) : 1.0;
    if (!(scale > 0)) {
        scale = 1.0;
    }
    long n = (long)(base * scale);
    return n > 0 ? n : 1;
}

/* A budget of rounds: a count, or CPU seconds of the calling thread. */
struct work_budget {
    long rounds;
    double seconds;
    long done;
};

/* "N" or "Ns" (NULL: `fallback` rounds). */
static struct work_budget work_budget(const char *arg, long fallback) {
    struct work_budget b = {fallback, 0, 0};
    if (arg) {
        size_t len = strlen(arg);
        if (len > 0 && arg[len - 1] == 's') {
            b.rounds = -1;
            b.seconds = atof(arg);
        } else {
            b.rounds = atol(arg);
        }
    }
    return b;
}

static double work_thread_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Call before each round: whether another round is due. */
static int work_more(struct work_budget *b) {
    int more = b->rounds >= 0 ? b->done < b->rounds : work_thread_seconds() < b->seconds;
    if (more) {
        b->done++;
    }
    return more;
}

#endif
