#!/usr/bin/env bash
# Benchmark: TCP throughput both ways and ping latency of e1000_rs against the C e1000, same VMs and
# boot, one NIC each, taking turns within every round. Prints the ratios.
# Usage: scripts/bench-e1000.sh [--instructions | --count KIND] [--default-only | --control] [--two-cpus] [ROUNDS]
# (--instructions: guest instructions on the DUT per MiB and per ping instead, counted by a QEMU plugin;
# --count blocks|atomics|mmio: translated blocks, atomic instructions or device accesses instead;
# --default-only: e1000_rs's default configuration only, not also its two copying ones;
# --control: the C e1000 in e1000_rs's place, to show the method's own bias;
# --two-cpus: two vCPUs per VM instead of one)
# RDD_KERNEL=debian-7.3 (or debian-7.2, kasan) runs it on that kernel instead of the lab kernel.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --quiet
exec cargo run --quiet --release -p harness --bin bench_e1000 -- "$@"
