/* SPDX-License-Identifier: GPL-2.0 */
/* The Internet checksum (RFC 1071), for the guest tools that lay out IP packets themselves. */
#ifndef INET_CHECKSUM_H
#define INET_CHECKSUM_H

#include <stddef.h>

/* Ones' complement sum of LEN bytes at P (RFC 1071), added to SUM, not yet folded. */
static inline unsigned long sum16(const unsigned char *p, size_t len, unsigned long sum)
{
	size_t i;

	for (i = 0; i + 1 < len; i += 2)
		sum += (p[i] << 8) | p[i + 1];
	if (len & 1)
		sum += p[len - 1] << 8;
	return sum;
}

/* SUM folded to 16 bits and complemented: the checksum, in host order (stored big-endian). */
static inline unsigned short fold(unsigned long sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return ~sum & 0xffff;
}

#endif /* INET_CHECKSUM_H */
