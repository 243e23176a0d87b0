#!/usr/bin/env bash
# Benchmark: 4k random read IOPS (QD1, QD32) and 128k sequential read/write MB/s of nvme_rs against
# the C nvme driver, in one boot, on identical controllers with a null-co and a file backend.
# Prints the ratios.
# Usage: scripts/bench-nvme.sh [--instructions | --count KIND] [--control] [ROUNDS] [SECONDS_PER_FIGURE]
# (--instructions: guest instructions per I/O instead of throughput, counted by a QEMU plugin;
# --count blocks|atomics|mmio: translated blocks, atomic instructions or device accesses instead;
# --control: the C nvme on nvme_rs's controllers too, to show the method's own bias)
# RDD_KERNEL=debian-7.3 (or debian-7.2, kasan) runs it on that kernel instead of the lab kernel.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --quiet
exec cargo run --quiet --release -p harness --bin bench_nvme -- "$@"
