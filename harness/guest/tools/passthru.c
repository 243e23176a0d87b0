// SPDX-License-Identifier: GPL-2.0
/*
 * passthru: the NVMe passthrough ioctls of a controller's character device as misused input
 * reaches them, for comparing nvme_rs with the C nvme driver.
 *
 *   passthru cases DEV          one line per case, "NAME RESULT": what the driver answered to
 *                               bad flags, metadata, lengths and pointers, and to commands the
 *                               caller may or may not send. RESULT is "ok", "status=0xNNNN" (the
 *                               NVMe status field) or an errno name; the lines of two drivers
 *                               on twin controllers must be the same.
 *   passthru fuzz DEV N SEED    N random admin commands (opcodes, half of them ones that move
 *                               data; lengths, NSIDs, dwords, pointers, timeouts). As root only commands that neither destroy
 *                               data nor take the controller from its driver (no Format,
 *                               Sanitize, queue or firmware management, Set Features,
 *                               Doorbell Buffer Config, or Asynchronous Event Request, which
 *                               completes only at an event); as anyone else, any opcode. Prints
 *                               how many ended how; fails on an answer the driver must not give
 *                               (a privileged command that went through for an unprivileged
 *                               caller, an errno outside EACCES, EINVAL, EFAULT).
 *
 *   passthru io-read DEV        one I/O command on the controller's device (NVME_IOCTL_IO_CMD,
 *                               for its only namespace): a 4 KiB Read at LBA 8 of NSID 1; prints
 *                               RESULT as above.
 *   passthru io-rewrite DEV     the same Read, then a Write of what it read back to LBA 8, once
 *                               through DEV opened read-only and once opened for writing; prints
 *                               "read=RESULT ro_write=RESULT rw_write=RESULT".
 *   passthru ns-io DEV          the ioctls of a namespace's device (its disk, a partition, its
 *                               generic character device), opened read-only, of a namespace with
 *                               512-byte blocks: its NSID (NVME_IOCTL_ID), a 4 KiB Read at LBA 24
 *                               and a Write of it back (NVME_IOCTL_SUBMIT_IO), the same Read
 *                               with a 64-bit result and as a vector of three segments
 *                               (NVME_IOCTL_IO64_CMD, _VEC; "differs" if the bytes do), a
 *                               SUBMIT_IO with an opcode it does not take, and an Identify
 *                               Controller (NVME_IOCTL_ADMIN_CMD); prints "id=N read=RESULT ...".
 *   passthru overlong DEV       I/O commands whose data length is two pages while the command
 *                               says otherwise, on a namespace's device opened for writing: a
 *                               Read of 64 KiB at LBA 0 said to move 8 KiB (its first 8 KiB
 *                               checked against a plain Read), and a Dataset Management of one
 *                               empty range said to move 8 KiB; prints "long_read=RESULT
 *                               dsm_two_pages=RESULT". Only for a driver that keeps the device
 *                               inside its own buffer: C would take the caller's second page for
 *                               a PRP list.
 *
 * Run as root with "--as-nobody" first, it drops to uid and gid 65534 before opening DEV. DEV
 * "fd:N" is the file already open as descriptor N (one opened before its driver went away).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/nvme_ioctl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#define PAGE 4096
#define BIG (2 * 1024 * 1024)

static const char *result(int ret)
{
	static char text[32];

	if (ret == 0)
		return "ok";
	if (ret > 0) {
		snprintf(text, sizeof(text), "status=%#06x", ret);
		return text;
	}
	switch (errno) {
	case EINVAL:
		return "EINVAL";
	case EFAULT:
		return "EFAULT";
	case EACCES:
		return "EACCES";
	case ENOTTY:
		return "ENOTTY";
	case EPERM:
		return "EPERM";
	case ENODEV:
		return "ENODEV";
	case EINTR:
		return "EINTR";
	default:
		snprintf(text, sizeof(text), "errno=%d", errno);
		return text;
	}
}

static struct nvme_admin_cmd identify(void *buf, unsigned int len, unsigned int cns)
{
	struct nvme_admin_cmd cmd = {
		.opcode = 0x06,
		.addr = (uintptr_t)buf,
		.data_len = len,
		.cdw10 = cns,
	};
	return cmd;
}

static int admin(int fd, struct nvme_admin_cmd *cmd)
{
	return ioctl(fd, NVME_IOCTL_ADMIN_CMD, cmd);
}

static void report(const char *name, int ret)
{
	printf("%s %s\n", name, result(ret));
}

static int cases(int fd)
{
	static char buf[BIG];
	struct nvme_admin_cmd cmd;
	struct nvme_passthru_cmd64 cmd64;
	char *readonly;

	cmd = identify(buf, PAGE, 1);
	report("identify-controller", admin(fd, &cmd));
	printf("identify-controller-model %.40s\n", buf + 24);
	cmd = identify(buf, PAGE, 1);
	cmd.flags = 1;
	report("flags", admin(fd, &cmd));
	cmd = identify(buf, PAGE, 1);
	cmd.metadata = (uintptr_t)(buf + PAGE);
	cmd.metadata_len = 64;
	report("metadata", admin(fd, &cmd));
	cmd = identify(buf, PAGE, 1);
	cmd.metadata = (uintptr_t)(buf + PAGE);
	report("metadata-pointer-no-length", admin(fd, &cmd));
	cmd = identify(buf, 512 * 1024, 1);
	report("data-512KiB", admin(fd, &cmd));
	cmd = identify(buf, 512 * 1024 + PAGE, 1);
	report("data-over-512KiB", admin(fd, &cmd));
	cmd = identify(buf, BIG, 1);
	report("data-2MiB", admin(fd, &cmd));
	cmd = identify(NULL, PAGE, 1);
	report("null-data", admin(fd, &cmd));
	cmd = identify((void *)0x1000, PAGE, 1);
	report("unmapped-data", admin(fd, &cmd));
	readonly = mmap(NULL, PAGE, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	cmd = identify(readonly, PAGE, 1);
	report("read-only-data", admin(fd, &cmd));
	memset(buf, 0x5a, 200);
	cmd = identify(buf, 100, 1);
	report("short-identify", admin(fd, &cmd));
	/* The controller writes 4 KiB; the caller gets 100 bytes and nothing past them. */
	printf("short-identify-bytes-after-100 %s\n",
	       buf[100] == 0x5a && buf[199] == 0x5a ? "untouched" : "overwritten");
	cmd = identify(NULL, 0, 1);
	report("identify-without-buffer", admin(fd, &cmd));
	/* Get Log Page, SMART, NUMD for 4 KiB into 512 bytes. */
	cmd = (struct nvme_admin_cmd){ .opcode = 0x02, .nsid = 0xffffffff, .addr = (uintptr_t)buf,
				       .data_len = 512, .cdw10 = 0x02 | (1023u << 16) };
	report("log-page-longer-than-buffer", admin(fd, &cmd));
	cmd = (struct nvme_admin_cmd){ .opcode = 0xc1, .addr = (uintptr_t)buf, .data_len = PAGE };
	report("vendor-opcode", admin(fd, &cmd));
	cmd = (struct nvme_admin_cmd){ .opcode = 0x3f };
	report("reserved-opcode", admin(fd, &cmd));
	cmd = (struct nvme_admin_cmd){ .opcode = 0x09, .cdw10 = 0x07, .cdw11 = 0x00010001 };
	report("set-number-of-queues", admin(fd, &cmd));
	cmd = (struct nvme_admin_cmd){ .opcode = 0x0a, .cdw10 = 0x07 };
	report("get-number-of-queues", admin(fd, &cmd));
	printf("get-number-of-queues-result-nonzero %s\n", cmd.result ? "yes" : "no");
	cmd = (struct nvme_admin_cmd){ .opcode = 0x06, .nsid = 0x12345, .addr = (uintptr_t)buf,
				       .data_len = PAGE, .cdw10 = 0 };
	report("identify-missing-namespace", admin(fd, &cmd));
	memset(&cmd64, 0, sizeof(cmd64));
	cmd64.opcode = 0x06;
	cmd64.addr = (uintptr_t)buf;
	cmd64.data_len = PAGE;
	cmd64.cdw10 = 1;
	report("identify-64", ioctl(fd, NVME_IOCTL_ADMIN64_CMD, &cmd64));
	report("null-command", ioctl(fd, NVME_IOCTL_ADMIN_CMD, NULL));
	report("io-command-on-controller", ioctl(fd, NVME_IOCTL_IO_CMD, &cmd));
	report("namespace-id-of-controller", ioctl(fd, NVME_IOCTL_ID));
	report("unknown-ioctl", ioctl(fd, _IO('N', 0x7f)));
	report("reset", ioctl(fd, NVME_IOCTL_RESET));
	cmd = identify(buf, PAGE, 1);
	report("identify-after-reset", admin(fd, &cmd));
	return 0;
}

/* Admin opcodes a root fuzzer leaves alone: they destroy data, take the controller from its
 * driver, or never complete on their own. */
static int destructive(unsigned int opcode)
{
	switch (opcode) {
	case 0x00: /* Delete I/O SQ */
	case 0x01: /* Create I/O SQ */
	case 0x04: /* Delete I/O CQ */
	case 0x05: /* Create I/O CQ */
	case 0x08: /* Abort */
	case 0x09: /* Set Features */
	case 0x0c: /* Asynchronous Event Request */
	case 0x0d: /* Namespace Management */
	case 0x10: /* Firmware Commit */
	case 0x11: /* Firmware Image Download */
	case 0x15: /* Namespace Attachment */
	case 0x19: /* Directive Send */
	case 0x1c: /* Virtualization Management */
	case 0x1d: /* NVMe-MI Send */
	case 0x7c: /* Doorbell Buffer Config */
	case 0x80: /* Format NVM */
	case 0x81: /* Security Send */
	case 0x84: /* Sanitize */
		return 1;
	}
	return opcode >= 0xc0;
}

static int fuzz(int fd, long count, unsigned int seed, int privileged)
{
	static char buf[BIG];
	long ok = 0, status = 0, eacces = 0, einval = 0, efault = 0, bad = 0;
	static const uint32_t nsids[] = { 0, 1, 2, 3, 0xffffffff, 0x12345678 };
	static const uint32_t lengths[] = { 0, 1, 100, 4096, 4097, 65536, 524288, 524289, BIG };

	srandom(seed);
	for (long i = 0; i < count; i++) {
		struct nvme_admin_cmd cmd = { 0 };
		int ret;

		/* Half of them commands that move data when well formed: Get Log Page, Identify,
		 * Get Features, Keep Alive. */
		do
			cmd.opcode = random() % 2 ? random() & 0xff : "\x02\x06\x0a\x18"[random() % 4];
		while (privileged && destructive(cmd.opcode));
		cmd.nsid = nsids[random() % 6];
		cmd.data_len = lengths[random() % 9];
		switch (random() % 8) {
		case 0:
			cmd.addr = 0;
			break;
		case 1:
			cmd.addr = 0x1000;
			break;
		default:
			cmd.addr = (uintptr_t)buf;
			if (cmd.data_len > BIG)
				cmd.data_len = BIG;
		}
		if (random() % 16 == 0)
			cmd.flags = random() & 0xff;
		if (random() % 16 == 0) {
			cmd.metadata = (uintptr_t)buf;
			cmd.metadata_len = random() % 1024;
		}
		switch (random() % 4) {
		case 0:
			cmd.cdw10 = random();
			break;
		case 1:
			cmd.cdw10 = random() & 0xff;
			break;
		default:
			/* A small CNS, log page or feature, up to 4 KiB of log. */
			cmd.cdw10 = (random() % 16) | ((random() % 1024) << 16);
		}
		cmd.cdw11 = random() % 2 ? 0 : random();
		cmd.cdw12 = random() % 2 ? 0 : random();
		cmd.cdw13 = random() % 2 ? 0 : random();
		cmd.timeout_ms = random() % 4 ? 0 : random() % 100;
		ret = admin(fd, &cmd);
		if (ret == 0)
			ok++;
		else if (ret > 0)
			status++;
		else if (errno == EACCES)
			eacces++;
		else if (errno == EINVAL)
			einval++;
		else if (errno == EFAULT)
			efault++;
		else
			bad++;
		/* Without CAP_SYS_ADMIN only Identify of a few CNS values may reach the device. */
		if (!privileged && ret >= 0 &&
		    !(cmd.opcode == 0x06 && memchr("\x00\x01\x05\x06\x08", cmd.cdw10 & 0xff, 5))) {
			printf("opcode %#x cdw10 %#x went through without privilege\n", cmd.opcode,
			       cmd.cdw10);
			bad++;
		}
		if (ret < 0 && errno != EACCES && errno != EINVAL && errno != EFAULT)
			printf("opcode %#x: %s\n", cmd.opcode, result(ret));
	}
	printf("commands=%ld ok=%ld status=%ld EACCES=%ld EINVAL=%ld EFAULT=%ld unexpected=%ld\n",
	       count, ok, status, eacces, einval, efault, bad);
	return bad ? 1 : 0;
}

/* One 4 KiB I/O command, opcode 0x02 (Read) or 0x01 (Write), at LBA 8 of NSID 1. */
static int io_lba8(int fd, uint8_t opcode, char *buf)
{
	struct nvme_passthru_cmd cmd = { .opcode = opcode, .nsid = 1, .addr = (uintptr_t)buf,
					 .data_len = PAGE, .cdw10 = 8, .cdw12 = 7 };

	return ioctl(fd, NVME_IOCTL_IO_CMD, &cmd);
}

static int io_rewrite(int read_only_fd, const char *path)
{
	static char buf[PAGE];
	const char *read_result = result(io_lba8(read_only_fd, 0x02, buf));
	int fd;

	/* Nothing is written unless the read succeeded: the block keeps its bytes either way. */
	if (strcmp(read_result, "ok") != 0) {
		printf("read=%s\n", read_result);
		return 0;
	}
	printf("read=%s ro_write=%s", read_result, result(io_lba8(read_only_fd, 0x01, buf)));
	fd = open(path, O_RDWR);
	if (fd < 0) {
		printf(" rw_open=%s\n", strerror(errno));
		return 0;
	}
	printf(" rw_write=%s\n", result(io_lba8(fd, 0x01, buf)));
	close(fd);
	return 0;
}

/* A 4 KiB Read (0x02) or Write (0x01) at LBA 24 through NVME_IOCTL_SUBMIT_IO. */
static int submit_lba24(int fd, uint8_t opcode, char *buf)
{
	struct nvme_user_io io = { .opcode = opcode, .nblocks = PAGE / 512 - 1, .slba = 24,
				   .addr = (uintptr_t)buf };

	return ioctl(fd, NVME_IOCTL_SUBMIT_IO, &io);
}

/* The result of a Read, or "differs" if it succeeded with other bytes than `expected`. */
static const char *read_result(int ret, const char *buf, const char *expected)
{
	if (ret == 0 && memcmp(buf, expected, PAGE) != 0)
		return "differs";
	return result(ret);
}

static int ns_io(int fd)
{
	static char data[PAGE], again[PAGE], vec[PAGE], buf[PAGE];
	struct iovec iov[3] = { { vec, 1000 }, { vec + 1000, 2000 }, { vec + 3000, PAGE - 3000 } };
	struct nvme_passthru_cmd64 cmd64 = { .opcode = 0x02, .addr = (uintptr_t)again,
					     .data_len = PAGE, .cdw10 = 24, .cdw12 = PAGE / 512 - 1 };
	struct nvme_user_io bad = { .opcode = 0x09, .addr = (uintptr_t)buf };
	struct nvme_admin_cmd id = identify(buf, PAGE, 1);
	int nsid = ioctl(fd, NVME_IOCTL_ID);

	printf("id=%s", nsid > 0 ? "" : result(nsid));
	if (nsid > 0)
		printf("%d", nsid);
	cmd64.nsid = nsid;
	printf(" read=%s", result(submit_lba24(fd, 0x02, data)));
	printf(" write=%s", result(submit_lba24(fd, 0x01, data)));
	printf(" io64=%s", read_result(ioctl(fd, NVME_IOCTL_IO64_CMD, &cmd64), again, data));
	cmd64.addr = (uintptr_t)iov;
	cmd64.data_len = 3;
	printf(" vec=%s", read_result(ioctl(fd, NVME_IOCTL_IO64_CMD_VEC, &cmd64), vec, data));
	printf(" bad_opcode=%s", result(ioctl(fd, NVME_IOCTL_SUBMIT_IO, &bad)));
	printf(" admin=%s\n", result(admin(fd, &id)));
	return 0;
}

static int overlong(int fd)
{
	static char expected[2 * PAGE], buf[2 * PAGE];
	struct nvme_passthru_cmd64 cmd = { .opcode = 0x02, .addr = (uintptr_t)buf,
					   .data_len = 2 * PAGE, .cdw12 = 127 };
	struct nvme_user_io io = { .opcode = 0x02, .nblocks = 2 * PAGE / 512 - 1,
				   .addr = (uintptr_t)expected };
	int nsid = ioctl(fd, NVME_IOCTL_ID), ret;

	cmd.nsid = nsid;
	ret = ioctl(fd, NVME_IOCTL_SUBMIT_IO, &io);
	if (ret != 0) {
		printf("plain_read=%s\n", result(ret));
		return 0;
	}
	ret = ioctl(fd, NVME_IOCTL_IO64_CMD, &cmd);
	printf("long_read=%s", ret == 0 && memcmp(buf, expected, sizeof(buf)) ? "differs" : result(ret));
	/* One range of no blocks at LBA 0, with the deallocate attribute. */
	memset(buf, 0, sizeof(buf));
	cmd = (struct nvme_passthru_cmd64){ .opcode = 0x09, .nsid = nsid, .addr = (uintptr_t)buf,
					    .data_len = 2 * PAGE, .cdw11 = 1 << 2 };
	printf(" dsm_two_pages=%s\n", result(ioctl(fd, NVME_IOCTL_IO64_CMD, &cmd)));
	return 0;
}

int main(int argc, char **argv)
{
	int privileged = 1, fd;

	if (argc > 1 && strcmp(argv[1], "--as-nobody") == 0) {
		if (setgid(65534) != 0 || setuid(65534) != 0) {
			perror("setuid");
			return 1;
		}
		privileged = 0;
		argv++;
		argc--;
	}
	if (argc < 3) {
		fprintf(stderr, "usage: passthru [--as-nobody] cases DEV | fuzz DEV N SEED | io-read DEV | io-rewrite DEV | ns-io DEV | overlong DEV\n");
		return 2;
	}
	if (strncmp(argv[2], "fd:", 3) == 0)
		fd = atoi(argv[2] + 3);
	else
		fd = open(argv[2], O_RDONLY);
	if (fd < 0) {
		perror(argv[2]);
		return 1;
	}
	if (strcmp(argv[1], "cases") == 0)
		return cases(fd);
	if (strcmp(argv[1], "io-rewrite") == 0)
		return io_rewrite(fd, argv[2]);
	if (strcmp(argv[1], "ns-io") == 0)
		return ns_io(fd);
	if (strcmp(argv[1], "overlong") == 0) {
		close(fd);
		fd = open(argv[2], O_RDWR);
		if (fd < 0) {
			perror(argv[2]);
			return 1;
		}
		return overlong(fd);
	}
	if (strcmp(argv[1], "io-read") == 0) {
		static char buf[PAGE];
		struct nvme_passthru_cmd cmd = { .opcode = 0x02, .nsid = 1, .addr = (uintptr_t)buf,
						 .data_len = PAGE, .cdw10 = 8, .cdw12 = 7 };

		printf("%s\n", result(ioctl(fd, NVME_IOCTL_IO_CMD, &cmd)));
		return 0;
	}
	if (strcmp(argv[1], "fuzz") == 0 && argc == 5)
		return fuzz(fd, atol(argv[3]), strtoul(argv[4], NULL, 0), privileged);
	fprintf(stderr, "usage: passthru [--as-nobody] cases DEV | fuzz DEV N SEED | io-read DEV | io-rewrite DEV | ns-io DEV | overlong DEV\n");
	return 2;
}
