// build: -O1 -g -fno-omit-frame-pointer -fno-inline -fno-optimize-sibling-calls
// cpp_work [ROUNDS]: burns CPU in a namespaced template member, whose
// mangled name demangles to work::Hot<int>::spin(int); main -> drive ->
// spin. Default 100 rounds, about 10 ms each. ROUNDS may be a CPU time
// ("1s"); SCRY_WORK_SCALE scales a unit (work.h).
#include <cstdlib>

#include "work.h"

namespace work {

static volatile unsigned long sink;
static long unit = 8000000L;

template <typename T>
struct Hot {
    __attribute__((noinline)) static T spin(T units) {
        // volatile: touches the stack, so g++ keeps the frame pointer.
        volatile unsigned long x = sink;
        for (long i = 0; i < static_cast<long>(units) * unit; i++) {
            x = x * 6364136223846793005UL + 1442695040888963407UL;
        }
        sink = x;
        return units;
    }
};

__attribute__((noinline)) void drive(struct work_budget rounds) {
    while (work_more(&rounds)) Hot<int>::spin(1);
}

}  // namespace work

int main(int argc, char **argv) {
    work::unit = work_unit(work::unit);
    work::drive(work_budget(argc > 1 ? argv[1] : nullptr, 100));
    return 0;
}
