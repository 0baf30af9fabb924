// build: -O1 -g -fno-omit-frame-pointer
// calls [N]: makes exactly N getppid system calls (default 1000000) through
// syscall(SYS_getppid), so libc cannot cache or batch them; nothing else
// runs in the loop. Used for exact event counts.
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 1000000;
    for (long i = 0; i < n; i++) {
        syscall(SYS_getppid);
    }
    return 0;
}
