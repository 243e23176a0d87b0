// SPDX-License-Identifier: GPL-2.0
/*
 * mark: executes `xchg %bx,%bx`, a no-op that the harness's QEMU plugin insn_count
 * (harness/qemu-plugins/insn_count.c) watches for: each mark records the guest instructions
 * executed so far.
 */
int main(void)
{
	__asm__ volatile("xchg %bx, %bx");
	return 0;
}
