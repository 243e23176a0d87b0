#!/usr/bin/env bash
# The main job: sets up whatever is missing, then boots QEMU with the project's drivers working.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --quiet
exec cargo run --quiet --release -p harness --bin demo
