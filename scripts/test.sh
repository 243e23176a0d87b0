#!/usr/bin/env bash
# Every test: sets up whatever is missing, runs the static checks, then the harness's scenarios.
# Extra arguments go to `cargo test` (e.g. a test name).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
# What every test needs: the toolchain, QEMU, the lab kernel.
scripts/setup.sh --quiet --demo
echo "[test] set-up checked in $((SECONDS - start)) s"

# What only some tests need is made in the background, on the cores the scenarios leave idle
# (SCHED_IDLE): the KASAN kernel, and Debian's kernels with their chroots. A scenario that needs
# one asks scripts/setup.sh for it first, which waits for the background set-up to finish it.
mkdir -p runs
background=()
stop_background() {
	local pid
	for pid in "${background[@]}"; do
		kill -- "-$pid" 2>/dev/null || true
	done
}
trap stop_background EXIT
# in_background NAME ARGS...: scripts/setup.sh ARGS, in a session of its own so that all of it
# stops with the tests.
in_background() {
	local log=runs/setup-$1.log
	shift
	setsid chrt --idle 0 scripts/setup.sh --quiet "$@" >"$log" 2>&1 &
	background+=($!)
	echo "[test] scripts/setup.sh $* in the background; its log: $log"
}
# RDD_KERNEL names the one lab kernel every scenario boots (README, "The test harness").
case ${RDD_KERNEL:-kasan} in kasan) in_background kasan --kernel kasan ;; esac
in_background debian --debian

scripts/lint.sh
scripts/sync-dma.sh --check
# Every test may start at once: a scenario waits for what it needs (a background part, then its
# cores: harness/src/cores.rs), so one waiting for the KASAN kernel holds no scenario back.
RUST_TEST_THREADS=${RUST_TEST_THREADS:-32} cargo test --release --workspace -- "$@"
echo "[test] all done in $((SECONDS - start)) s"
