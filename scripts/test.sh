#!/usr/bin/env bash
# Every test: sets up whatever is missing, runs the static checks, then the harness's scenarios.
# Extra arguments go to `cargo test` (e.g. a test name).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
# What every test needs: the toolchain, QEMU, the lab kernel.
scripts/setup.sh --quiet --demo
echo "[test] set-up checked in $((SECONDS - start)) s"

# Debian's kernels and their chroots, mostly downloading, are made in the background while the
# KASAN kernel builds and the first scenarios run; a Debian scenario asks scripts/setup.sh for
# them first, which waits for the background set-up to finish. The KASAN kernel is built first, on
# every core: it is on the way to the longest scenarios, and the scenarios leave too little idle
# to build it beside them (measured: 1,392 s at SCHED_IDLE, 1,567 s with a core of its own, 580 s
# alone). A run of some tests only (arguments given) makes only what they ask for, when they ask.
mkdir -p runs
background=()
stop_background() {
	local pid
	for pid in "${background[@]}"; do
		kill -- "-$pid" 2>/dev/null || true
	done
}
trap stop_background EXIT
if [ $# -eq 0 ]; then
	# A session of its own, so that all of it stops with the tests.
	setsid scripts/setup.sh --quiet --debian </dev/null >runs/setup-debian.log 2>&1 &
	background+=($!)
	echo "[test] scripts/setup.sh --debian in the background; its log: runs/setup-debian.log"
	# RDD_KERNEL names the one lab kernel every scenario boots (README, "The test harness").
	case ${RDD_KERNEL:-kasan} in kasan) scripts/setup.sh --quiet --kernel kasan ;; esac
	echo "[test] KASAN kernel checked in $((SECONDS - start)) s"
fi

# The static checks are of the lab kernel's build, whichever kernel the scenarios boot.
RDD_KERNEL=lab scripts/lint.sh
RDD_KERNEL=lab scripts/sync-dma.sh --check
# Every test may start at once: a scenario waits for what it needs (its kernel, then its cores:
# harness/src/cores.rs), so one waiting for Debian's kernels holds no other back. Builds outside
# scenarios take a core too.
status=0
RUST_TEST_THREADS=${RUST_TEST_THREADS:-32} cargo test --release --workspace -- "$@" || status=$?
for pid in "${background[@]}"; do
	if ! kill -0 "$pid" 2>/dev/null && ! wait "$pid"; then
		echo "[test] the background set-up of Debian's kernels failed: runs/setup-debian.log"
	fi
done
echo "[test] all done in $((SECONDS - start)) s"
exit "$status"
