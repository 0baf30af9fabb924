// build: -O1 -g -fno-omit-frame-pointer -fno-inline -fno-optimize-sibling-calls
// libcloop [ROUNDS=100 or Ns]: CPU spent inside libc functions that set up
// no frame pointer, called from named functions: each round `copy_block`
// memcpy's 1 MiB 256 times (about 60% of the CPU), then `measure_text`
// strlen's a 1 MiB string 128 times (about 40%; the shares depend on the
// machine's memory, the callers do not). A frame-pointer unwinder starting
// in memcpy or strlen reads the caller's %rbp and so skips copy_block and
// measure_text: `main;__memmove_avx_unaligned_erms` instead of
// `main;copy_block;__memmove_avx_unaligned_erms`. DWARF (and scry's -g)
// keep them. ROUNDS may be a CPU time ("1s"); SCRY_WORK_SCALE scales the
// count of copies (work.h).
#include <stdlib.h>
#include <string.h>

#include "work.h"

#define SIZE (1 << 20)

static char *src, *dst, *text;
static volatile size_t sink;
static long copies = 256, scans = 128;

__attribute__((noinline)) void copy_block(void) {
    for (long i = 0; i < copies; i++) {
        memcpy(dst, src, SIZE);
        __asm__ volatile("" ::: "memory");
    }
}

__attribute__((noinline)) void measure_text(void) {
    for (long i = 0; i < scans; i++) {
        sink += strlen(text);
        __asm__ volatile("" ::: "memory");
    }
}

int main(int argc, char **argv) {
    copies = work_unit(copies);
    scans = work_unit(scans);
    src = malloc(SIZE);
    dst = malloc(SIZE);
    text = malloc(SIZE + 1);
    if (!src || !dst || !text) return 1;
    memset(src, 1, SIZE);
    memset(text, 'x', SIZE);
    text[SIZE] = 0;
    struct work_budget rounds = work_budget(argc > 1 ? argv[1] : NULL, 100);
    while (work_more(&rounds)) {
        copy_block();
        measure_text();
    }
    return 0;
}
