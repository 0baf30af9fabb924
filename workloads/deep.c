// build: -O1 -g -fno-omit-frame-pointer -fno-inline -fno-optimize-sibling-calls
// deep [ROUNDS]: CPU work at the bottom of deep call chains, as real programs
// have them (a server's request handler is 30-60 frames down). Each round
// walks eight mutually recursive functions (step0..step7) to a depth of
// 24..71 chosen by a fixed pseudo-random sequence, then burns work units
// in `leaf`; so stacks are deep and many are distinct, like real profiles,
// and the profile is the same on every machine. One round is about 2 ms.
// ROUNDS may be a CPU time ("1s"); SCRY_WORK_SCALE scales a unit (work.h).
#include <stdlib.h>

#include "work.h"

static long unit = 400000L;

static volatile unsigned long sink;

__attribute__((noinline)) void leaf(long units) {
    /* A volatile local keeps the frame pointer in this leaf. */
    volatile unsigned long x = sink;
    for (long i = 0; i < units * unit; i++) {
        x = x * 6364136223846793005UL + 1442695040888963407UL;
    }
    sink = x;
}

void step0(int depth, unsigned seed);
void step1(int depth, unsigned seed);
void step2(int depth, unsigned seed);
void step3(int depth, unsigned seed);
void step4(int depth, unsigned seed);
void step5(int depth, unsigned seed);
void step6(int depth, unsigned seed);
void step7(int depth, unsigned seed);

typedef void (*step_fn)(int, unsigned);
static step_fn steps[8] = {step0, step1, step2, step3, step4, step5, step6, step7};

/* Each step calls the step its seed picks next, until depth runs out. */
#define STEP(n)                                                                \
    __attribute__((noinline)) void step##n(int depth, unsigned seed) {         \
        volatile int pad = depth;                                              \
        if (pad <= 0) {                                                        \
            leaf(1);                                                           \
            return;                                                            \
        }                                                                      \
        seed = seed * 1103515245u + 12345u;                                    \
        steps[(seed >> 16) & 7](depth - 1, seed);                              \
    }
STEP(0)
STEP(1)
STEP(2)
STEP(3)
STEP(4)
STEP(5)
STEP(6)
STEP(7)

int main(int argc, char **argv) {
    unit = work_unit(unit);
    struct work_budget rounds = work_budget(argc > 1 ? argv[1] : NULL, 500);
    unsigned seed = 1;
    while (work_more(&rounds)) {
        seed = seed * 1103515245u + 12345u;
        int depth = 24 + (int)((seed >> 16) % 48);
        /* A few hundred distinct paths: the seed of each walk repeats. */
        step0(depth, (seed >> 8) % 512);
    }
    return 0;
}
