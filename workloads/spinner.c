// build: -O1 -g -fno-omit-frame-pointer -fno-inline -fno-optimize-sibling-calls
// spinner: prints "spinner pid <pid>" on stdout, then burns CPU in
// spin_forever until it is killed. For `record -p` and signal tests.
#include <stdio.h>
#include <unistd.h>

static volatile unsigned long sink;

__attribute__((noinline)) void spin_forever(void) {
    /* volatile: touches the stack, so gcc keeps the frame pointer. */
    volatile unsigned long x = sink;
    for (;;) {
        x = x * 6364136223846793005UL + 1442695040888963407UL;
        sink = x;
    }
}

int main(void) {
    printf("spinner pid %ld\n", (long)getpid());
    fflush(stdout);
    spin_forever();
    return 0;
}
