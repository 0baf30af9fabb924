// build: -O2
// opens N K DIR: N open(2)s, the first K of DIR/missing (which must not
// exist: ENOENT), the others of DIR/present (which must exist), each
// O_RDONLY|O_CLOEXEC through openat and closed at once. Prints nothing.
// Used for exact opensnoop answers and its benchmark.
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc < 4)
		return 2;
	long n = atol(argv[1]), k = atol(argv[2]);
	char missing[4096], present[4096];
	snprintf(missing, sizeof(missing), "%s/missing", argv[3]);
	snprintf(present, sizeof(present), "%s/present", argv[3]);
	for (long i = 0; i < n; i++) {
		int fd = open(i < k ? missing : present, O_RDONLY | O_CLOEXEC);
		if (fd >= 0)
			close(fd);
	}
	return 0;
}
