// build: -O1 -g -pthread
// spawns N: creates N threads one after another with pthread_create, each
// starting in spawned_start (which returns at once), joining each before
// the next; then waits until its standard input reaches end of file, so a
// tracer can still read its maps to name the start function.
// Used for exact threadsnoop answers.
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

__attribute__((noinline)) void *spawned_start(void *arg)
{
	return arg;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	long n = atol(argv[1]);
	for (long i = 0; i < n; i++) {
		pthread_t t;
		if (pthread_create(&t, NULL, spawned_start, NULL) || pthread_join(t, NULL))
			return 1;
	}
	char buf[64];
	while (read(0, buf, sizeof(buf)) > 0)
		;
	return 0;
}
