#!/usr/bin/env bash
# Every test: sets up whatever is missing, runs the static checks, then the harness's scenarios.
# Extra arguments go to `cargo test` (e.g. a test name).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
# What every test needs: the toolchain, QEMU, the lab kernel.
scripts/setup.sh --quiet --demo
echo "[test] set-up checked in $((SECONDS - start)) s"

# What only some tests need is made in the background: the KASAN kernel, and Debian's kernels
# with their chroots. A scenario that needs one asks scripts/setup.sh for it first, which waits for
# the background set-up to finish it. The KASAN kernel is on the way to the longest scenarios: the
# harness leaves it a core (RDD_BACKGROUND_BUILD) until it is there, and at nice 10 it takes what
# the scenario on the other core leaves idle; Debian's set-up, mostly downloading, goes at nice 15.
# A run of some tests only (arguments given) makes only what they ask for.
mkdir -p runs
background=()
parts=()
stop_background() {
	local pid
	for pid in "${background[@]}"; do
		kill -- "-$pid" 2>/dev/null || true
	done
}
trap stop_background EXIT
# in_background NAME NICENESS ARGS...: scripts/setup.sh ARGS, in a session of its own so that
# all of it stops with the tests.
in_background() {
	local log=runs/setup-$1.log niceness=$2
	parts+=("$1")
	shift 2
	setsid nice -n "$niceness" scripts/setup.sh --quiet "$@" </dev/null >"$log" 2>&1 &
	background+=($!)
	echo "[test] scripts/setup.sh $* in the background; its log: $log"
}
if [ $# -eq 0 ]; then
	# RDD_KERNEL names the one lab kernel every scenario boots (README, "The test harness").
	case ${RDD_KERNEL:-kasan} in
	kasan)
		in_background kasan 10 --kernel kasan
		export RDD_BACKGROUND_BUILD=1
		;;
	esac
	in_background debian 15 --debian
fi

# The static checks are of the lab kernel's build, whichever kernel the scenarios boot.
RDD_KERNEL=lab scripts/lint.sh
RDD_KERNEL=lab scripts/sync-dma.sh --check
# Every test may start at once: a scenario waits for what it needs (a background part, then its
# cores: harness/src/cores.rs), so one waiting for the KASAN kernel holds no other back. Builds
# outside scenarios take a core too.
status=0
RUST_TEST_THREADS=${RUST_TEST_THREADS:-32} cargo test --release --workspace -- "$@" || status=$?
for i in "${!background[@]}"; do
	if ! kill -0 "${background[$i]}" 2>/dev/null && ! wait "${background[$i]}"; then
		echo "[test] the background set-up of ${parts[$i]} failed: runs/setup-${parts[$i]}.log"
	fi
done
echo "[test] all done in $((SECONDS - start)) s"
exit "$status"
