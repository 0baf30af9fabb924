// build: -O1 -g -fno-omit-frame-pointer -fno-inline -fno-optimize-sibling-calls
// cpu7525 [ROUNDS]: splits CPU 75/25 between hot_a (main -> outer_a -> hot_a)
// and hot_b (main -> outer_b -> middle_b -> hot_b) by counting work units, not
// by reading clocks, so the split is exact whatever the machine's speed.
// One round is about 10 ms here; the default of 100 rounds is about 1 s.
// ROUNDS may be a CPU time ("1s"); SCRY_WORK_SCALE scales a unit (work.h).
#include <stdlib.h>

#include "work.h"

static long unit = 2000000L;

static volatile unsigned long sink;

__attribute__((noinline)) void hot_a(long units) {
    /* A volatile local makes the function touch its stack, so gcc keeps
       the frame pointer even in this leaf (it drops it otherwise). */
    volatile unsigned long x = sink;
    for (long i = 0; i < units * unit; i++) {
        x = x * 6364136223846793005UL + 1442695040888963407UL;
    }
    sink = x;
}

__attribute__((noinline)) void hot_b(long units) {
    /* A volatile local makes the function touch its stack, so gcc keeps
       the frame pointer even in this leaf (it drops it otherwise). */
    volatile unsigned long x = sink;
    for (long i = 0; i < units * unit; i++) {
        x = x * 6364136223846793005UL + 1442695040888963407UL;
    }
    sink = x;
}

__attribute__((noinline)) void outer_a(void) { hot_a(3); }

__attribute__((noinline)) void middle_b(void) { hot_b(1); }

__attribute__((noinline)) void outer_b(void) { middle_b(); }

int main(int argc, char **argv) {
    unit = work_unit(unit);
    struct work_budget rounds = work_budget(argc > 1 ? argv[1] : NULL, 100);
    while (work_more(&rounds)) {
        outer_a();
        outer_b();
    }
    return 0;
}
