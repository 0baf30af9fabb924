// build: -O1 -g -fno-omit-frame-pointer -fno-inline -fno-optimize-sibling-calls
// cpp_work [ROUNDS]: burns CPU in a namespaced template member, whose
// mangled name demangles to work::Hot<int>::spin(int); main -> drive ->
// spin. Default 100 rounds, about 10 ms each.
#include <cstdlib>

namespace work {

static volatile unsigned long sink;

template <typename T>
struct Hot {
    __attribute__((noinline)) static T spin(T units) {
        // volatile: touches the stack, so g++ keeps the frame pointer.
        volatile unsigned long x = sink;
        for (long i = 0; i < static_cast<long>(units) * 8000000L; i++) {
            x = x * 6364136223846793005UL + 1442695040888963407UL;
        }
        sink = x;
        return units;
    }
};

__attribute__((noinline)) void drive(long rounds) {
    for (long r = 0; r < rounds; r++) Hot<int>::spin(1);
}

}  // namespace work

int main(int argc, char **argv) {
    work::drive(argc > 1 ? std::atol(argv[1]) : 100);
    return 0;
}
