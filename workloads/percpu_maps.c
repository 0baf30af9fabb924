// build: -O1 -g
// percpu_maps K V MS: creates a BPF per-CPU array of K elements of V bytes
// (the kernel makes one per-CPU allocation of V rounded up to 8 bytes per
// element, percpu:percpu_alloc_percpu), holds it MS milliseconds, then
// closes it (K frees). Needs CAP_BPF. Prints `created` once it holds it.
#include <linux/bpf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc != 4)
		return 2;
	union bpf_attr attr;
	memset(&attr, 0, sizeof(attr));
	attr.map_type = BPF_MAP_TYPE_PERCPU_ARRAY;
	attr.key_size = 4;
	attr.value_size = (unsigned)atoi(argv[2]);
	attr.max_entries = (unsigned)atoi(argv[1]);
	int fd = (int)syscall(SYS_bpf, BPF_MAP_CREATE, &attr, sizeof(attr));
	if (fd < 0) {
		perror("bpf(BPF_MAP_CREATE)");
		return 1;
	}
	printf("created\n");
	fflush(stdout);
	usleep((useconds_t)atoi(argv[3]) * 1000);
	close(fd);
	return 0;
}
