// build: -O1 -g -fno-omit-frame-pointer -fno-inline -fno-optimize-sibling-calls
// jit [ROUNDS]: a stand-in for a JIT. Maps an anonymous RW page, writes the
// x86-64 machine code of a small busy loop into it, flips it to RX with
// mprotect, and calls it ROUNDS times (default 100, about 10 ms each). Before
// running it writes /tmp/perf-<pid>.map with the line
// "<start-hex> <size-hex> jit_hot_loop" (perf's JIT map format) and prints
// "jit pid <pid> map /tmp/perf-<pid>.map". It removes nothing at exit: perf
// reads the map when reporting; the caller cleans up. ROUNDS may be a CPU
// time ("1s"); SCRY_WORK_SCALE scales a round's loop (work.h).
// "jit ROUNDS dump" also writes /tmp/jit-<pid>.dump, a jitdump (the kernel's
// tools/perf/Documentation/jitdump-specification.txt) with one
// JIT_CODE_LOAD record holding the loop's code, maps it executable as the
// marker a recording sees, and prints "jit pid <pid> dump <path>".
// "jit ROUNDS move" does the same, then copies the code to a second page,
// appends a JIT_CODE_MOVE of it there (code_index 0) and runs it there,
// printing "jit pid <pid> moved <start-hex>"; the perf map keeps the first
// address.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "work.h"

static unsigned long loop = 16000000UL;

/* unsigned long jit_hot_loop(unsigned long n): sum of n..1, with a frame. */
static const unsigned char code[] = {
    0x55,             /* push %rbp */
    0x48, 0x89, 0xe5, /* mov %rsp,%rbp */
    0x48, 0x89, 0xf9, /* mov %rdi,%rcx */
    0x31, 0xc0,       /* xor %eax,%eax */
    0x48, 0x85, 0xc9, /* test %rcx,%rcx */
    0x74, 0x08,       /* je done */
    0x48, 0x01, 0xc8, /* loop: add %rcx,%rax */
    0x48, 0xff, 0xc9, /* dec %rcx */
    0x75, 0xf8,       /* jne loop */
    0x5d,             /* done: pop %rbp */
    0xc3,             /* ret */
};

static volatile unsigned long sink;

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Writes /tmp/jit-<pid>.dump: the header, one JIT_CODE_LOAD of the code at
   mem, a JIT_CODE_MOVE of it to moved unless that is NULL, and maps the file
   executable (the marker). 0 on success. */
static int write_jitdump(const unsigned char *mem, const unsigned char *moved) {
    char path[64];
    snprintf(path, sizeof path, "/tmp/jit-%ld.dump", (long)getpid());
    int fd = open(path, O_CREAT | O_TRUNC | O_RDWR, 0600);
    if (fd < 0) {
        perror(path);
        return 1;
    }
    const char name[] = "jit_hot_loop";
    struct {
        uint32_t magic, version, total_size, elf_mach, pad1, pid;
        uint64_t timestamp, flags;
    } header = {0x4A695444, 1, sizeof header, 62, 0, (uint32_t)getpid(), now_ns(), 0};
    struct {
        uint32_t id, total_size;
        uint64_t timestamp;
        uint32_t pid, tid;
        uint64_t vma, code_addr, code_size, code_index;
    } load = {0, 0, now_ns(), (uint32_t)getpid(), (uint32_t)getpid(),
              (uint64_t)(uintptr_t)mem, (uint64_t)(uintptr_t)mem, sizeof code, 0};
    load.total_size = (uint32_t)(sizeof load + sizeof name + sizeof code);
    if (write(fd, &header, sizeof header) != (ssize_t)sizeof header ||
        write(fd, &load, sizeof load) != (ssize_t)sizeof load ||
        write(fd, name, sizeof name) != (ssize_t)sizeof name ||
        write(fd, code, sizeof code) != (ssize_t)sizeof code) {
        perror(path);
        return 1;
    }
    struct {
        uint32_t id, total_size;
        uint64_t timestamp;
        uint32_t pid, tid;
        uint64_t vma, old_code_addr, new_code_addr, code_size, code_index;
    } move = {1, sizeof move, now_ns(), (uint32_t)getpid(), (uint32_t)getpid(),
              (uint64_t)(uintptr_t)moved, (uint64_t)(uintptr_t)mem, (uint64_t)(uintptr_t)moved,
              sizeof code, 0};
    if (moved && write(fd, &move, sizeof move) != (ssize_t)sizeof move) {
        perror(path);
        return 1;
    }
    if (mmap(NULL, sysconf(_SC_PAGESIZE), PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0) == MAP_FAILED) {
        perror("jit: mmap jitdump");
        return 1;
    }
    close(fd);
    printf("jit pid %ld dump %s\n", (long)getpid(), path);
    return 0;
}

__attribute__((noinline)) void run_jit(unsigned long (*fn)(unsigned long)) {
    sink += fn(loop);
}

/* A fresh page holding the code, RW then flipped to RX as a JIT does; NULL
   (said on stderr) on failure. */
static unsigned char *place_code(long page) {
    unsigned char *mem = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) {
        perror("jit: mmap");
        return NULL;
    }
    memcpy(mem, code, sizeof code);
    if (mprotect(mem, page, PROT_READ | PROT_EXEC) != 0) {
        perror("jit: mprotect");
        return NULL;
    }
    return mem;
}

int main(int argc, char **argv) {
    loop = (unsigned long)work_unit((long)loop);
    struct work_budget rounds = work_budget(argc > 1 ? argv[1] : NULL, 100);
    long page = sysconf(_SC_PAGESIZE);
    unsigned char *mem = place_code(page);
    if (!mem) return 1;
    char path[64];
    snprintf(path, sizeof path, "/tmp/perf-%ld.map", (long)getpid());
    FILE *map = fopen(path, "w");
    if (!map) {
        perror(path);
        return 1;
    }
    fprintf(map, "%lx %zx jit_hot_loop\n", (unsigned long)mem, sizeof code);
    fclose(map);
    printf("jit pid %ld map %s\n", (long)getpid(), path);
    unsigned char *run = mem;
    if (argc > 2 && strcmp(argv[2], "move") == 0) {
        run = place_code(page);
        if (!run) return 1;
        printf("jit pid %ld moved %lx\n", (long)getpid(), (unsigned long)run);
    }
    if (argc > 2 && (strcmp(argv[2], "dump") == 0 || run != mem) &&
        write_jitdump(mem, run != mem ? run : NULL) != 0)
        return 1;
    fflush(stdout);
    unsigned long (*fn)(unsigned long);
    memcpy(&fn, &run, sizeof fn);
    while (work_more(&rounds)) run_jit(fn);
    return 0;
}
