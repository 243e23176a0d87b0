#!/usr/bin/env bash
# Every test: sets up whatever is missing, runs the static checks, then the harness's scenarios.
# Extra arguments go to `cargo test` (e.g. a test name).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
scripts/setup.sh --quiet
echo "[test] set-up checked in $((SECONDS - start)) s"
scripts/lint.sh
scripts/sync-dma.sh --check
cargo test --release --workspace -- "$@"
echo "[test] all done in $((SECONDS - start)) s"
