// SPDX-License-Identifier: GPL-2.0
/*
 * mmio: reads or writes one 32-bit register of a PCI device's memory BAR through its sysfs
 * resource file, as a test's stand-in for a device that misbehaves behind its driver's back (for
 * instance a transmitter that stops, to make the driver's transmit watchdog fire).
 *
 *   mmio RESOURCE OFFSET          prints the register, in hex
 *   mmio RESOURCE OFFSET VALUE    writes VALUE (hex or decimal) and prints what reads back
 *
 * RESOURCE is e.g. /sys/bus/pci/devices/0000:00:03.0/resource0; OFFSET is a byte offset, a
 * multiple of 4 inside the BAR.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct stat st;
	volatile uint32_t *reg;
	unsigned long offset;
	void *bar;
	int fd;

	if (argc != 3 && argc != 4) {
		fprintf(stderr, "usage: mmio RESOURCE OFFSET [VALUE]\n");
		return 2;
	}
	offset = strtoul(argv[2], NULL, 0);
	fd = open(argv[1], O_RDWR | O_SYNC);
	if (fd < 0 || fstat(fd, &st) != 0) {
		perror(argv[1]);
		return 1;
	}
	if (offset % 4 != 0 || offset + 4 > (unsigned long)st.st_size) {
		fprintf(stderr, "mmio: offset %#lx is not a register of a %lld-byte BAR\n", offset,
			(long long)st.st_size);
		return 2;
	}
	bar = mmap(NULL, st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (bar == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	reg = (volatile uint32_t *)((char *)bar + offset);
	if (argc == 4)
		*reg = (uint32_t)strtoul(argv[3], NULL, 0);
	printf("%#x\n", *reg);
	return 0;
}
