// build: -O2 -pthread
// conns N TX RX [4|6] [PORT]: N TCP connections over loopback (127.0.0.1,
// or ::1 with 6), one at a time, from the main thread to a server thread
// of the same process (both named "conns"). Each connection: the client
// sends TX bytes, the server reads them all and answers RX bytes, the
// client reads them and closes first, the server closes at its EOF. So
// every client socket passes SYN_SENT (connect) and every server socket
// LAST_ACK (close), both in this process. PORT 0 (the default) lets the
// kernel choose. Prints "conns port P" on stderr at the end.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static long n, tx, rx;
static int family = AF_INET, listener;

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static void move_bytes(int fd, long bytes, int sending)
{
	static char buf[65536];
	while (bytes > 0) {
		size_t chunk = bytes < (long)sizeof(buf) ? (size_t)bytes : sizeof(buf);
		ssize_t done = sending ? write(fd, buf, chunk) : read(fd, buf, chunk);
		if (done <= 0)
			die(sending ? "write" : "read");
		bytes -= done;
	}
}

static void *serve(void *arg)
{
	(void)arg;
	for (long i = 0; i < n; i++) {
		int fd = accept(listener, NULL, NULL);
		if (fd < 0)
			die("accept");
		move_bytes(fd, tx, 0);
		move_bytes(fd, rx, 1);
		char c;
		if (read(fd, &c, 1) != 0)
			die("expected EOF");
		close(fd);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: conns N TX RX [4|6] [PORT]\n");
		return 2;
	}
	n = atol(argv[1]);
	tx = atol(argv[2]);
	rx = atol(argv[3]);
	if (argc > 4 && strcmp(argv[4], "6") == 0)
		family = AF_INET6;
	int port = argc > 5 ? atoi(argv[5]) : 0;

	struct sockaddr_storage ss;
	memset(&ss, 0, sizeof(ss));
	socklen_t len;
	if (family == AF_INET) {
		struct sockaddr_in *a = (struct sockaddr_in *)&ss;
		a->sin_family = AF_INET;
		a->sin_port = htons(port);
		a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		len = sizeof(*a);
	} else {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
		a->sin6_family = AF_INET6;
		a->sin6_port = htons(port);
		a->sin6_addr = in6addr_loopback;
		len = sizeof(*a);
	}
	listener = socket(family, SOCK_STREAM, 0);
	if (listener < 0)
		die("socket");
	int one = 1;
	setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(listener, (struct sockaddr *)&ss, len) < 0)
		die("bind");
	if (listen(listener, 128) < 0)
		die("listen");
	if (getsockname(listener, (struct sockaddr *)&ss, &len) < 0)
		die("getsockname");
	pthread_t server;
	if (pthread_create(&server, NULL, serve, NULL) != 0)
		die("pthread_create");
	for (long i = 0; i < n; i++) {
		int fd = socket(family, SOCK_STREAM, 0);
		if (fd < 0)
			die("socket");
		if (connect(fd, (struct sockaddr *)&ss, len) < 0)
			die("connect");
		move_bytes(fd, tx, 1);
		move_bytes(fd, rx, 0);
		close(fd);
	}
	pthread_join(server, NULL);
	close(listener);
	int bound = family == AF_INET ? ntohs(((struct sockaddr_in *)&ss)->sin_port)
				      : ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	fprintf(stderr, "conns port %d\n", bound);
	return 0;
}
