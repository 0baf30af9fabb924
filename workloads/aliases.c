// build: -O1 -g -fno-omit-frame-pointer
// aliases [N]: N mmap/munmap pairs through libc's wrappers, then _exit: the
// system calls' user frames are functions with several names at one address
// (libc's __mmap/mmap/mmap64, __munmap/munmap, _exit/_Exit; ld.so's own
// mmap64 and munmap at start-up), which tools must name as perf does.
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 50;
    for (int i = 0; i < n; i++) {
        void *p = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p != MAP_FAILED) munmap(p, 4096);
    }
    _exit(0);
}
