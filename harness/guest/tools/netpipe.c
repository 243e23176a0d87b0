// SPDX-License-Identifier: GPL-2.0
/*
 * netpipe: a TCP pipe for bulk tests, since busybox nc ends transfers early.
 *
 *   netpipe recv PORT          accept one connection, copy it to stdout until the sender closes
 *   netpipe send HOST PORT     connect (retrying for 60 s), copy stdin to it, close, wait for the
 *                              receiver to close too
 *
 * Both report "bytes=N seconds=S" on stderr, measured from the first to the last byte.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static char buffer[1 << 16];

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int copy(int from, int to, long long *total, double *start)
{
	for (;;) {
		ssize_t n = read(from, buffer, sizeof(buffer)), done = 0;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			return 0;
		if (*total == 0)
			*start = now();
		while (done < n) {
			ssize_t w = write(to, buffer + done, n - done);

			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0)
				return -1;
			done += w;
		}
		*total += n;
	}
}

int main(int argc, char **argv)
{
	struct sockaddr_in addr = { .sin_family = AF_INET };
	long long total = 0;
	double start = 0;
	int fd, one = 1, i;

	if (argc == 3 && !strcmp(argv[1], "recv")) {
		int listener = socket(AF_INET, SOCK_STREAM, 0);

		addr.sin_port = htons(atoi(argv[2]));
		setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(listener, (struct sockaddr *)&addr, sizeof(addr)) || listen(listener, 1)) {
			perror("netpipe: listen");
			return 1;
		}
		fd = accept(listener, NULL, NULL);
		if (fd < 0 || copy(fd, 1, &total, &start)) {
			perror("netpipe: receive");
			return 1;
		}
	} else if (argc == 4 && !strcmp(argv[1], "send")) {
		addr.sin_port = htons(atoi(argv[3]));
		if (inet_pton(AF_INET, argv[2], &addr.sin_addr) != 1) {
			fprintf(stderr, "netpipe: bad address %s\n", argv[2]);
			return 2;
		}
		for (i = 0;; i++) {
			fd = socket(AF_INET, SOCK_STREAM, 0);
			if (!connect(fd, (struct sockaddr *)&addr, sizeof(addr)))
				break;
			close(fd);
			if (i == 600) {
				perror("netpipe: connect");
				return 1;
			}
			usleep(100000);
		}
		if (copy(0, fd, &total, &start) || shutdown(fd, SHUT_WR)) {
			perror("netpipe: send");
			return 1;
		}
		while (read(fd, buffer, sizeof(buffer)) > 0)
			;
	} else {
		fprintf(stderr, "usage: netpipe recv PORT | netpipe send HOST PORT\n");
		return 2;
	}
	fprintf(stderr, "bytes=%lld seconds=%.3f\n", total, total ? now() - start : 0.0);
	return 0;
}
