#!/usr/bin/env bash
# The main job: sets up what the demo needs (the lab kernel; the tests' KASAN kernel and Debian's
# kernels come with scripts/test.sh), boots QEMU with the project's drivers working beside the C
# drivers, and ends with the DMA wrapper copies' check.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --quiet --demo
cargo run --quiet --release -p harness --bin demo
echo
echo "The drivers' copies of dma_local, against the template and the kernel's C DMA API:"
scripts/sync-dma.sh --check
