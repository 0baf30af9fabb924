// build: -O2
// signals N K DEADPID: N signals SIGUSR1 (caught, counted), sent by the
// main thread to itself through kill(2), tkill(2) and tgkill(2) in turn
// (call i uses the (i % 3)th); the first K go to DEADPID instead, which
// must name no process (ESRCH). Exits 1 if a call's result is not the
// expected one or a signal was not delivered. Prints nothing.
// Used for exact killsnoop and sigsnoop answers.
#include <signal.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

static volatile sig_atomic_t caught;

static void on_usr1(int sig)
{
	(void)sig;
	caught++;
}

int main(int argc, char **argv)
{
	if (argc < 4)
		return 2;
	long n = atol(argv[1]), k = atol(argv[2]);
	pid_t dead = (pid_t)atol(argv[3]);
	pid_t self = getpid();
	pid_t tid = (pid_t)syscall(SYS_gettid);
	struct sigaction sa = {.sa_handler = on_usr1};
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGUSR1, &sa, NULL))
		return 1;
	for (long i = 0; i < n; i++) {
		pid_t pid = i < k ? dead : self, thread = i < k ? dead : tid;
		long ret;
		switch (i % 3) {
		case 0:
			ret = syscall(SYS_kill, pid, SIGUSR1);
			break;
		case 1:
			ret = syscall(SYS_tkill, thread, SIGUSR1);
			break;
		default:
			ret = syscall(SYS_tgkill, pid, thread, SIGUSR1);
			break;
		}
		if ((ret == 0) != (i >= k))
			return 1;
	}
	return caught == n - k ? 0 : 1;
}
