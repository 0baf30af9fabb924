// build: -O2
// execs N PATH...: N executions, one after the other, of the PATHs in turn
// (the i-th runs PATH[i % count]), each as a forked child with
// argv = {PATH, "execs", "<i>"} and an empty environment; the parent waits
// for each. A PATH that is missing or not executable fails its execve
// (the child then exits 127). Prints nothing. Used for exact execsnoop
// answers: N execve calls with known arguments and return codes.
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	long n = atol(argv[1]);
	int paths = argc - 2;
	for (long i = 0; i < n; i++) {
		char *path = argv[2 + i % paths];
		pid_t pid = fork();
		if (pid < 0)
			return 1;
		if (pid == 0) {
			char index[32];
			snprintf(index, sizeof(index), "%ld", i);
			char *args[] = {path, "execs", index, NULL};
			char *env[] = {NULL};
			execve(path, args, env);
			_exit(127);
		}
		int status;
		waitpid(pid, &status, 0);
	}
	return 0;
}
