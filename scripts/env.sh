#!/usr/bin/env bash
# Prints, as KEY=VALUE lines, where the set-up put the kernel and its toolchain, for the harness and
# for shells (`eval "$(scripts/env.sh --export)"`). Fails with a clear message when the kernel is
# not built. The kernel is the one RDD_KERNEL names: a lab kernel (lab, the default, or kasan) or
# one of Debian's (kernel/debian-kernels.conf).
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

prefix=
case ${1:-} in
--export) prefix='export ' ;;
--toolchain)
	# Only what selects the kernel's Rust toolchain, for building against a kernel of the user's own.
	kernel=$(selected_kernel)
	# Debian's kernels are built for with the toolchain of their chroot, which needs no variables.
	is_debian_kernel "$kernel" && exit 0
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
if is_debian_kernel "$kernel"; then
	release=$(debian_kernel_field "$kernel" release)
	chroot_dir=$(debian_chroot_dir "$kernel")
	image_dir=$(debian_kernel_dir "$kernel")
	[ -f "$chroot_dir/.complete" ] && [ -f "$image_dir/.complete" ] ||
		die "Debian's $release kernel or its chroot is not set up: run scripts/setup.sh"
	printf '%s%s\n' \
		"$prefix" "KERNEL=$kernel" \
		"$prefix" "KRELEASE=$release" \
		"$prefix" "KDIR=$chroot_dir/usr/src/linux-headers-$release" \
		"$prefix" "CHROOT=$chroot_dir" \
		"$prefix" "BZIMAGE=$image_dir/vmlinuz" \
		"$prefix" "KMODULES=$image_dir" \
		"$prefix" "RDD_CACHE=$CACHE" \
		"$prefix" "CARGO_GENERATE=$CARGO_GENERATE"
	exit 0
fi
pkg=$(build_package)
src=$(source_dir "$pkg") || die "no $pkg in $CACHE/src: run scripts/setup.sh"
[ -x "$BINDGEN" ] && [ -f "$LIBCLANG_DIR/libclang.so" ] || die "the kernel's Rust toolchain is not installed: run scripts/setup.sh"
build=$(kernel_build_dir "$kernel")
[ -f "$build/.complete" ] || die "the $kernel kernel for this configuration is not built ($build): run scripts/setup.sh"

printf '%s%s\n' \
	"$prefix" "KERNEL=$kernel" \
	"$prefix" "KDIR=$build" \
	"$prefix" "BZIMAGE=$build/arch/x86/boot/bzImage" \
	"$prefix" "KMODULES=$build" \
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
