// build: -O2
// binds N K [4|6]: N TCP sockets bound to loopback (127.0.0.1, or ::1
// with 6) port 0 with SO_REUSEADDR, socket i listening with a backlog of
// i + 1; then K binds that fail with EADDRINUSE (a fresh socket, without
// SO_REUSEADDR, to the first socket's port). Prints "binds port P" on
// stdout for each of the N, in order; everything is closed at the end.
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_N 256

static void die(const char *what)
{
	perror(what);
	exit(1);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: binds N K [4|6]\n");
		return 2;
	}
	long n = atol(argv[1]), k = atol(argv[2]);
	if (n <= 0 || n > MAX_N || k < 0 || k > MAX_N) {
		fprintf(stderr, "binds: N in 1..%d, K in 0..%d\n", MAX_N, MAX_N);
		return 2;
	}
	int family = argc > 3 && strcmp(argv[3], "6") == 0 ? AF_INET6 : AF_INET;
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
	int fds[MAX_N];
	struct sockaddr_storage first;
	for (long i = 0; i < n; i++) {
		int fd = socket(family, SOCK_STREAM, 0), one = 1;
		if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0)
			die("socket");
		if (bind(fd, (struct sockaddr *)&ss, len) < 0)
			die("bind");
		if (listen(fd, (int)i + 1) < 0)
			die("listen");
		struct sockaddr_storage got;
		socklen_t glen = sizeof(got);
		if (getsockname(fd, (struct sockaddr *)&got, &glen) < 0)
			die("getsockname");
		if (i == 0)
			first = got;
		int port = family == AF_INET ? ntohs(((struct sockaddr_in *)&got)->sin_port)
					     : ntohs(((struct sockaddr_in6 *)&got)->sin6_port);
		printf("binds port %d\n", port);
		fds[i] = fd;
	}
	for (long i = 0; i < k; i++) {
		int fd = socket(family, SOCK_STREAM, 0);
		if (fd < 0)
			die("socket");
		if (bind(fd, (struct sockaddr *)&first, len) == 0 || errno != EADDRINUSE)
			die("bind (expected EADDRINUSE)");
		close(fd);
	}
	for (long i = 0; i < n; i++)
		close(fds[i]);
	return 0;
}
