// SPDX-License-Identifier: GPL-2.0
/*
 * A QEMU TCG plugin that counts what all vCPUs execute, and appends the running total to a file
 * each time the guest executes `xchg %bx,%bx` (the guest tool `mark`). Benchmarks wrap a measured
 * run in two marks: the difference is what the run cost the guest's CPUs, an exact figure where
 * timings under emulation on a shared host move by tens of percent.
 *
 * What it counts (count=, the harness's `Counted`): insns, guest instructions (the default);
 * blocks, translated blocks executed (about one per branch, taken or not; an indirect one costs a
 * lookup); atomics, atomic read-modify-write instructions (lock prefix, xchg with memory); mmio,
 * memory-mapped accesses that reach an emulated device (port I/O is not counted).
 *
 * Usage: -plugin counter.so,out=FILE[,count=insns|blocks|atomics|mmio]
 *
 * The declarations below are the parts of QEMU's plugin API (qemu-plugin.h, API version 2, QEMU
 * 9.0 and later, as bookworm-backports' QEMU 10 has it) this uses, so that building needs no QEMU
 * development package.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef uint64_t qemu_plugin_id_t;
struct qemu_info_t;
struct qemu_plugin_tb;
struct qemu_plugin_insn;
enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS };

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id,
					   void (*cb)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb));
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *tb,
					  void (*cb)(unsigned int vcpu, void *data),
					  enum qemu_plugin_cb_flags flags, void *data);
void qemu_plugin_register_vcpu_insn_exec_cb(struct qemu_plugin_insn *insn,
					    void (*cb)(unsigned int vcpu, void *data),
					    enum qemu_plugin_cb_flags flags, void *data);
typedef uint32_t qemu_plugin_meminfo_t;
enum qemu_plugin_mem_rw { QEMU_PLUGIN_MEM_R = 1, QEMU_PLUGIN_MEM_W, QEMU_PLUGIN_MEM_RW };
struct qemu_plugin_hwaddr;
void qemu_plugin_register_vcpu_mem_cb(struct qemu_plugin_insn *insn,
				      void (*cb)(unsigned int vcpu, qemu_plugin_meminfo_t info,
						 uint64_t vaddr, void *data),
				      enum qemu_plugin_cb_flags flags, enum qemu_plugin_mem_rw rw,
				      void *data);
struct qemu_plugin_hwaddr *qemu_plugin_get_hwaddr(qemu_plugin_meminfo_t info, uint64_t vaddr);
bool qemu_plugin_hwaddr_is_io(const struct qemu_plugin_hwaddr *haddr);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb, size_t idx);
size_t qemu_plugin_insn_data(const struct qemu_plugin_insn *insn, void *dest, size_t len);
size_t qemu_plugin_insn_size(const struct qemu_plugin_insn *insn);

__attribute__((visibility("default"))) int qemu_plugin_version = 2;

#define MAX_VCPUS 64

/* One counter per vCPU, each on its own cache line: only that vCPU's thread writes it. */
static struct {
	uint64_t count;
	char pad[56];
} counters[MAX_VCPUS];
static FILE *out;
static enum { INSNS, BLOCKS, ATOMICS, MMIO } counted = INSNS;
static const unsigned char mark_insn[] = { 0x66, 0x87, 0xdb }; /* xchg %bx,%bx */

/* Adds data, a number, to the vCPU's counter: a block's instructions, or 1. */
static void add(unsigned int vcpu, void *data)
{
	counters[vcpu % MAX_VCPUS].count += (uintptr_t)data;
}

static void memory_access(unsigned int vcpu, qemu_plugin_meminfo_t info, uint64_t vaddr,
			  void *unused)
{
	struct qemu_plugin_hwaddr *hwaddr = qemu_plugin_get_hwaddr(info, vaddr);

	if (hwaddr && qemu_plugin_hwaddr_is_io(hwaddr))
		counters[vcpu % MAX_VCPUS].count++;
}

/* Whether the x86 instruction at p (n bytes) is an atomic read-modify-write. */
static bool is_atomic(const unsigned char *p, size_t n)
{
	/* The other legacy prefixes; they and REX (0x40-0x4f) may come before the opcode too. */
	static const unsigned char prefixes[] = { 0x66, 0x67, 0xf2, 0xf3, 0x2e,
						  0x3e, 0x26, 0x64, 0x65, 0x36 };
	size_t i;

	for (i = 0; i < n; i++) {
		if (p[i] == 0xf0) /* lock */
			return true;
		if (!memchr(prefixes, p[i], sizeof(prefixes)) && (p[i] < 0x40 || p[i] > 0x4f))
			break;
	}
	/* xchg with a memory operand locks without the prefix (ModRM mod != 3). */
	return i + 1 < n && (p[i] == 0x86 || p[i] == 0x87) && (p[i + 1] >> 6) != 3;
}

static void mark(unsigned int vcpu, void *unused)
{
	uint64_t total = 0;

	/* Other vCPUs may be running: their counts are read as they are at this moment. */
	for (int i = 0; i < MAX_VCPUS; i++)
		total += __atomic_load_n(&counters[i].count, __ATOMIC_RELAXED);
	fprintf(out, "%llu\n", (unsigned long long)total);
	fflush(out);
}

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t n = qemu_plugin_tb_n_insns(tb);

	if (counted == INSNS || counted == BLOCKS) {
		uintptr_t per_block = counted == INSNS ? n : 1;

		qemu_plugin_register_vcpu_tb_exec_cb(tb, add, QEMU_PLUGIN_CB_NO_REGS,
						     (void *)per_block);
	}
	for (size_t i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
		unsigned char data[16]; /* an x86 instruction is at most 15 bytes */
		size_t size = qemu_plugin_insn_data(insn, data, sizeof(data));

		if (counted == ATOMICS && is_atomic(data, size))
			qemu_plugin_register_vcpu_insn_exec_cb(insn, add, QEMU_PLUGIN_CB_NO_REGS,
							       (void *)1);
		if (counted == MMIO)
			qemu_plugin_register_vcpu_mem_cb(insn, memory_access,
							 QEMU_PLUGIN_CB_NO_REGS,
							 QEMU_PLUGIN_MEM_RW, NULL);
		if (size == sizeof(mark_insn) && !memcmp(data, mark_insn, sizeof(mark_insn)))
			qemu_plugin_register_vcpu_insn_exec_cb(insn, mark, QEMU_PLUGIN_CB_NO_REGS,
							       NULL);
	}
}

__attribute__((visibility("default"))) int qemu_plugin_install(qemu_plugin_id_t id,
							       const struct qemu_info_t *info,
							       int argc, char **argv)
{
	static const char *const names[] = { [INSNS] = "insns", [BLOCKS] = "blocks",
					     [ATOMICS] = "atomics", [MMIO] = "mmio" };
	const size_t kinds = sizeof(names) / sizeof(names[0]);
	const char *path = NULL;

	for (int i = 0; i < argc; i++) {
		if (!strncmp(argv[i], "out=", 4)) {
			path = argv[i] + 4;
		} else if (!strncmp(argv[i], "count=", 6)) {
			size_t k = 0;

			while (k < kinds && strcmp(argv[i] + 6, names[k]))
				k++;
			if (k == kinds) {
				fprintf(stderr,
					"counter plugin: count= is insns, blocks, atomics or mmio\n");
				return -1;
			}
			counted = k;
		}
	}
	if (path)
		out = fopen(path, "w");
	if (!out) {
		fprintf(stderr, "counter plugin: needs out=FILE, a file it can write\n");
		return -1;
	}
	qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
	return 0;
}
