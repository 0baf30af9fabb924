// build: -O1 -g -fno-omit-frame-pointer -fno-inline -fno-optimize-sibling-calls
// divloop [ROUNDS=100 or Ns]: each round, `div_hot` runs a chain of 64-bit
// divisions, each dividing by a divisor read from a volatile (so the
// compiler cannot turn it into a multiplication) a value that depends on
// the previous quotient (so they cannot overlap): the `div` instruction is
// the costly one, and its samples land on it or, where timer sampling
// skids, on the instruction after it. ~10 ms a round; ROUNDS may be a CPU
// time ("1s"); SCRY_WORK_SCALE scales a round (work.h).
#include <stdlib.h>

#include "work.h"

static long unit = 400000L;

static volatile unsigned long divisor = 7;
static volatile unsigned long sink;

__attribute__((noinline)) unsigned long div_hot(long n) {
    unsigned long d = divisor;
    unsigned long acc = sink;
    for (long i = 0; i < n; i++) {
        acc = (acc + 0x123456789abcdefUL + (unsigned long)i) / d;
    }
    return acc;
}

int main(int argc, char **argv) {
    unit = work_unit(unit);
    struct work_budget rounds = work_budget(argc > 1 ? argv[1] : NULL, 100);
    while (work_more(&rounds)) {
        sink = div_hot(unit);
    }
    return 0;
}
