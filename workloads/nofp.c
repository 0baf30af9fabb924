// build: -O1 -g -fno-omit-frame-pointer -fno-inline -fno-optimize-sibling-calls -fasynchronous-unwind-tables
// nofp [ROUNDS]: for DWARF unwinding. The hot leaves leaf_a and leaf_b are
// compiled WITHOUT frame pointers (the optimize attribute below), everything
// else with them. caller_a calls leaf_a (about 60% of the CPU) and caller_b
// calls leaf_b (about 40%). A frame-pointer unwinder starting in a leaf
// reads the caller's %rbp and so skips caller_a/caller_b (the return address
// into them sits on the stack, not in the rbp chain); a DWARF (.eh_frame)
// unwinder finds main -> caller_a -> leaf_a. Default 100 rounds, about 1 s.
// ROUNDS may be a CPU time ("1s"); SCRY_WORK_SCALE scales a unit (work.h).
#include <stdlib.h>

#include "work.h"

static long unit = 1600000L;

static volatile unsigned long sink;

#define LEAF(name)                                                          \
    __attribute__((noinline, optimize("omit-frame-pointer"))) void name(    \
        long units) {                                                       \
        unsigned long x = sink;                                             \
        for (long i = 0; i < units * unit; i++) {                           \
            x = x * 6364136223846793005UL + 1442695040888963407UL;          \
        }                                                                   \
        sink = x;                                                           \
    }
LEAF(leaf_a)
LEAF(leaf_b)

__attribute__((noinline)) void caller_a(void) { leaf_a(3); }

__attribute__((noinline)) void caller_b(void) { leaf_b(2); }

int main(int argc, char **argv) {
    unit = work_unit(unit);
    struct work_budget rounds = work_budget(argc > 1 ? argv[1] : NULL, 100);
    while (work_more(&rounds)) {
        caller_a();
        caller_b();
    }
    return 0;
}
