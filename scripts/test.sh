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
# KASAN kernel builds, on every core: it is on the way to the longest scenarios, and the scenarios
# leave too little idle to build it beside them (measured: 1,392 s at SCHED_IDLE, 1,567 s with a
# core of its own, 580 s alone). The tests start once both are there. A run of some tests only
# (arguments given) makes only what they ask for, when they ask (harness/src/env.rs).
mkdir -p runs
debian=
stop_background() {
	[ -z "$debian" ] || kill -- "-$debian" 2>/dev/null || true
}
trap stop_background EXIT
if [ $# -eq 0 ]; then
	# A session of its own, so that all of it stops with the tests.
	setsid scripts/setup.sh --quiet --debian </dev/null >runs/setup-debian.log 2>&1 &
	debian=$!
	echo "[test] scripts/setup.sh --debian in the background; its log: runs/setup-debian.log"
	# RDD_KERNEL names the one lab kernel every scenario boots (README, "The test harness").
	case ${RDD_KERNEL:-kasan} in kasan) scripts/setup.sh --quiet --kernel kasan ;; esac
	if ! wait "$debian"; then
		tail -n 20 runs/setup-debian.log >&2
		echo "[test] setting up Debian's kernels failed: runs/setup-debian.log" >&2
		exit 1
	fi
	debian=
	echo "[test] set-up done in $((SECONDS - start)) s"
fi

# The static checks are of the lab kernel's build, whichever kernel the scenarios boot.
RDD_KERNEL=lab scripts/lint.sh
RDD_KERNEL=lab scripts/sync-dma.sh --check
# Builds outside scenarios take a core, as scenarios do (harness/src/cores.rs).
cargo test --release --workspace -- "$@"
echo "[test] all done in $((SECONDS - start)) s"
