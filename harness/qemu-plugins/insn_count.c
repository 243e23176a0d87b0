// SPDX-License-Identifier: GPL-2.0
/*
 * A QEMU TCG plugin that counts the guest instructions all vCPUs execute, and appends the running
 * total to a file each time the guest executes `xchg %bx,%bx` (the guest tool `mark`). Benchmarks
 * wrap a measured run in two marks: the difference is what the run cost the guest's CPUs, an exact
 * figure where timings under emulation on a shared host move by tens of percent.
 *
 * Usage: -plugin insn_count.so,out=FILE
 *
 * The declarations below are the parts of QEMU's plugin API (qemu-plugin.h, API version 1 and
 * later) this uses, so that building needs no QEMU development package.
 */
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
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb, size_t idx);
const void *qemu_plugin_insn_data(const struct qemu_plugin_insn *insn);
size_t qemu_plugin_insn_size(const struct qemu_plugin_insn *insn);

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

#define MAX_VCPUS 64

/* One counter per vCPU, each on its own cache line: only that vCPU's thread writes it. */
static struct {
	uint64_t insns;
	char pad[56];
} counters[MAX_VCPUS];
static FILE *out;
static const unsigned char mark_insn[] = { 0x66, 0x87, 0xdb }; /* xchg %bx,%bx */

static void tb_exec(unsigned int vcpu, void *insns)
{
	counters[vcpu % MAX_VCPUS].insns += (uintptr_t)insns;
}

static void mark(unsigned int vcpu, void *unused)
{
	uint64_t total = 0;

	/* Other vCPUs may be running: their counts are read as they are at this moment. */
	for (int i = 0; i < MAX_VCPUS; i++)
		total += __atomic_load_n(&counters[i].insns, __ATOMIC_RELAXED);
	fprintf(out, "%llu\n", (unsigned long long)total);
	fflush(out);
}

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t n = qemu_plugin_tb_n_insns(tb);

	qemu_plugin_register_vcpu_tb_exec_cb(tb, tb_exec, QEMU_PLUGIN_CB_NO_REGS, (void *)(uintptr_t)n);
	for (size_t i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);

		if (qemu_plugin_insn_size(insn) == sizeof(mark_insn) &&
		    !memcmp(qemu_plugin_insn_data(insn), mark_insn, sizeof(mark_insn)))
			qemu_plugin_register_vcpu_insn_exec_cb(insn, mark, QEMU_PLUGIN_CB_NO_REGS, NULL);
	}
}

__attribute__((visibility("default"))) int qemu_plugin_install(qemu_plugin_id_t id,
							       const struct qemu_info_t *info,
							       int argc, char **argv)
{
	for (int i = 0; i < argc; i++)
		if (!strncmp(argv[i], "out=", 4))
			out = fopen(argv[i] + 4, "w");
	if (!out) {
		fprintf(stderr, "insn_count: needs out=FILE, a file it can write\n");
		return -1;
	}
	qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
	return 0;
}
