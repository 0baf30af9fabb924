// build: -O2
// fileio FILE W R SIZE [sync]: prints "ready", waits for a byte on stdin,
// then opens FILE (O_RDWR|O_CREAT|O_TRUNC), makes exactly W writes of
// SIZE bytes (each followed by an fsync with `sync`), seeks to 0, makes
// exactly R reads of SIZE bytes (R <= W), closes FILE and writes "done\n"
// to stdout (a pipe in the tests). Exits 1 if a call fails or is short.
// filetop -p: FILE with W writes, W*SIZE bytes, R reads, R*SIZE bytes;
// fsslower 0 -p: 1 O, W W's of SIZE at offsets 0, SIZE, ..., (with sync)
// W F's, R R's, all of FILE's name.
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc < 5)
		return 2;
	long w = atol(argv[2]), r = atol(argv[3]), size = atol(argv[4]);
	int sync = argc > 5 && strcmp(argv[5], "sync") == 0;
	if (r > w || size <= 0 || size > (1 << 20))
		return 2;
	char *buf = malloc(size);
	if (!buf)
		return 1;
	memset(buf, 'x', size);
	printf("ready\n");
	fflush(stdout);
	char byte;
	if (read(0, &byte, 1) != 1)
		return 1;
	int fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		return 1;
	for (long i = 0; i < w; i++) {
		if (write(fd, buf, size) != size)
			return 1;
		if (sync && fsync(fd))
			return 1;
	}
	if (lseek(fd, 0, SEEK_SET) != 0)
		return 1;
	for (long i = 0; i < r; i++)
		if (read(fd, buf, size) != size)
			return 1;
	if (close(fd))
		return 1;
	if (write(1, "done\n", 5) != 5)
		return 1;
	return 0;
}
