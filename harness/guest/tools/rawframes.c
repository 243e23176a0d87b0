// SPDX-License-Identifier: GPL-2.0
/*
 * rawframes: sends COUNT raw Ethernet frames of SIZE bytes (header included) with ETHERTYPE from
 * IFACE to DSTMAC through an AF_PACKET socket, for tests that feed a driver malformed frames. The
 * second form sends well-formed IPv4/UDP datagrams (to port 9) whose UDP checksum is wrong, or
 * right (`udp`: a host without a listener on port 9 answers with ICMP port unreachable). The
 * third adds MAC, and the COUNT - 1 addresses after it (1 by default), to IFACE's secondary unicast
 * addresses (PACKET_MR_UNICAST memberships, as a macvlan or a bridge port adds one) until SECONDS
 * pass or a SIGTERM comes, printing "member" once the receive filter has them and "left" once it
 * has not. The fourth prints the length of each frame with ETHERTYPE from SRCMAC that IFACE
 * receives, as the stack hands it to a packet socket, until COUNT have come or SECONDS passed.
 *
 *   rawframes IFACE DSTMAC ETHERTYPE SIZE COUNT      e.g. rawframes eth0 52:54:00:12:34:00 0x88b5 60 10
 *   rawframes IFACE DSTMAC udp-bad-checksum|udp SRC_IP DST_IP COUNT
 *   rawframes IFACE MAC unicast-member SECONDS [COUNT]
 *   rawframes IFACE SRCMAC capture ETHERTYPE COUNT SECONDS
 */
#include <arpa/inet.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "inet_checksum.h"

/*
 * Lays out an IPv4/UDP datagram from SRC to DST after the Ethernet header at FRAME: a correct IP
 * header, 64 bytes of payload and a UDP checksum, off by one if BAD_CHECKSUM. Returns the frame
 * size.
 */
static long udp_frame(unsigned char *frame, struct in_addr src, struct in_addr dst,
		      int bad_checksum)
{
	unsigned char *ip = frame + 14, *udp = ip + 20;
	const unsigned int udp_len = 8 + 64;
	unsigned long sum;
	unsigned short check;

	frame[12] = 0x08;
	frame[13] = 0x00;
	memset(ip, 0, 20 + udp_len);
	ip[0] = 0x45;				/* IPv4, 20-byte header */
	ip[2] = (20 + udp_len) >> 8;
	ip[3] = (20 + udp_len) & 0xff;
	ip[8] = 64;				/* TTL */
	ip[9] = 17;				/* UDP */
	memcpy(ip + 12, &src, 4);
	memcpy(ip + 16, &dst, 4);
	check = fold(sum16(ip, 20, 0));
	ip[10] = check >> 8;
	ip[11] = check & 0xff;
	udp[0] = 0x40;				/* source port 16384 */
	udp[3] = 9;				/* destination port 9 (discard) */
	udp[4] = udp_len >> 8;
	udp[5] = udp_len & 0xff;
	memset(udp + 8, 0xa5, 64);
	/* Pseudo-header (addresses, protocol, length), then the datagram. */
	sum = sum16(ip + 12, 8, 17 + udp_len);
	check = fold(sum16(udp, udp_len, sum)) ^ (bad_checksum ? 1 : 0);
	udp[6] = check >> 8;
	udp[7] = check & 0xff;
	return 14 + 20 + udp_len;
}

static volatile sig_atomic_t leaving;

static void leave(int signal)
{
	(void)signal;
	leaving = 1;
}

/*
 * Sets IFACE's flags to what they are. The stack programs a driver's receive filter from a work
 * item (ndo_set_rx_mode_async), and SIOCSIFFLAGS runs a pending update at once
 * (netif_rx_mode_sync), so the filter matches the address lists when this returns.
 */
static int sync_rx_mode(int fd, const char *iface)
{
	struct ifreq ifr = { 0 };

	strncpy(ifr.ifr_name, iface, IFNAMSIZ - 1);
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0 || ioctl(fd, SIOCSIFFLAGS, &ifr) < 0) {
		perror("rawframes: interface flags");
		return -1;
	}
	return 0;
}

/* Adds (PACKET_ADD_MEMBERSHIP) or drops COUNT addresses from MAC up, the last byte counting. */
static int unicast_memberships(int fd, int option, struct packet_mreq *mreq, long count)
{
	unsigned char first = mreq->mr_address[5];
	long i;
	int ret = 0;

	for (i = 0; i < count && ret == 0; i++) {
		mreq->mr_address[5] = first + i;
		ret = setsockopt(fd, SOL_PACKET, option, mreq, sizeof(*mreq));
	}
	mreq->mr_address[5] = first;
	if (ret < 0)
		perror("rawframes: unicast membership");
	return ret;
}

/*
 * The third form: MAC (and the COUNT - 1 addresses after it) secondary unicast addresses of IFACE
 * until SECONDS pass or a SIGTERM comes; "member" once the receive filter has them, "left" once it
 * has not.
 */
static int unicast_member(const char *iface, const unsigned char *mac, long seconds, long count)
{
	struct packet_mreq mreq = { .mr_type = PACKET_MR_UNICAST, .mr_alen = 6 };
	struct sigaction on_term = { .sa_handler = leave };
	sigset_t ending, others;
	int fd;

	mreq.mr_ifindex = if_nametoindex(iface);
	if (!mreq.mr_ifindex) {
		perror("rawframes: interface");
		return 1;
	}
	if (count < 1 || count > 256 - mac[5]) {
		fprintf(stderr, "rawframes: COUNT must be 1 to %d from this address\n", 256 - mac[5]);
		return 2;
	}
	memcpy(mreq.mr_address, mac, 6);
	/* Held back until sigsuspend, so that none comes between the test and the wait. */
	sigemptyset(&ending);
	sigaddset(&ending, SIGTERM);
	sigaddset(&ending, SIGALRM);
	sigprocmask(SIG_BLOCK, &ending, &others);
	sigaction(SIGTERM, &on_term, NULL);
	sigaction(SIGALRM, &on_term, NULL);
	/* Protocol 0: the socket receives nothing, it only holds the membership. */
	fd = socket(AF_PACKET, SOCK_RAW, 0);
	if (fd < 0) {
		perror("rawframes: socket");
		return 1;
	}
	if (unicast_memberships(fd, PACKET_ADD_MEMBERSHIP, &mreq, count) < 0 ||
	    sync_rx_mode(fd, iface) < 0)
		return 1;
	printf("member\n");
	fflush(stdout);
	alarm(seconds);
	while (!leaving)
		sigsuspend(&others);
	if (unicast_memberships(fd, PACKET_DROP_MEMBERSHIP, &mreq, count) < 0 ||
	    sync_rx_mode(fd, iface) < 0)
		return 1;
	printf("left\n");
	return 0;
}

/* The fourth form: lengths of the frames with ETHERTYPE from SRC that IFACE receives. */
static int capture(const char *iface, const unsigned char *src, long ethertype, long count,
		   long seconds)
{
	struct sockaddr_ll at = { .sll_family = AF_PACKET, .sll_protocol = htons(ethertype) };
	struct timeval wait = { .tv_sec = 1 };
	unsigned char frame[65536];
	struct timeval until, now;
	long caught = 0;
	ssize_t len;
	int fd;

	at.sll_ifindex = if_nametoindex(iface);
	if (!at.sll_ifindex) {
		perror("rawframes: interface");
		return 1;
	}
	fd = socket(AF_PACKET, SOCK_RAW, htons(ethertype));
	if (fd < 0 || bind(fd, (struct sockaddr *)&at, sizeof(at)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof(wait)) < 0) {
		perror("rawframes: capture socket");
		return 1;
	}
	/* Bound: what else it sees may come before any frame the test sends. */
	printf("capturing\n");
	fflush(stdout);
	gettimeofday(&until, NULL);
	until.tv_sec += seconds;
	while (caught < count) {
		gettimeofday(&now, NULL);
		if (!timercmp(&now, &until, <))
			break;
		len = recv(fd, frame, sizeof(frame), 0);
		if (len < 14 || memcmp(frame + 6, src, 6) != 0)
			continue;
		printf("%zd\n", len);
		caught++;
	}
	return 0;
}

int main(int argc, char **argv)
{
	unsigned char dst[6], frame[65536];
	struct sockaddr_ll to = { .sll_family = AF_PACKET };
	struct ifreq ifr = { 0 };
	struct in_addr src_ip, dst_ip;
	long size, count, ethertype, i;
	int fd, udp, bad_udp;

	if (argc < 5 || argc > 7) {
		fprintf(stderr, "usage: rawframes IFACE DSTMAC ETHERTYPE SIZE COUNT\n"
			"       rawframes IFACE DSTMAC udp-bad-checksum|udp SRC_IP DST_IP COUNT\n"
			"       rawframes IFACE MAC unicast-member SECONDS [COUNT]\n"
			"       rawframes IFACE SRCMAC capture ETHERTYPE COUNT SECONDS\n");
		return 2;
	}
	if (sscanf(argv[2], "%hhx:%hhx:%hhx:%hhx:%hhx:%hhx", &dst[0], &dst[1], &dst[2], &dst[3],
		   &dst[4], &dst[5]) != 6) {
		fprintf(stderr, "rawframes: bad MAC address %s\n", argv[2]);
		return 2;
	}
	if (strcmp(argv[3], "unicast-member") == 0) {
		if (argc > 6) {
			fprintf(stderr, "rawframes: unicast-member takes SECONDS [COUNT]\n");
			return 2;
		}
		return unicast_member(argv[1], dst, strtol(argv[4], NULL, 0),
				      argc == 6 ? strtol(argv[5], NULL, 0) : 1);
	}
	if (strcmp(argv[3], "capture") == 0) {
		if (argc != 7) {
			fprintf(stderr, "rawframes: capture takes ETHERTYPE COUNT SECONDS\n");
			return 2;
		}
		return capture(argv[1], dst, strtol(argv[4], NULL, 0), strtol(argv[5], NULL, 0),
			       strtol(argv[6], NULL, 0));
	}
	if (argc == 5) {
		fprintf(stderr, "rawframes: ETHERTYPE SIZE COUNT, or udp-bad-checksum|udp SRC_IP DST_IP COUNT\n");
		return 2;
	}
	bad_udp = strcmp(argv[3], "udp-bad-checksum") == 0;
	udp = bad_udp || strcmp(argv[3], "udp") == 0;
	if (udp != (argc == 7)) {
		fprintf(stderr, "rawframes: udp-bad-checksum and udp take SRC_IP DST_IP COUNT\n");
		return 2;
	}
	if (udp) {
		if (inet_pton(AF_INET, argv[4], &src_ip) != 1 ||
		    inet_pton(AF_INET, argv[5], &dst_ip) != 1) {
			fprintf(stderr, "rawframes: bad IPv4 address\n");
			return 2;
		}
		ethertype = 0x0800;
		size = 0;
		count = strtol(argv[6], NULL, 0);
	} else {
		ethertype = strtol(argv[3], NULL, 0);
		size = strtol(argv[4], NULL, 0);
		count = strtol(argv[5], NULL, 0);
		if (size < 14 || size > (long)sizeof(frame)) {
			fprintf(stderr, "rawframes: SIZE must be 14 to %zu bytes\n", sizeof(frame));
			return 2;
		}
	}
	if (count < 0) {
		fprintf(stderr, "rawframes: COUNT must not be negative\n");
		return 2;
	}
	fd = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL));
	if (fd < 0) {
		perror("rawframes: socket");
		return 1;
	}
	strncpy(ifr.ifr_name, argv[1], IFNAMSIZ - 1);
	if (ioctl(fd, SIOCGIFINDEX, &ifr) < 0 || ioctl(fd, SIOCGIFHWADDR, &ifr) < 0) {
		perror("rawframes: interface");
		return 1;
	}
	to.sll_ifindex = if_nametoindex(argv[1]);
	to.sll_halen = 6;
	memcpy(to.sll_addr, dst, 6);
	memset(frame, 0xa5, sizeof(frame));
	memcpy(frame, dst, 6);
	memcpy(frame + 6, ifr.ifr_hwaddr.sa_data, 6);
	frame[12] = ethertype >> 8;
	frame[13] = ethertype & 0xff;
	if (udp)
		size = udp_frame(frame, src_ip, dst_ip, bad_udp);
	for (i = 0; i < count; i++) {
		if (sendto(fd, frame, size, 0, (struct sockaddr *)&to, sizeof(to)) != size) {
			perror("rawframes: sendto");
			return 1;
		}
	}
	printf("sent %ld frames of %ld bytes, ethertype %#lx\n", count, size, ethertype);
	return 0;
}
