/* work.h: what the workloads that burn CPU share.

   SCRY_WORK_SCALE (a number, default 1) scales the size of a unit of work:
   0.5 makes every unit take half as long, as on a machine twice as fast,
   so a run of the tests with it shows which assertions assume a speed.
   The split of the work between functions does not change.

   A count of rounds (or units) may instead be a time, "1.5s": whole rounds
   until the calling thread has had that much CPU time
   (CLOCK_THREAD_CPUTIME_ID, what perf's cpu-clock samples), so a test asks
   for as many samples as it needs on any machine, loaded or not. That
   clock is a system call, not the vDSO: it is read a few times a run, when
   the rounds estimated from the last reading are done, so it stays out of
   the profile. The time is not scaled. */
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
    /* Time mode: the round at which to read the clock again. */
    long check_at;
};

/* "N" or "Ns" (NULL: `fallback` rounds). */
static struct work_budget work_budget(const char *arg, long fallback) {
    struct work_budget b = {fallback, 0, 0, 0};
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
    if (b->rounds >= 0) {
        return b->done < b->rounds ? (b->done++, 1) : 0;
    }
    if (b->done >= b->check_at) {
        double spent = work_thread_seconds();
        if (spent >= b->seconds) {
            return 0;
        }
        /* The rounds left at the pace so far (at least one). */
        double left = b->done > 0 && spent > 0 ? (b->seconds - spent) * b->done / spent : 1;
        b->check_at = b->done + (left > 1 ? (long)left : 1);
    }
    b->done++;
    return 1;
}

#endif
