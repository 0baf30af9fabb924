// build: -O2
// dwrites PATH N SIZE: N O_DIRECT writes of SIZE bytes (a multiple of
// 4096) to PATH (a file, or a block device such as a loop device), one at
// a time at offsets 0, SIZE, 2*SIZE..., each waited for (a direct write
// returns once the device completed it), then closes. With SIZE at most
// the device's max_sectors_kb, each write is one block request of SIZE
// bytes at sector i*SIZE/512 (of the device).
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: dwrites PATH N SIZE\n");
		return 2;
	}
	long n = atol(argv[2]), size = atol(argv[3]);
	if (n <= 0 || size <= 0 || size % 4096) {
		fprintf(stderr, "dwrites: N > 0, SIZE a multiple of 4096\n");
		return 2;
	}
	int fd = open(argv[1], O_WRONLY | O_CREAT | O_DIRECT, 0600);
	if (fd < 0) {
		perror(argv[1]);
		return 1;
	}
	void *buf;
	if (posix_memalign(&buf, 4096, size) != 0)
		return 1;
	memset(buf, 0x5a, size);
	for (long i = 0; i < n; i++) {
		if (pwrite(fd, buf, size, i * size) != size) {
			perror("pwrite");
			return 1;
		}
	}
	close(fd);
	return 0;
}
