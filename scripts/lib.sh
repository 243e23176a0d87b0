# shellcheck shell=bash
# shellcheck disable=SC2034  # the variables are for the scripts that source this file
# Shared paths and helpers for the project's scripts. Sourced, never run.
#
# Everything built or downloaded lives in a cache outside the repository, so that clones share it:
#   $CACHE/tools     bindgen, libclang, cargo-generate
#   $CACHE/debs      downloaded linux-source-*.deb
#   $CACHE/src       unpacked kernel trees, one per package version
#   $CACHE/build     kernel builds, one directory per key (source version, config fragments, toolchain)
#   $CACHE/chroot    Debian chroots with the toolchain of each of Debian's Rust kernels, one per key
#   $CACHE/debian    Debian's kernel images and the modules the tests load, one directory per release
#   $CACHE/kbuild    Debian's headers completed for Rust by template/scripts/prepare-headers.sh
#   $CACHE/locks     one lock per part of the set-up (scripts/setup.sh's locked)

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${RDD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rust-dma-drivers}
TOOLS=$CACHE/tools

# The kernel's Rust toolchain: Debian's rustc-web with its library source. rustup's rustc comes
# first in PATH and has no rust-src, so the kernel is always told which one to use.
KRUSTC=/usr/bin/rustc
KRUSTDOC=/usr/bin/rustdoc
KCLIPPY=/usr/bin/clippy-driver
BINDGEN=$TOOLS/bin/bindgen
LIBCLANG_DIR=$TOOLS/libclang
CARGO_GENERATE=$TOOLS/bin/cargo-generate

BINDGEN_VERSION=0.73.2
LIBCLANG_WHEEL_VERSION=18.1.1
CARGO_GENERATE_VERSION=0.26.0

# Bump when the way the kernel is built changes in a way the inputs below do not show.
BUILD_RECIPE=1

log() { printf '\033[1m[setup]\033[0m %s\n' "$*" >&2; }
warn() { printf '\033[1;33m[setup] warning:\033[0m %s\n' "$*" >&2; }
die() {
	printf '\033[1;31m[setup] error:\033[0m %s\n' "$*" >&2
	exit 1
}

# Lines of kernel/sources.conf as "package version role", comments stripped.
source_pins() {
	sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$ROOT/kernel/sources.conf"
}

# The version of PACKAGE actually in the cache (the pin, or the fallback chosen when the pin was
# gone).
source_version() {
	local pkg=$1
	[ -f "$CACHE/src/$pkg.version" ] || return 1
	cat "$CACHE/src/$pkg.version"
}

# Directory of the unpacked tree of PACKAGE.
source_dir() {
	local pkg=$1 ver
	ver=$(source_version "$pkg") || return 1
	printf '%s/src/%s_%s\n' "$CACHE" "$pkg" "$ver"
}

# The package that is built (role "build").
build_package() {
	source_pins | awk '$3 == "build" { print $1; exit }'
}

# The lab kernels, both built from the same source by scripts/setup.sh:
#   lab    GCC; DMA-API debugging, kmemleak, fault injection (kernel/rust.config). The benchmarks
#          and most tests run on it.
#   kasan  the same with KASAN, lockdep and list/object debugging on top (kernel/kasan.config). The
#          kernel lets Rust and KASAN meet only in a Clang build, hence LLVM. The fault, timeout and
#          race scenarios and the wrapper's self-tests run on it (Scenario::on_kasan_kernel).
LAB_KERNELS=(lab kasan)
KASAN_LLVM_VERSION=19

# The kernel the scripts and the harness work with: RDD_KERNEL (a lab kernel or one of Debian's),
# or lab.
selected_kernel() {
	local name=${RDD_KERNEL:-lab} known
	for known in "${LAB_KERNELS[@]}" $(debian_kernels); do
		[ "$name" = "$known" ] && echo "$name" && return 0
	done
	die "RDD_KERNEL=$name: the kernels are ${LAB_KERNELS[*]} $(debian_kernels | tr '\n' ' ')"
}

# Lines of kernel/debian-kernels.conf as "name release suite apt-suites", comments stripped.
debian_kernel_lines() {
	sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$ROOT/kernel/debian-kernels.conf"
}

debian_kernels() {
	debian_kernel_lines | awk '{ print $1 }'
}

# Field FIELD (release, suite or apt-suites) of Debian kernel NAME.
debian_kernel_field() {
	local name=$1 field=$2 column
	case $field in
	release) column=2 ;;
	suite) column=3 ;;
	apt-suites) column=4 ;;
	esac
	debian_kernel_lines | awk -v n="$name" -v c="$column" '$1 == n { print $c }'
}

is_debian_kernel() {
	debian_kernels | grep -qx "$1"
}

# What the chroot of Debian kernel NAME holds: what a user of that release installs to build the
# drivers (scripts/prepare-headers.sh names them), plus dkms and the kernel's headers and source.
debian_chroot_packages() {
	local release series
	release=$(debian_kernel_field "$1" release)
	series=$(echo "$release" | grep -oE '^[0-9]+\.[0-9]+')
	printf '%s\n' rustc rust-src bindgen dwarves make bc flex bison libelf-dev libssl-dev openssl \
		python3 kmod cpio xz-utils dkms "linux-headers-$release" "linux-source-$series"
}

# Bump when the way the chroots are made changes in a way the package list does not show.
CHROOT_RECIPE=1

# The chroot of Debian kernel NAME, keyed by the suites and packages it was made from.
debian_chroot_dir() {
	local name=$1 key
	key=$({
		echo "recipe $CHROOT_RECIPE"
		debian_kernel_lines | awk -v n="$name" '$1 == n'
		debian_chroot_packages "$name"
	} | sha256sum | cut -c1-16)
	printf '%s/chroot/%s-%s\n' "$CACHE" "$name" "$key"
}

# Debian's kernel image and the C modules the tests load, for Debian kernel NAME.
debian_kernel_dir() {
	printf '%s/debian/%s\n' "$CACHE" "$(debian_kernel_field "$1" release)"
}

# The C modules of Debian's kernels the tests load, in load order (Debian builds them as modules).
DEBIAN_C_MODULES=(
	drivers/net/ethernet/intel/e1000/e1000
	drivers/nvme/common/nvme-keyring
	drivers/nvme/common/nvme-auth
	drivers/nvme/host/nvme-core
	drivers/nvme/host/nvme
)

# The config fragments of lab kernel NAME, merged in this order onto tinyconfig.
kernel_fragments() {
	echo "$ROOT/kernel/rust.config"
	[ "$1" = kasan ] && echo "$ROOT/kernel/kasan.config"
	return 0
}

# Where bindgen finds libclang for lab kernel NAME: the wheel's for the GCC build, the one that
# matches the compiler for the LLVM build (the kernel warns about any other).
kernel_libclang_dir() {
	case $1 in
	kasan) echo "/usr/lib/llvm-$KASAN_LLVM_VERSION/lib" ;;
	*) echo "$LIBCLANG_DIR" ;;
	esac
}

# Key of the build of lab kernel NAME: everything that determines its output.
kernel_build_key() {
	local name=$1 pkg fragments
	pkg=$(build_package)
	mapfile -t fragments < <(kernel_fragments "$name")
	{
		echo "recipe $BUILD_RECIPE"
		echo "source $pkg $(source_version "$pkg")"
		# What the fragments set, not how they explain it
		grep -hE '^(CONFIG_|# CONFIG_[A-Za-z0-9_]+ is not set)' "${fragments[@]}"
		"$KRUSTC" -vV
		"$BINDGEN" --version
		if [ "$name" = kasan ]; then
			"clang-$KASAN_LLVM_VERSION" --version | head -n 1
		else
			sha256sum <"$LIBCLANG_DIR/libclang.so"
			gcc --version | head -n 1
		fi
	} | sha256sum | cut -c1-16
}

kernel_build_dir() {
	printf '%s/build/%s\n' "$CACHE" "$(kernel_build_key "$1")"
}

# make variables that select the toolchain of lab kernel NAME, for the kernel and its modules alike.
kernel_make_vars() {
	printf '%s\n' "RUSTC=$KRUSTC" "HOSTRUSTC=$KRUSTC" "RUSTDOC=$KRUSTDOC" "CLIPPY_DRIVER=$KCLIPPY" "BINDGEN=$BINDGEN"
	[ "$1" = kasan ] && echo "LLVM=-$KASAN_LLVM_VERSION"
	return 0
}
