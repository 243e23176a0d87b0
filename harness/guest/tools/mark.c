// SPDX-License-Identifier: GPL-2.0
/*
 * mark: executes `xchg %bx,%bx`, a no-op that the harness's counting QEMU plugin
 * (harness/qemu-plugins/counter.c) watches for: each mark records what it has counted so far
 * (instructions, blocks, atomics or device accesses).
 */
int main(void)
{
	__asm__ volatile("xchg %bx, %bx");
	return 0;
}
