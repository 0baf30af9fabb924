// build: -O2
// retrans N [4|6]: N TCP SYNs retransmitted exactly once each, over
// loopback (127.0.0.1, or ::1 with 6). A listener with a backlog of 0 is
// filled by one connection it never accepts; then N non-blocking
// connects to it, each with TCP_SYNCNT 1, run at once: the full listener
// drops every SYN (tcp_abort_on_overflow 0, the default), so each is
// retransmitted until its connect fails with ETIMEDOUT, about 3 s later
// (how many times is the kernel's SYN timer's business: twice on 6.18,
// whose tcp_syn_linear_timeouts makes the first timeouts 1 s each).
// Prints "retrans port P" on stdout first, "retrans timedout K" on
// stderr at the end (K = N unless something answered).
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_N 512

static void die(const char *what)
{
	perror(what);
	exit(1);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: retrans N [4|6]\n");
		return 2;
	}
	long n = atol(argv[1]);
	if (n <= 0 || n > MAX_N) {
		fprintf(stderr, "retrans: N in 1..%d\n", MAX_N);
		return 2;
	}
	int family = argc > 2 && strcmp(argv[2], "6") == 0 ? AF_INET6 : AF_INET;
	struct sockaddr_storage ss;
	memset(&ss, 0, sizeof(ss));
	socklen_t len;
	if (family == AF_INET) {
		struct sockaddr_in *a = (struct sockaddr_in *)&ss;
		a->sin_family = AF_INET;
		a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		len = sizeof(*a);
	} else {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
		a->sin6_family = AF_INET6;
		a->sin6_addr = in6addr_loopback;
		len = sizeof(*a);
	}
	int listener = socket(family, SOCK_STREAM, 0);
	if (listener < 0)
		die("socket");
	if (bind(listener, (struct sockaddr *)&ss, len) < 0)
		die("bind");
	if (listen(listener, 0) < 0)
		die("listen");
	if (getsockname(listener, (struct sockaddr *)&ss, &len) < 0)
		die("getsockname");
	int port = family == AF_INET ? ntohs(((struct sockaddr_in *)&ss)->sin_port)
				     : ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	printf("retrans port %d\n", port);
	fflush(stdout);
	int filler = socket(family, SOCK_STREAM, 0);
	if (filler < 0 || connect(filler, (struct sockaddr *)&ss, len) < 0)
		die("connect (filler)");
	// The filler's handshake completes in the kernel before connect
	// returns; wait until it is in the accept queue (it then polls ready).
	struct pollfd lp = {.fd = listener, .events = POLLIN};
	if (poll(&lp, 1, 5000) != 1)
		die("poll (filler queued)");
	struct pollfd fds[MAX_N];
	for (long i = 0; i < n; i++) {
		int fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK, 0);
		int one = 1;
		if (fd < 0 || setsockopt(fd, IPPROTO_TCP, TCP_SYNCNT, &one, sizeof(one)) < 0)
			die("socket");
		if (connect(fd, (struct sockaddr *)&ss, len) == 0 || errno != EINPROGRESS)
			die("connect");
		fds[i] = (struct pollfd){.fd = fd, .events = POLLOUT};
	}
	long timedout = 0, left = n;
	while (left > 0) {
		if (poll(fds, n, -1) < 0)
			die("poll");
		for (long i = 0; i < n; i++) {
			if (fds[i].fd < 0 || !fds[i].revents)
				continue;
			int err = 0;
			socklen_t elen = sizeof(err);
			getsockopt(fds[i].fd, SOL_SOCKET, SO_ERROR, &err, &elen);
			timedout += err == ETIMEDOUT;
			close(fds[i].fd);
			fds[i].fd = -1;
			left--;
		}
	}
	fprintf(stderr, "retrans timedout %ld\n", timedout);
	return 0;
}
