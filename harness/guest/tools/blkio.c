// SPDX-License-Identifier: GPL-2.0
/*
 * blkio: block-device checks for the NVMe driver tests. All I/O is O_DIRECT so it reaches the
 * driver rather than the page cache; queue depth comes from native Linux AIO through raw syscalls,
 * because the guest kernel has no io_uring and the initramfs has no libaio.
 *
 *   blkio fill DEV SEED MIB [OFFSET_MIB]    write the SEED pattern over MIB MiB from OFFSET_MIB MiB
 *                                           in 1 MiB writes, then fsync
 *   blkio fill-dsync DEV SEED MIB [OFFSET_MIB]
 *                                           the same with O_DSYNC: each write durable when it
 *                                           returns (FUA writes, or writes and flushes)
 *   blkio verify DEV SEED MIB [OFFSET_MIB]  read the same range back, count bad 512-byte sectors
 *   blkio zero DEV MIB [OFFSET_MIB]         zero the range with the disk's own Write Zeroes
 *                                           (fallocate punch hole: the block layer does not fall
 *                                           back to writing zero pages), read it back, count
 *                                           sectors that are not zero
 *   blkio bench DEV[,DEV...] MODE BS QD SECONDS [SPAN_MIB [SLICE]]
 *                                           MODE randread|seqread|seqwrite, BS bytes per request,
 *                                           QD requests kept in flight, over the first SPAN_MIB MiB
 *                                           (default and cap: the device size); several devices
 *                                           with the same buffers: one after the other, or with
 *                                           SLICE taking turns every SLICE seconds
 *   blkio hammer DEV SECONDS                4 KiB reads, each written back, at random offsets in
 *                                           the first 64 MiB until an I/O error or SECONDS pass
 *   blkio atomic DEV SEED BYTES SECTOR      write BYTES of the SEED pattern at SECTOR as one
 *                                           atomic write (RWF_ATOMIC: whole or not at all, never
 *                                           split), read it back
 *   blkio gapped DEV SEED PIECES SECTOR     write PIECES 512-byte pieces of the SEED pattern at
 *                                           SECTOR in one pwritev, each from the middle of its own
 *                                           page (data that PRPs cannot describe), read them back
 *                                           the same way in one preadv
 *
 * Each 8-byte word of the pattern depends on the seed and on its absolute byte offset, so every
 * sector checks on its own and data from the wrong LBA or from another seed never matches.
 *
 * Output (stdout): "fill bytes=N seconds=S", "verify bytes=N mismatches=M seconds=S" and
 * "zero bytes=N nonzero=M seconds=S" (each plus "first_mismatch offset=N" where one is bad),
 * "bench dev=D mode=M bs=B qd=Q ios=N bytes=N seconds=S iops=X mbps=Y errors=E" (one per device),
 * "hammer ios=N errors=E last_errno=NAME|NUMBER|0|short|hung", "atomic bytes=N
 * errno=NAME|NUMBER|0|short mismatches=M", "gapped bytes=N mismatches=M".
 *
 * Exit codes: 0 success; 1 I/O error, mismatch, or a request that never completed; 2 bad
 * arguments or setup failure (open, memory, io_setup); hammer: 0 when it ended on an I/O error
 * (expected on surprise removal), 3 when time ran out without one, 1 when a request hung.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/aio_abi.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define MIB ((uint64_t)1 << 20)
#define SECTOR 512
#define MAX_MIB ((uint64_t)1 << 24)	/* 16 TiB: beyond any test disk, far from overflow */
#define MAX_SECONDS 600.0
#define MAX_QD 256
#define MAX_BS (8 * MIB)
#define MAX_BUFFERS (256 * MIB)		/* BS * QD; the guest has little memory */
#define REAP_LIMIT 10.0			/* seconds in-flight requests get once we stop */
#define HAMMER_REGION (64 * MIB)
#define HAMMER_BS 4096

static const char usage_text[] =
	"usage:\n"
	"  blkio fill DEV SEED MIB [OFFSET_MIB]    write the SEED pattern over MIB MiB from\n"
	"                                          OFFSET_MIB MiB (default 0), then fsync\n"
	"  blkio fill-dsync DEV SEED MIB [OFFSET_MIB]\n"
	"                                          the same, each write durable (O_DSYNC)\n"
	"  blkio verify DEV SEED MIB [OFFSET_MIB]  read it back, count bad 512-byte sectors\n"
	"  blkio zero DEV MIB [OFFSET_MIB]         zero the range with the disk's Write Zeroes\n"
	"                                          only, read it back, count sectors not zero\n"
	"  blkio bench DEV[,DEV...] MODE BS QD SECONDS [SPAN_MIB [SLICE]]\n"
	"        MODE randread|seqread|seqwrite, BS multiple of 512 (max 8 MiB), QD 1..256,\n"
	"        SECONDS up to 600 (decimals allowed), SPAN_MIB default and cap: the device size;\n"
	"        devices with the same buffers, one after the other (BLKIO_MARK set: mark each run\n"
	"        for the harness's instruction counter), or with SLICE (seconds) taking turns\n"
	"        until each had SECONDS, in the order ABBA ABBA..., so that slow spells of the host\n"
	"        fall on all of them alike\n"
	"  blkio hammer DEV SECONDS                4 KiB read+write-back in the first 64 MiB\n"
	"                                          until an I/O error or SECONDS pass\n"
	"  blkio atomic DEV SEED BYTES SECTOR      one atomic write (RWF_ATOMIC) of BYTES (a\n"
	"                                          multiple of 512, max 8 MiB) at SECTOR, read back\n"
	"  blkio gapped DEV SEED PIECES SECTOR     PIECES (1..64) 512-byte pieces, each from the\n"
	"                                          middle of its own page, in one pwritev at SECTOR,\n"
	"                                          read back in one preadv\n"
	"SEED: decimal or 0x-hex 64-bit number. MIB, OFFSET_MIB, SPAN_MIB: decimal MiB.\n"
	"exit: 0 ok (hammer: ended on an I/O error), 1 I/O error/mismatch/hung request,\n"
	"      2 bad arguments or setup failure, 3 hammer ran out of time without an error\n";

static int usage(const char *fmt, const char *arg)
{
	if (fmt) {
		fputs("blkio: ", stderr);
		fprintf(stderr, fmt, arg);
		fputc('\n', stderr);
	}
	fputs(usage_text, stderr);
	return 2;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static struct timespec timeout_of(double seconds)
{
	struct timespec ts;

	if (seconds < 0)
		seconds = 0;
	ts.tv_sec = (time_t)seconds;
	ts.tv_nsec = (long)((seconds - ts.tv_sec) * 1e9);
	if (ts.tv_nsec >= 1000000000L)
		ts.tv_nsec = 999999999L;
	return ts;
}

/* Strict: digits only (0x-hex if allowed); strtoull would accept signs, blanks and overflow. */
static int parse_u64(const char *s, int allow_hex, uint64_t min, uint64_t max, uint64_t *out)
{
	unsigned base = 10;
	uint64_t v = 0;

	if (allow_hex && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		s += 2;
	}
	if (!*s)
		return -1;
	for (; *s; s++) {
		unsigned d;

		if (*s >= '0' && *s <= '9')
			d = *s - '0';
		else if (base == 16 && *s >= 'a' && *s <= 'f')
			d = *s - 'a' + 10;
		else if (base == 16 && *s >= 'A' && *s <= 'F')
			d = *s - 'A' + 10;
		else
			return -1;
		if (v > (UINT64_MAX - d) / base)
			return -1;
		v = v * base + d;
	}
	if (v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

/* Plain decimals only: strtod would also take "inf", "nan", hex floats and leading blanks. */
static int parse_seconds(const char *s, double *out)
{
	const char *p;
	char *end;
	double v;

	if (!*s)
		return -1;
	for (p = s; *p; p++)
		if (!isdigit((unsigned char)*p) && *p != '.')
			return -1;
	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(v) || !(v > 0) || v > MAX_SECONDS)
		return -1;
	*out = v;
	return 0;
}

static uint64_t splitmix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/*
 * Multiplying by an odd constant is a bijection, so for one seed two offsets never give the same
 * input, nor do two seeds at one offset; splitmix64 is a bijection too, so neither do the words.
 */
static uint64_t pattern_word(uint64_t seed, uint64_t offset)
{
	return splitmix64(seed ^ (offset * 0xd1b54a32d192ed03ULL));
}

/*
 * Fills len bytes (a multiple of 8) at buf with the SEED pattern of the device bytes from
 * offset.
 */
static void fill_pattern(char *buf, uint64_t seed, uint64_t offset, size_t len)
{
	for (size_t i = 0; i < len; i += 8) {
		uint64_t word = pattern_word(seed, offset + i);

		memcpy(buf + i, &word, 8);
	}
}

/* Whether the sector at buf holds zeroes (zero) or else the SEED pattern of the device sector
 * at offset. */
static int sector_holds(const char *buf, int zero, uint64_t seed, uint64_t offset)
{
	for (size_t i = 0; i < SECTOR; i += 8) {
		uint64_t word;

		memcpy(&word, buf + i, 8);
		if (word != (zero ? 0 : pattern_word(seed, offset + i)))
			return 0;
	}
	return 1;
}

static uint64_t xorshift64(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *state = x;
}

static void *aligned_buffer(size_t len)
{
	void *p = NULL;

	if (posix_memalign(&p, 4096, len))
		return NULL;
	return p;
}

/* Block devices answer BLKGETSIZE64; regular files (host tests) only fstat. 0 when unknown. */
static uint64_t device_size(int fd)
{
	uint64_t size = 0;
	struct stat st;

	if (ioctl(fd, BLKGETSIZE64, &size) == 0)
		return size;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
		return st.st_size;
	return 0;
}

/* How the output names errno e: its name, its number for one not listed, "0" for none. */
static const char *errno_text(int e)
{
	static char number[16];
	static const struct { int e; const char *name; } names[] = {
		{ EIO, "EIO" }, { ENODEV, "ENODEV" }, { ENXIO, "ENXIO" }, { EBADF, "EBADF" },
		{ EINVAL, "EINVAL" }, { ENOSPC, "ENOSPC" }, { EAGAIN, "EAGAIN" },
		{ EINTR, "EINTR" }, { ETIMEDOUT, "ETIMEDOUT" }, { ENOMEM, "ENOMEM" },
		{ EPERM, "EPERM" }, { EACCES, "EACCES" }, { EROFS, "EROFS" },
		{ ENOLINK, "ENOLINK" }, { ECANCELED, "ECANCELED" }, { EREMOTEIO, "EREMOTEIO" },
		{ ESHUTDOWN, "ESHUTDOWN" }, { EOPNOTSUPP, "EOPNOTSUPP" }, { EFAULT, "EFAULT" },
		{ EBUSY, "EBUSY" }, { ENOTBLK, "ENOTBLK" }, { EILSEQ, "EILSEQ" },
		{ ENODATA, "ENODATA" }, { ENOTCONN, "ENOTCONN" }, { ENOTTY, "ENOTTY" },
	};
	size_t i;

	if (!e)
		return "0";
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].e == e)
			return names[i].name;
	snprintf(number, sizeof(number), "%d", e);
	return number;
}

/* Native AIO through raw syscalls: there is no libaio in the guest. */
static long aio_setup(unsigned nr, aio_context_t *ctx)
{
	return syscall(SYS_io_setup, nr, ctx);
}

static long aio_submit(aio_context_t ctx, long n, struct iocb **iocbs)
{
	return syscall(SYS_io_submit, ctx, n, iocbs);
}

static long aio_getevents(aio_context_t ctx, long min, long max, struct io_event *ev,
			  struct timespec *timeout)
{
	return syscall(SYS_io_getevents, ctx, min, max, ev, timeout);
}

static long aio_destroy(aio_context_t ctx)
{
	return syscall(SYS_io_destroy, ctx);
}

static void prepare(struct iocb *cb, int fd, int write, void *buf, size_t len, uint64_t offset,
		    uint64_t tag)
{
	memset(cb, 0, sizeof(*cb));
	cb->aio_data = tag;
	cb->aio_lio_opcode = write ? IOCB_CMD_PWRITE : IOCB_CMD_PREAD;
	cb->aio_fildes = fd;
	cb->aio_buf = (uintptr_t)buf;
	cb->aio_nbytes = len;
	cb->aio_offset = offset;
}

/*
 * Synchronous full-length transfer. Returns the bytes moved; when short, errno holds the error or
 * 0 for end of device. Retries are bounded so an endless EINTR or trickle cannot spin forever.
 */
static size_t transfer(int fd, int write, char *buf, size_t len, uint64_t offset)
{
	size_t done = 0;
	int tries;

	errno = 0;
	for (tries = 0; done < len && tries < 64; tries++) {
		ssize_t n = write ? pwrite(fd, buf + done, len - done, offset + done)
				  : pread(fd, buf + done, len - done, offset + done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return done;
		if (n == 0) {
			errno = 0;
			return done;
		}
		errno = 0;
		done += n;
	}
	return done;
}

/* Parses MIB [OFFSET_MIB] (offset NULL when not given); prints the usage and fails on bad ones. */
static int parse_range(const char *mib, const char *offset, uint64_t *mib_out,
		       uint64_t *offset_out)
{
	*offset_out = 0;
	if (parse_u64(mib, 0, 1, MAX_MIB, mib_out))
		return usage("bad MIB '%s': want a decimal number of MiB, 1..16777216", mib);
	if (offset && parse_u64(offset, 0, 0, MAX_MIB, offset_out))
		return usage("bad OFFSET_MIB '%s': want a decimal number of MiB, 0..16777216",
			     offset);
	return 0;
}

static void describe(char *out, size_t size, const char *what, size_t done, size_t len)
{
	if (errno)
		snprintf(out, size, "%s", strerror(errno));
	else
		snprintf(out, size, "short %s (%zu of %zu bytes)", what, done, len);
}

static int open_device(const char *cmd, const char *path, int flags)
{
	int fd = open(path, flags | O_DIRECT | O_CLOEXEC);

	if (fd < 0)
		fprintf(stderr, "blkio: %s: cannot open %s: %s\n", cmd, path, strerror(errno));
	return fd;
}

enum pattern_cmd { FILL, FILL_DSYNC, VERIFY, ZERO };

/*
 * fill, fill-dsync and verify: argv = CMD DEV SEED MIB [OFFSET_MIB]; zero, which punches a hole
 * and verifies zeroes: argv = zero DEV MIB [OFFSET_MIB].
 */
static int cmd_pattern(int argc, char **argv, enum pattern_cmd what)
{
	const char *cmd = argv[0];
	int write = what == FILL || what == FILL_DSYNC, zero = what == ZERO;
	int fixed = zero ? 3 : 4; /* arguments before the optional OFFSET_MIB */
	uint64_t seed = 0, mib, first_mib, i, bytes = 0, mismatches = 0, first_bad = 0;
	char message[128];
	double start;
	char *buf;
	int fd, flags, failed = 0;

	if (argc != fixed && argc != fixed + 1)
		return usage(zero ? "%s takes DEV MIB [OFFSET_MIB]" : "%s takes DEV SEED MIB [OFFSET_MIB]",
			     cmd);
	if (!zero && parse_u64(argv[2], 1, 0, UINT64_MAX, &seed))
		return usage("bad SEED '%s': want a decimal or 0x-hex 64-bit number", argv[2]);
	if (parse_range(argv[fixed - 1], argc > fixed ? argv[fixed] : NULL, &mib, &first_mib))
		return 2;
	flags = write ? O_WRONLY : zero ? O_RDWR : O_RDONLY;
	fd = open_device(cmd, argv[1], flags | (what == FILL_DSYNC ? O_DSYNC : 0));
	if (fd < 0)
		return 2;
	buf = aligned_buffer(MIB);
	if (!buf) {
		fprintf(stderr, "blkio: %s: out of memory\n", cmd);
		return 2;
	}

	start = now();
	/* A hole in a block device is zeroes written by the disk (BLKDEV_ZERO_NOFALLBACK). */
	if (zero && fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, first_mib * MIB,
			      mib * MIB)) {
		printf("zero error at offset=%" PRIu64 ": fallocate: %s\n", first_mib * MIB,
		       strerror(errno));
		return 1;
	}
	for (i = 0; i < mib && !failed; i++) {
		uint64_t base = (first_mib + i) * MIB;
		size_t done, s;

		if (write)
			fill_pattern(buf, seed, base, MIB);
		done = transfer(fd, write, buf, MIB, base);
		if (done < MIB) {
			describe(message, sizeof(message), write ? "write" : "read", done, MIB);
			printf("%s error at offset=%" PRIu64 ": %s\n", cmd, base + done, message);
			failed = 1;
		}
		if (!write) {
			/* Only whole sectors that really arrived are judged. */
			for (s = 0; s < done / SECTOR; s++) {
				uint64_t off = base + s * SECTOR;

				if (!sector_holds(buf + s * SECTOR, zero, seed, off) &&
				    mismatches++ == 0)
					first_bad = off;
			}
		}
		bytes += done;
	}
	if (write && !failed && fsync(fd)) {
		printf("fill error at offset=%" PRIu64 ": fsync: %s\n", first_mib * MIB,
		       strerror(errno));
		failed = 1;
	}
	if (write) {
		if (!failed)
			printf("fill bytes=%" PRIu64 " seconds=%.3f\n", bytes, now() - start);
		return failed;
	}
	printf("%s bytes=%" PRIu64 " %s=%" PRIu64 " seconds=%.3f\n", cmd, bytes,
	       zero ? "nonzero" : "mismatches", mismatches, now() - start);
	if (mismatches)
		printf("first_mismatch offset=%" PRIu64 "\n", first_bad);
	return failed || mismatches;
}

enum mode { RANDREAD, SEQREAD, SEQWRITE };
static const char *const mode_names[] = { "randread", "seqread", "seqwrite" };

enum slot_state { IDLE, PREPARED, IN_FLIGHT };

struct bench {
	const char *dev;
	int fd;
	enum mode mode;
	aio_context_t ctx;
	uint64_t bs, qd, span, rng, next_seq;
	uint64_t ios, bytes, errors, in_flight;
	double elapsed;
	int stop;
	struct iocb cbs[MAX_QD];
	enum slot_state state[MAX_QD];
	char *bufs[MAX_QD];
	struct io_event events[MAX_QD];
};

static uint64_t next_offset(struct bench *b)
{
	uint64_t off;

	if (b->mode == RANDREAD)
		return (xorshift64(&b->rng) % (b->span / b->bs)) * b->bs;
	off = b->next_seq;
	b->next_seq += b->bs;
	if (b->next_seq + b->bs > b->span)
		b->next_seq = 0;
	return off;
}

static void bench_error(struct bench *b, uint64_t offset, int err, long long res)
{
	/* Only the first error is described; later ones are usually its consequences. */
	if (b->errors++ == 0) {
		if (err)
			fprintf(stderr, "blkio: bench: error at offset=%" PRIu64 ": %s\n", offset,
				strerror(err));
		else
			fprintf(stderr, "blkio: bench: short transfer at offset=%" PRIu64
				": %lld of %" PRIu64 " bytes\n", offset, res, b->bs);
	}
	b->stop = 1;
}

/*
 * One I/O per io_submit, as fio submits by default (iodepth_batch_submit=1). Several in one call
 * share a plug, in which the block layer merges adjacent sequential I/Os into larger requests;
 * whether it can depends on how many completions the last interrupt brought, which made the
 * sequential figures flip between two modes 2x apart from run to run.
 */
static void bench_submit(struct bench *b)
{
	struct iocb *cb;
	uint64_t i;
	long r;

	for (i = 0; i < b->qd && !b->stop; i++) {
		if (b->state[i] == IDLE) {
			prepare(&b->cbs[i], b->fd, b->mode == SEQWRITE, b->bufs[i], b->bs,
				next_offset(b), i);
			b->state[i] = PREPARED;
		}
		if (b->state[i] != PREPARED)
			continue;
		cb = &b->cbs[i];
		r = aio_submit(b->ctx, 1, &cb);
		/* Out of resources with requests pending: reap first, submit the rest next round. */
		if (r < 0 && (errno == EAGAIN || errno == EINTR) && b->in_flight)
			return;
		if (r != 1) {
			bench_error(b, cb->aio_offset, r < 0 ? errno : EAGAIN, 0);
			return;
		}
		b->state[i] = IN_FLIGHT;
		b->in_flight++;
	}
}

static void bench_reap(struct bench *b, double seconds)
{
	struct timespec ts = timeout_of(seconds);
	long r = aio_getevents(b->ctx, 1, b->qd, b->events, &ts), i;

	if (r < 0 && errno != EINTR) {
		fprintf(stderr, "blkio: bench: io_getevents: %s\n", strerror(errno));
		b->errors++;
		b->stop = 1;
	}
	for (i = 0; i < r; i++) {
		struct io_event *ev = &b->events[i];
		uint64_t slot = ev->data;

		if (slot >= b->qd || b->state[slot] != IN_FLIGHT)
			continue;
		b->state[slot] = IDLE;
		b->in_flight--;
		if (ev->res < 0)
			bench_error(b, b->cbs[slot].aio_offset, (int)-ev->res, 0);
		else if ((uint64_t)ev->res != b->bs)
			bench_error(b, b->cbs[slot].aio_offset, 0, ev->res);
		else {
			b->ios++;
			b->bytes += ev->res;
		}
	}
}

/*
 * With BLKIO_MARK set, executes `xchg %bx,%bx` (a no-op) around each device's run: the harness's
 * instruction counter (harness/qemu-plugins/counter.c) records its count at each one.
 */
static void mark(int enabled)
{
#if defined(__x86_64__) || defined(__i386__)
	if (enabled)
		__asm__ volatile("xchg %%bx, %%bx" ::: "memory");
#endif
}

/* Opens b->dev and sets up its context and counters. Returns the exit code. */
static int bench_open(struct bench *b, uint64_t span_mib)
{
	uint64_t size, i;

	b->fd = open_device("bench", b->dev, b->mode == SEQWRITE ? O_WRONLY : O_RDONLY);
	if (b->fd < 0)
		return 2;
	size = device_size(b->fd);
	if (!size) {
		fprintf(stderr, "blkio: bench: cannot tell the size of %s\n", b->dev);
		return 2;
	}
	b->span = span_mib && span_mib * MIB < size ? span_mib * MIB : size;
	b->span -= b->span % b->bs;
	if (b->span < b->bs) {
		fprintf(stderr, "blkio: bench: span of %" PRIu64 " bytes is smaller than BS\n",
			b->span);
		return 2;
	}
	b->ctx = 0;
	if (aio_setup(b->qd, &b->ctx)) {
		fprintf(stderr, "blkio: bench: io_setup(%" PRIu64 "): %s\n", b->qd,
			strerror(errno));
		return 2;
	}
	b->rng = 0x2545f4914f6cdd1dULL;	/* fixed, so runs read the same offsets */
	for (i = 0; i < b->qd; i++)
		b->state[i] = IDLE;
	return 0;
}

/*
 * Keeps QD requests in flight for `seconds`, then waits a bounded time for them to come back, so
 * that nothing of this run overlaps the next one's; the waiting counts in the elapsed time.
 */
static void bench_run(struct bench *b, double seconds, int marks)
{
	double start, deadline;

	mark(marks);
	start = now();
	deadline = start + seconds;
	while (!b->stop) {
		double left;

		bench_submit(b);
		left = deadline - now();
		if (left <= 0)
			break;
		if (!b->in_flight) {
			if (!b->stop)
				bench_error(b, 0, EAGAIN, 0);
			break;
		}
		bench_reap(b, left < 0.5 ? left : 0.5);
	}
	deadline = now() + REAP_LIMIT;
	while (b->in_flight) {
		double left = deadline - now();

		if (left <= 0)
			break;
		bench_reap(b, left < 1 ? left : 1);
	}
	b->elapsed += now() - start;
	mark(marks);
	if (b->in_flight)
		b->stop = 1;
}

/* Prints b's line and closes it. Returns the exit code. */
static int bench_report(struct bench *b)
{
	int stuck = b->in_flight != 0;
	double per_second;

	if (stuck) {
		fprintf(stderr, "blkio: bench: %" PRIu64 " requests still in flight %.0f s after "
			"stopping\n", b->in_flight, REAP_LIMIT);
		b->errors += b->in_flight;
	}
	/* A device whose turn never came (another one hung) ran for no time. */
	per_second = b->elapsed > 0 ? 1 / b->elapsed : 0;
	printf("bench dev=%s mode=%s bs=%" PRIu64 " qd=%" PRIu64 " ios=%" PRIu64 " bytes=%" PRIu64
	       " seconds=%.3f iops=%.1f mbps=%.2f errors=%" PRIu64 "\n", b->dev, mode_names[b->mode],
	       b->bs, b->qd, b->ios, b->bytes, b->elapsed, b->ios * per_second,
	       b->bytes / 1e6 * per_second, b->errors);
	/* The kernel waits for hung requests when the context goes away; the line is out first. */
	fflush(stdout);
	if (stuck)
		return 1;
	aio_destroy(b->ctx);
	close(b->fd);
	return b->errors ? 1 : 0;
}

/*
 * The devices take turns every `slice` seconds until each had `seconds`, in the order ABBA ABBA
 * (for two; forwards then backwards for more), so that a slow spell of the host, or a drift, falls
 * on all of them alike instead of on whichever ran during it. With `slice` = `seconds`, one turn
 * each: one after the other. A device with an error sits out its later turns; one with a request
 * that never came back ends them all.
 */
static void bench_in_turns(struct bench **b, int n, double seconds, double slice, int marks)
{
	long turns = (long)(seconds / slice), turn;
	int i, k;

	if (turns * slice < seconds)
		turns++;

	for (turn = 0; turn < turns; turn++) {
		double left = seconds - turn * slice, run = left < slice ? left : slice;

		for (k = 0; k < n; k++) {
			i = turn % 2 ? n - 1 - k : k;
			if (b[i]->stop)
				continue;
			bench_run(b[i], run, marks);
			/* A request that never completed leaves its context and device behind: stop. */
			if (b[i]->in_flight)
				return;
		}
	}
}

#define MAX_BENCH_DEVICES 8

/*
 * argv = bench DEV[,DEV...] MODE BS QD SECONDS [SPAN_MIB [SLICE]]. Several devices are measured
 * with the same buffers, one at a time: the buffers' physical pages decide how many segments a
 * request has, so separate processes would not give the devices' drivers the same work.
 */
static int cmd_bench(int argc, char **argv)
{
	uint64_t span_mib = 0, i;
	double seconds, slice = 0;
	struct bench *b[MAX_BENCH_DEVICES];
	char *devs, *dev, *save = NULL;
	int marks = getenv("BLKIO_MARK") != NULL, rc = 0, n = 0, k;

	if (argc < 6 || argc > 8)
		return usage("%s takes DEV[,DEV...] MODE BS QD SECONDS [SPAN_MIB [SLICE]]", argv[0]);
	devs = strdup(argv[1]);
	b[0] = calloc(1, sizeof(*b[0]));
	if (!b[0] || !devs) {
		fprintf(stderr, "blkio: bench: out of memory\n");
		return 2;
	}
	for (i = 0; i < 3 && strcmp(argv[2], mode_names[i]); i++)
		;
	if (i == 3)
		return usage("bad MODE '%s': want randread, seqread or seqwrite", argv[2]);
	b[0]->mode = i;
	if (parse_u64(argv[3], 0, SECTOR, MAX_BS, &b[0]->bs) || b[0]->bs % SECTOR)
		return usage("bad BS '%s': want a multiple of 512 bytes, at most 8388608", argv[3]);
	if (parse_u64(argv[4], 0, 1, MAX_QD, &b[0]->qd))
		return usage("bad QD '%s': want 1..256", argv[4]);
	if (b[0]->bs * b[0]->qd > MAX_BUFFERS)
		return usage("BS * QD is over 256 MiB of buffers%s", "");
	if (parse_seconds(argv[5], &seconds))
		return usage("bad SECONDS '%s': want a decimal number, more than 0, at most 600",
			     argv[5]);
	if (argc >= 7 && parse_u64(argv[6], 0, 1, MAX_MIB, &span_mib))
		return usage("bad SPAN_MIB '%s': want a decimal number of MiB, 1..16777216",
			     argv[6]);
	if (argc == 8 && parse_seconds(argv[7], &slice))
		return usage("bad SLICE '%s': want a decimal number, more than 0, at most 600",
			     argv[7]);
	for (i = 0; i < b[0]->qd; i++) {
		b[0]->bufs[i] = aligned_buffer(b[0]->bs);
		if (!b[0]->bufs[i]) {
			fprintf(stderr, "blkio: bench: out of memory\n");
			return 2;
		}
		/* Constant and non-zero, so dropped writes are not mistaken for zeroes. */
		memset(b[0]->bufs[i], 0xa5, b[0]->bs);
	}
	for (dev = strtok_r(devs, ",", &save); dev; dev = strtok_r(NULL, ",", &save)) {
		if (n == MAX_BENCH_DEVICES)
			return usage("more than 8 devices in '%s'", argv[1]);
		if (n) {
			/* Same mode, sizes and buffers as the first. */
			b[n] = malloc(sizeof(*b[n]));
			if (!b[n]) {
				fprintf(stderr, "blkio: bench: out of memory\n");
				return 2;
			}
			*b[n] = *b[0];
		}
		b[n++]->dev = dev;
	}
	/* Without SLICE, one turn each: the devices one after the other. */
	if (!slice)
		slice = seconds;
	for (k = 0; k < n; k++) {
		rc = bench_open(b[k], span_mib);
		if (rc) {
			/* Nothing ran: no lines to print. */
			while (k--) {
				aio_destroy(b[k]->ctx);
				close(b[k]->fd);
			}
			return rc;
		}
	}
	bench_in_turns(b, n, seconds, slice, marks);
	for (k = 0; k < n; k++) {
		int r = bench_report(b[k]);

		if (r > rc)
			rc = r;
	}
	return rc;
}

/*
 * One request through AIO rather than pread, so a request the driver never completes costs at
 * most REAP_LIMIT seconds instead of an unkillable hang. Returns the result (bytes or -errno);
 * *hung is set when nothing came back in time.
 */
static long long hammer_io(aio_context_t ctx, int fd, int write, char *buf, uint64_t offset,
			   int *hung)
{
	struct iocb cb, *cbs[1] = { &cb };
	struct io_event ev;
	double deadline = now() + REAP_LIMIT;
	int tries;

	prepare(&cb, fd, write, buf, HAMMER_BS, offset, 0);
	for (tries = 0; tries < 64; tries++) {
		long r = aio_submit(ctx, 1, cbs);

		if (r == 1)
			break;
		if (r < 0 && errno != EINTR && errno != EAGAIN)
			return -errno;
	}
	if (tries == 64)
		return -EAGAIN;
	for (tries = 0; tries < 1000; tries++) {
		double left = deadline - now();
		struct timespec ts;
		long r;

		if (left <= 0)
			break;
		ts = timeout_of(left);
		r = aio_getevents(ctx, 1, 1, &ev, &ts);
		if (r == 1)
			return ev.res;
		if (r < 0 && errno != EINTR)
			return -errno;
	}
	*hung = 1;
	return 0;
}

/* argv = hammer DEV SECONDS */
static int cmd_hammer(int argc, char **argv)
{
	uint64_t region, size, ios = 0, rng = 0x9e3779b97f4a7c15ULL, offset = 0;
	double seconds, deadline;
	long long res = 0;
	aio_context_t ctx = 0;
	int fd, hung = 0, short_io = 0, pass;
	char *buf;

	if (argc != 3)
		return usage("%s takes DEV SECONDS", argv[0]);
	if (parse_seconds(argv[2], &seconds))
		return usage("bad SECONDS '%s': want a decimal number, more than 0, at most 600",
			     argv[2]);
	fd = open_device("hammer", argv[1], O_RDWR);
	if (fd < 0)
		return 2;
	size = device_size(fd);
	region = size && size < HAMMER_REGION ? size - size % HAMMER_BS : HAMMER_REGION;
	if (region < HAMMER_BS) {
		fprintf(stderr, "blkio: hammer: %s is smaller than 4 KiB\n", argv[1]);
		return 2;
	}
	buf = aligned_buffer(HAMMER_BS);
	if (!buf) {
		fprintf(stderr, "blkio: hammer: out of memory\n");
		return 2;
	}
	if (aio_setup(1, &ctx)) {
		fprintf(stderr, "blkio: hammer: io_setup: %s\n", strerror(errno));
		return 2;
	}

	deadline = now() + seconds;
	while (now() < deadline && res >= 0 && !hung && !short_io) {
		offset = (xorshift64(&rng) % (region / HAMMER_BS)) * HAMMER_BS;
		/* Writing back what was read keeps the disk contents intact for later checks. */
		for (pass = 0; pass < 2; pass++) {
			res = hammer_io(ctx, fd, pass, buf, offset, &hung);
			if (hung || res < 0)
				break;
			if (res != HAMMER_BS) {
				short_io = 1;	/* the device shrank, as it may on removal */
				break;
			}
			ios++;
		}
	}
	if (hung) {
		fprintf(stderr, "blkio: hammer: request at offset=%" PRIu64 " did not complete "
			"within %.0f s\n", offset, REAP_LIMIT);
		printf("hammer ios=%" PRIu64 " errors=1 last_errno=hung\n", ios);
		fflush(stdout);
		return 1;
	}
	if (short_io || res < 0) {
		printf("hammer ios=%" PRIu64 " errors=1 last_errno=%s\n", ios,
		       short_io ? "short" : errno_text((int)-res));
		aio_destroy(ctx);
		return 0;
	}
	printf("hammer ios=%" PRIu64 " errors=0 last_errno=0\n", ios);
	aio_destroy(ctx);
	return 3;
}

#ifndef RWF_ATOMIC
#define RWF_ATOMIC 0x00000040
#endif

/*
 * atomic and gapped: argv = CMD DEV SEED COUNT SECTOR, COUNT a multiple of unit from min to max
 * (bad_count: the usage message for a bad one). Returns 0, or 2 after printing the usage.
 */
static int parse_one_shot(int argc, char **argv, const char *bad_count, uint64_t unit,
			  uint64_t min, uint64_t max, uint64_t *seed, uint64_t *count,
			  uint64_t *offset)
{
	uint64_t sector;

	if (argc != 5)
		return usage("%s takes DEV SEED COUNT SECTOR, COUNT as below", argv[0]);
	if (parse_u64(argv[2], 1, 0, UINT64_MAX, seed))
		return usage("bad SEED '%s': want a decimal or 0x-hex 64-bit number", argv[2]);
	if (parse_u64(argv[3], 0, min, max, count) || *count % unit)
		return usage(bad_count, argv[3]);
	if (parse_u64(argv[4], 0, 0, MAX_MIB * (MIB / SECTOR), &sector))
		return usage("bad SECTOR '%s': want a decimal sector number", argv[4]);
	*offset = sector * SECTOR;
	return 0;
}

/* argv = atomic DEV SEED BYTES SECTOR */
static int cmd_atomic(int argc, char **argv)
{
	uint64_t seed, bytes, offset, mismatches = 0;
	struct iovec iov;
	ssize_t n;
	char *buf;
	int fd, err;

	if (parse_one_shot(argc, argv, "bad BYTES '%s': want a multiple of 512, at most 8 MiB",
			   SECTOR, SECTOR, MAX_BS, &seed, &bytes, &offset))
		return 2;
	fd = open_device("atomic", argv[1], O_RDWR);
	if (fd < 0)
		return 2;
	buf = aligned_buffer(bytes);
	if (!buf) {
		fprintf(stderr, "blkio: atomic: out of memory\n");
		return 2;
	}
	fill_pattern(buf, seed, offset, bytes);
	iov.iov_base = buf;
	iov.iov_len = bytes;
	n = pwritev2(fd, &iov, 1, (off_t)offset, RWF_ATOMIC);
	err = n < 0 ? errno : 0;
	if (n >= 0 && (uint64_t)n != bytes) {
		printf("atomic bytes=%zd errno=short mismatches=0\n", n);
		return 1;
	}
	if (!err) {
		memset(buf, 0, bytes);
		size_t done = transfer(fd, 0, buf, bytes, offset);

		if (done != bytes) {
			char why[96];

			describe(why, sizeof(why), "read", done, bytes);
			fprintf(stderr, "blkio: atomic: reading back: %s\n", why);
			return 1;
		}
		for (uint64_t i = 0; i < bytes; i += SECTOR)
			mismatches += !sector_holds(buf + i, 0, seed, offset + i);
	}
	printf("atomic bytes=%" PRIu64 " errno=%s mismatches=%" PRIu64 "\n", bytes,
	       errno_text(err), mismatches);
	return err || mismatches ? 1 : 0;
}

#define GAPPED_MAX_PIECES 64

/* argv = gapped DEV SEED PIECES SECTOR */
static int cmd_gapped(int argc, char **argv)
{
	uint64_t seed, pieces, offset, mismatches = 0;
	struct iovec iov[GAPPED_MAX_PIECES];
	char *pages;
	ssize_t n;
	int fd;

	if (parse_one_shot(argc, argv, "bad PIECES '%s': want 1 to 64", 1, 1, GAPPED_MAX_PIECES,
			   &seed, &pieces, &offset))
		return 2;
	fd = open_device("gapped", argv[1], O_RDWR);
	if (fd < 0)
		return 2;
	pages = aligned_buffer(pieces * 4096);
	if (!pages) {
		fprintf(stderr, "blkio: gapped: out of memory\n");
		return 2;
	}
	/* Piece i: bytes 512..1023 of page i, holding the pattern of the device's bytes it covers. */
	for (uint64_t i = 0; i < pieces; i++) {
		iov[i].iov_base = pages + i * 4096 + SECTOR;
		iov[i].iov_len = SECTOR;
		fill_pattern(iov[i].iov_base, seed, offset + i * SECTOR, SECTOR);
	}
	n = pwritev(fd, iov, (int)pieces, (off_t)offset);
	if (n < 0 || (uint64_t)n != pieces * SECTOR) {
		fprintf(stderr, "blkio: gapped: pwritev: %s\n", n < 0 ? strerror(errno) : "short");
		return 1;
	}
	memset(pages, 0, pieces * 4096);
	n = preadv(fd, iov, (int)pieces, (off_t)offset);
	if (n < 0 || (uint64_t)n != pieces * SECTOR) {
		fprintf(stderr, "blkio: gapped: preadv: %s\n", n < 0 ? strerror(errno) : "short");
		return 1;
	}
	for (uint64_t i = 0; i < pieces; i++)
		mismatches += !sector_holds(iov[i].iov_base, 0, seed, offset + i * SECTOR);
	printf("gapped bytes=%" PRIu64 " mismatches=%" PRIu64 "\n", pieces * SECTOR, mismatches);
	return mismatches ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return usage(NULL, NULL);
	if (!strcmp(argv[1], "fill"))
		return cmd_pattern(argc - 1, argv + 1, FILL);
	if (!strcmp(argv[1], "fill-dsync"))
		return cmd_pattern(argc - 1, argv + 1, FILL_DSYNC);
	if (!strcmp(argv[1], "verify"))
		return cmd_pattern(argc - 1, argv + 1, VERIFY);
	if (!strcmp(argv[1], "zero"))
		return cmd_pattern(argc - 1, argv + 1, ZERO);
	if (!strcmp(argv[1], "bench"))
		return cmd_bench(argc - 1, argv + 1);
	if (!strcmp(argv[1], "hammer"))
		return cmd_hammer(argc - 1, argv + 1);
	if (!strcmp(argv[1], "atomic"))
		return cmd_atomic(argc - 1, argv + 1);
	if (!strcmp(argv[1], "gapped"))
		return cmd_gapped(argc - 1, argv + 1);
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		fputs(usage_text, stdout);
		return 0;
	}
	return usage("unknown command '%s'", argv[1]);
}
