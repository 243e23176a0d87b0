// SPDX-License-Identifier: GPL-2.0
/*
 * pingpair: ICMP echo round trips to two hosts in alternation, for comparing the latency of two
 * links at the same moments: the host's slow spells then fall on both alike. Each pair sends to A
 * and to B, in the order A B, then B A, and so on, one request outstanding at a time and a request
 * every INTERVAL_MS / 2 milliseconds, so that each host gets one every INTERVAL_MS. A reply not
 * back within a second counts as lost. Prints the mean round trip to each in microseconds:
 *
 *   pingpair A B PAIRS INTERVAL_MS    prints "a_us=MEAN b_us=MEAN a_lost=N b_lost=N"
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/ip.h>
#include <netinet/ip_icmp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "inet_checksum.h"

#define PAYLOAD 56 /* as ping sends: a 98-byte frame */
#define REPLY_TIMEOUT_NS 1000000000LL

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/*
 * One echo request to TO with sequence SEQ, waiting for its reply. Returns the round trip in
 * nanoseconds, 0 if no reply came within REPLY_TIMEOUT_NS, or -1 on a socket error.
 */
static long long round_trip(int fd, const struct sockaddr_in *to, unsigned short id,
			    unsigned short seq)
{
	unsigned char request[sizeof(struct icmphdr) + PAYLOAD] = { 0 };
	unsigned char reply[1500];
	struct icmphdr *icmp = (struct icmphdr *)request;
	long long sent, deadline;

	icmp->type = ICMP_ECHO;
	icmp->un.echo.id = htons(id);
	icmp->un.echo.sequence = htons(seq);
	memset(request + sizeof(*icmp), 0xa5, PAYLOAD);
	icmp->checksum = htons(fold(sum16(request, sizeof(request), 0)));
	sent = now_ns();
	deadline = sent + REPLY_TIMEOUT_NS;
	if (sendto(fd, request, sizeof(request), 0, (const struct sockaddr *)to, sizeof(*to)) < 0) {
		perror("pingpair: sendto");
		return -1;
	}
	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		long long left = deadline - now_ns();
		struct sockaddr_in from;
		socklen_t from_len = sizeof(from);
		const struct iphdr *ip = (const struct iphdr *)reply;
		const struct icmphdr *answer;
		ssize_t n;

		if (left <= 0)
			return 0;
		if (poll(&pfd, 1, (int)(left / 1000000) + 1) < 0) {
			if (errno == EINTR)
				continue;
			perror("pingpair: poll");
			return -1;
		}
		if (!(pfd.revents & POLLIN))
			continue;
		n = recvfrom(fd, reply, sizeof(reply), 0, (struct sockaddr *)&from, &from_len);
		if (n < 0) {
			perror("pingpair: recvfrom");
			return -1;
		}
		/* A raw socket sees every ICMP message with its IP header: only this reply counts. */
		if (n < (ssize_t)sizeof(*ip) || n < ip->ihl * 4 + (ssize_t)sizeof(*answer))
			continue;
		answer = (const struct icmphdr *)(reply + ip->ihl * 4);
		if (from.sin_addr.s_addr == to->sin_addr.s_addr && answer->type == ICMP_ECHOREPLY &&
		    answer->un.echo.id == htons(id) && answer->un.echo.sequence == htons(seq))
			return now_ns() - sent;
	}
}

int main(int argc, char **argv)
{
	struct sockaddr_in hosts[2] = { { .sin_family = AF_INET }, { .sin_family = AF_INET } };
	long long total_ns[2] = { 0, 0 }, next, step_ns;
	long pairs, interval_ms, got[2] = { 0, 0 }, lost[2] = { 0, 0 }, pair;
	unsigned short id = getpid() & 0xffff, seq = 0;
	int fd, i;

	if (argc != 5 || inet_pton(AF_INET, argv[1], &hosts[0].sin_addr) != 1 ||
	    inet_pton(AF_INET, argv[2], &hosts[1].sin_addr) != 1) {
		fprintf(stderr, "usage: pingpair A B PAIRS INTERVAL_MS\n");
		return 2;
	}
	pairs = atol(argv[3]);
	interval_ms = atol(argv[4]);
	if (pairs <= 0 || pairs > 100000 || interval_ms <= 0 || interval_ms > 10000) {
		fprintf(stderr, "pingpair: PAIRS 1-100000 and INTERVAL_MS 1-10000\n");
		return 2;
	}
	fd = socket(AF_INET, SOCK_RAW, IPPROTO_ICMP);
	if (fd < 0) {
		perror("pingpair: socket");
		return 1;
	}
	step_ns = interval_ms * 1000000LL / 2;
	next = now_ns();
	for (pair = 0; pair < pairs; pair++) {
		for (i = 0; i < 2; i++) {
			/* A B, then B A: neither host always goes first. */
			int host = (pair & 1) ? 1 - i : i;
			struct timespec at = { .tv_sec = next / 1000000000LL,
					       .tv_nsec = next % 1000000000LL };
			long long rtt;

			while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, NULL) == EINTR)
				;
			next += step_ns;
			rtt = round_trip(fd, &hosts[host], id, seq++);
			if (rtt < 0)
				return 1;
			if (rtt == 0) {
				lost[host]++;
			} else {
				total_ns[host] += rtt;
				got[host]++;
			}
			/* A late reply pushes the schedule back instead of bunching the requests up. */
			if (next < now_ns())
				next = now_ns();
		}
	}
	if (!got[0] || !got[1]) {
		fprintf(stderr, "pingpair: no reply from %s\n", argv[got[0] ? 2 : 1]);
		return 1;
	}
	printf("a_us=%.1f b_us=%.1f a_lost=%ld b_lost=%ld\n", total_ns[0] / 1e3 / got[0],
	       total_ns[1] / 1e3 / got[1], lost[0], lost[1]);
	return 0;
}
