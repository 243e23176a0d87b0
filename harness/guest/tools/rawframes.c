// SPDX-License-Identifier: GPL-2.0
/*
 * rawframes: sends COUNT raw Ethernet frames of SIZE bytes (header included) with ETHERTYPE from
 * IFACE to DSTMAC through an AF_PACKET socket, for tests that feed a driver malformed frames.
 *
 *   rawframes IFACE DSTMAC ETHERTYPE SIZE COUNT      e.g. rawframes eth0 52:54:00:12:34:00 0x88b5 60 10
 */
#include <arpa/inet.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	unsigned char dst[6], frame[65536];
	struct sockaddr_ll to = { .sll_family = AF_PACKET };
	struct ifreq ifr = { 0 };
	long size, count, ethertype, i;
	int fd;

	if (argc != 6 || sscanf(argv[2], "%hhx:%hhx:%hhx:%hhx:%hhx:%hhx", &dst[0], &dst[1], &dst[2],
				&dst[3], &dst[4], &dst[5]) != 6) {
		fprintf(stderr, "usage: rawframes IFACE DSTMAC ETHERTYPE SIZE COUNT\n");
		return 2;
	}
	ethertype = strtol(argv[3], NULL, 0);
	size = strtol(argv[4], NULL, 0);
	count = strtol(argv[5], NULL, 0);
	if (size < 14 || size > (long)sizeof(frame) || count < 0) {
		fprintf(stderr, "rawframes: SIZE must be 14 to %zu bytes\n", sizeof(frame));
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
	for (i = 0; i < count; i++) {
		if (sendto(fd, frame, size, 0, (struct sockaddr *)&to, sizeof(to)) != size) {
			perror("rawframes: sendto");
			return 1;
		}
	}
	printf("sent %ld frames of %ld bytes, ethertype %#lx\n", count, size, ethertype);
	return 0;
}
