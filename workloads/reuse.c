// build: -O1 -g
// reuse [N=5]: opens /tmp/nosuch_<i> (i = 0..N-1, none exists) from one
// heap buffer, overwriting the buffer with "/WRONG/overwritten" right after
// each open returns. A tracer that reads the name from the process after
// the call, instead of at its entry, shows the overwritten text.
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 5;
    char *buf = malloc(64);
    if (!buf) return 1;
    for (int i = 0; i < n; i++) {
        snprintf(buf, 64, "/tmp/nosuch_%d", i);
        int fd = open(buf, O_RDONLY);
        strcpy(buf, "/WRONG/overwritten");
        if (fd >= 0) close(fd);
    }
    free(buf);
    return 0;
}
