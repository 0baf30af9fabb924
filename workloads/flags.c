// build: -O1 -g
// flags: one system call for each way of spelling flags that perf trace
// decodes: open flags and modes, mmap and mprotect protections and flags,
// access modes, fcntl commands (and SETFL's open flags), socket families,
// types and protocols, lseek whence, resource limits, futex operations,
// clone flags, getrandom flags. Files go under /tmp (flags.PID.out, removed
// at the end); nothing is printed.
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/futex.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void) {
    char path[64];
    snprintf(path, sizeof path, "/tmp/flags.%d.out", (int)getpid());
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    openat(AT_FDCWD, path, O_RDWR | O_APPEND | O_NOFOLLOW);
    openat(AT_FDCWD, "/tmp", O_RDONLY | O_DIRECTORY | O_NONBLOCK);
    open(path, O_RDONLY);
    void *p = mmap(0, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    void *q = mmap(0, 4096, PROT_NONE, MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    mprotect(p, 4096, PROT_READ);
    mprotect(q, 4096, PROT_NONE);
    access("/tmp", R_OK | W_OK | X_OK);
    access("/tmp", F_OK);
    fcntl(fd, F_GETFD);
    fcntl(fd, F_GETFL);
    fcntl(fd, F_SETFL, O_NONBLOCK);
    fcntl(fd, F_DUPFD, 10);
    fcntl(fd, F_DUPFD_CLOEXEC, 20);
    socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
    socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_TCP);
    socket(AF_INET6, SOCK_RAW, IPPROTO_UDP);
    socket(AF_UNSPEC, SOCK_STREAM, 0);
    lseek(fd, 0, SEEK_SET);
    lseek(fd, 5, SEEK_CUR);
    lseek(fd, 0, SEEK_END);
    struct rlimit r;
    getrlimit(RLIMIT_NOFILE, &r);
    prlimit(0, RLIMIT_STACK, 0, &r);
    int x = 0;
    syscall(SYS_futex, &x, FUTEX_WAIT | FUTEX_PRIVATE_FLAG, 1, 0, 0, 0);
    syscall(SYS_futex, &x, FUTEX_WAKE, 1, 0, 0, 0);
    pid_t child = syscall(SYS_clone, CLONE_CHILD_SETTID | CLONE_CHILD_CLEARTID | SIGCHLD, 0, 0, 0, 0);
    if (child == 0) _exit(0);
    waitpid(child, 0, 0);
    syscall(SYS_getrandom, &x, 4, 3);
    unlink(path);
    return 0;
}
