#!/usr/bin/env bash
# Keeps every driver's copy of dma_local in step with template/ and with the kernel's C DMA API.
#
#   scripts/sync-dma.sh --check [--json]          read-only; exit 0 when clean (CI runs this)
#   scripts/sync-dma.sh update [--force] [--message TEXT | --message-file FILE] [DIR..]
#                                                 merge the template into the copies, refresh the
#                                                 manifest, append an entry to CHANGES.md. A template
#                                                 change needs the message: its first line heads the
#                                                 entry, the rest says what changed and what a driver
#                                                 has to do (--message-file - reads stdin)
#   scripts/sync-dma.sh init [--force]            write the manifest from scratch
#   scripts/sync-dma.sh bench [N]                 time --check over N generated drivers
#
# The C API is fingerprinted from KDIR (a kernel source tree or build directory), by default the
# project's cached linux-source-7.3. Exit codes: 0 clean, 2 bad input, 3 merge conflict; drift bits
# 4 local edit, 8 template ahead, 16 breaking C API change, 32 additive C API change.
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

if [ -z "${KDIR:-}" ]; then
	KDIR=$(source_dir "$(build_package)") || die "no kernel tree to fingerprint: run scripts/setup.sh, or set KDIR"
fi
cargo build --quiet --release --manifest-path "$ROOT/Cargo.toml" -p sync-dma
exec "$ROOT/target/release/sync-dma" --root "$ROOT" --kdir "$KDIR" "$@"
