#!/usr/bin/env bash
# Prints, as KEY=VALUE lines, where the set-up put the kernel and its toolchain, for the harness and
# for shells (`eval "$(scripts/env.sh --export)"`). Fails with a clear message when the kernel is
# not built. The kernel is the lab kernel RDD_KERNEL names (lab, the default, or kasan).
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

prefix=
case ${1:-} in
--export) prefix='export ' ;;
--toolchain)
	# Only what selects the kernel's Rust toolchain, for building against a kernel of the user's own.
	kernel=$(selected_kernel)
	kernel_make_vars "$kernel"
	echo "LIBCLANG_PATH=$(kernel_libclang_dir "$kernel")"
	exit 0
	;;
--get)
	# One value: scripts/env.sh --get KDIR
	"$0" | sed -n "s/^${2:?--get needs a name}=//p"
	exit 0
	;;
esac

kernel=$(selected_kernel)
pkg=$(build_package)
src=$(source_dir "$pkg") || die "no $pkg in $CACHE/src: run scripts/setup.sh"
[ -x "$BINDGEN" ] && [ -f "$LIBCLANG_DIR/libclang.so" ] || die "the kernel's Rust toolchain is not installed: run scripts/setup.sh"
build=$(kernel_build_dir "$kernel")
[ -f "$build/.complete" ] || die "the $kernel kernel for this configuration is not built ($build): run scripts/setup.sh"

printf '%s%s\n' \
	"$prefix" "KERNEL=$kernel" \
	"$prefix" "KDIR=$build" \
	"$prefix" "KSRC=$src" \
	"$prefix" "KVERSION=$(source_version "$pkg")" \
	"$prefix" "RDD_CACHE=$CACHE" \
	"$prefix" "LIBCLANG_PATH=$(kernel_libclang_dir "$kernel")" \
	"$prefix" "CARGO_GENERATE=$CARGO_GENERATE"
while IFS= read -r var; do
	printf '%s%s\n' "$prefix" "$var"
done < <(kernel_make_vars "$kernel")
for p in $(source_pins | awk '$3 != "build" { print $1 }'); do
	dir=$(source_dir "$p") || continue
	name=$(echo "$p" | tr 'a-z.-' 'A-Z__')
	printf '%s%s\n' "$prefix" "${name}_DIR=$dir"
done
