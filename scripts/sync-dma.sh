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
# The manifest keeps one C API fingerprint per supported kernel series: the one the project builds
# and Debian's (kernel/sources.conf, kernel/debian-kernels.conf), each taken from its cached
# linux-source tree. Without KDIR, --check compares every one of them, and update and init record
# them all. KDIR (a kernel source tree, a build directory, or installed headers such as
# /lib/modules/$(uname -r)/build) is compared with the record of its own series instead, and update
# refreshes that record alone. Installed headers lack the kernel crate's Rust sources: KSRC names
# the unpacked source tree of the same kernel, for the Rust layouts; without it they are reported
# unchecked.
#
# Exit codes: 0 clean, 2 bad input, 3 merge conflict; drift bits 4 local edit, 8 template ahead,
# 16 breaking C API change, 32 additive C API change, 64 unchecked (Rust layouts without KSRC, or a
# series the manifest has no record of).
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

# The supported kernel series, one a line: the built package's and those of Debian's kernels.
supported_series() {
	local name
	{
		build_package | sed 's/^linux-source-//'
		for name in $(debian_kernels); do
			debian_kernel_field "$name" release | grep -oE '^[0-9]+\.[0-9]+'
		done
	} | sort -uV
}

kernel_args=()
if [ -n "${KDIR:-}" ]; then
	kernel_args+=(--kdir "$KDIR")
	if [ -n "${KSRC:-}" ]; then
		kernel_args+=(--rust-src "$KSRC")
	fi
else
	for series in $(supported_series); do
		tree=$(source_dir "linux-source-$series") ||
			die "no linux-source-$series to fingerprint in $CACHE/src: run scripts/setup.sh, or set KDIR"
		kernel_args+=(--kdir "$tree")
	done
fi
cargo build --quiet --release --manifest-path "$ROOT/Cargo.toml" -p sync-dma
exec "$ROOT/target/release/sync-dma" --root "$ROOT" "${kernel_args[@]}" "$@"
