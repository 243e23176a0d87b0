#!/usr/bin/env bash
# Completes a distribution kernel's headers into a build directory that can build Rust modules, and
# prints that directory.
#
#   scripts/prepare-headers.sh [HEADERS]     HEADERS: /lib/modules/$(uname -r)/build by default
#
# Debian's linux-headers packages carry the kernel's .config and Module.symvers but none of the Rust
# build products (rust/*.rmeta, libmacros.so, scripts/target.json). This script rebuilds exactly
# those, once per kernel, from the kernel's own source (Debian: `apt install linux-source-X.Y`), with
# the toolchain the kernel recorded in its config, into
# ${XDG_CACHE_HOME:-~/.cache}/rust-dma-drivers/kbuild/<release>-<key>. A Rust symbol's name depends
# on the exact rustc (and bindgen) that compiled it, so any other toolchain would build modules the
# kernel refuses to load: a mismatch stops here, before anything compiles.
#
# Environment:
#   KSRC       the kernel source: a tree or a tarball (default /usr/src/linux-source-X.Y.tar.xz)
#   RUSTC, BINDGEN, PAHOLE   the toolchain (default: rustc, bindgen and pahole from PATH)
# A headers directory that can already build Rust modules (a full kernel build) is printed as is.
set -euo pipefail

log() { printf '[prepare-headers] %s\n' "$*" >&2; }
die() {
	printf '[prepare-headers] error: %s\n' "$*" >&2
	exit 1
}

headers=${1:-/lib/modules/$(uname -r)/build}
[ -d "$headers" ] || die "$headers does not exist: install the kernel's headers (Debian: linux-headers-\$(uname -r))"
headers=$(cd "$headers" && pwd -P)
config=$headers/.config
[ -f "$config" ] || die "$headers has no .config: not a kernel build or headers directory"

if [ -f "$headers/rust/libmacros.so" ] && [ -f "$headers/scripts/target.json" ]; then
	echo "$headers"
	exit 0
fi

config_value() {
	sed -n "s/^$1=//p" "$config" | sed -e 's/^"//' -e 's/"$//'
}

grep -q '^CONFIG_RUST=y' "$config" || die "this kernel was built without Rust (CONFIG_RUST is not set in $config)"
for f in Module.symvers include/config/kernel.release; do
	[ -f "$headers/$f" ] || die "$headers has no $f"
done
release=$(cat "$headers/include/config/kernel.release")

RUSTC=${RUSTC:-rustc}
BINDGEN=${BINDGEN:-bindgen}
PAHOLE=${PAHOLE:-pahole}
# The C compiler the kernel was built with, by the name its version text starts with
# ("x86_64-linux-gnu-gcc-14 (Debian 14.2.0-19) 14.2.0").
cc_text=$(config_value CONFIG_CC_VERSION_TEXT)
CC=${cc_text%% *}

# Each tool's version, printed as the kernel's Kconfig records it, or "not installed".
found_version() {
	case $1 in
	rustc) "$RUSTC" --version 2>/dev/null || echo "not installed ($RUSTC)" ;;
	bindgen) "$BINDGEN" --version 2>/dev/null | head -n 1 || echo "not installed ($BINDGEN)" ;;
	pahole)
		local v
		v=$("$PAHOLE" --version 2>/dev/null) || {
			echo "not installed ($PAHOLE)"
			return 0
		}
		v=${v#v}
		echo "${v/./}"
		;;
	esac
}

mismatch=()
check_tool() {
	local tool=$1 option=$2 want got
	want=$(config_value "$option")
	[ -n "$want" ] || return 0
	got=$(found_version "$tool")
	[ "$got" = "$want" ] || mismatch+=("$tool: the kernel was built with \"$want\", found \"$got\" ($option)")
}
check_tool rustc CONFIG_RUSTC_VERSION_TEXT
check_tool bindgen CONFIG_BINDGEN_VERSION_TEXT
check_tool pahole CONFIG_PAHOLE_VERSION
command -v "$CC" >/dev/null || mismatch+=("C compiler: the kernel was built with \"$cc_text\", $CC is not installed")
if [ ${#mismatch[@]} -gt 0 ]; then
	printf '[prepare-headers] error: the toolchain does not match the one %s was built with:\n' "$release" >&2
	printf '  %s\n' "${mismatch[@]}" >&2
	printf '%s\n' "Rust symbol names depend on the exact rustc and bindgen, so modules built with another" \
		"toolchain would not load. Install the distribution's own packages of that toolchain (Debian:" \
		"rustc rust-src bindgen dwarves and the gcc above, from the suite of the kernel), or point" \
		"RUSTC/BINDGEN/PAHOLE at them." >&2
	exit 1
fi
sysroot=$("$RUSTC" --print sysroot)
[ -d "$sysroot/lib/rustlib/src/rust/library/core" ] ||
	die "$RUSTC has no standard library source in $sysroot/lib/rustlib/src (Debian: apt install rust-src)"

# The kernel's version without the distribution's suffix: 7.3.4 of 7.3.4+deb13-amd64.
version=$(echo "$release" | grep -oE '^[0-9]+\.[0-9]+(\.[0-9]+)?')
series=$(echo "$version" | cut -d. -f1-2)
ksrc=${KSRC:-/usr/src/linux-source-$series.tar.xz}
[ -e "$ksrc" ] || die "no kernel source at $ksrc: install the kernel's source (Debian: apt install linux-source-$series) or set KSRC"

cache=${RDD_KBUILD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rust-dma-drivers/kbuild}
key=$({
	echo "recipe 1"
	cat "$config" "$headers/Module.symvers"
	stat -L -c "%n %s %Y" "$ksrc"
	"$RUSTC" -vV
	found_version bindgen
	found_version pahole
	"$CC" --version | head -n 1
} | sha256sum | cut -c1-16)
out=$cache/$release-$key
if [ -f "$out/.complete" ]; then
	echo "$out"
	exit 0
fi

src=$ksrc
if [ -f "$ksrc" ]; then
	src=$cache/source-$(basename "$ksrc" | sed 's/\.tar\..*//')-$key
	if [ ! -f "$src/.unpacked" ]; then
		log "unpacking $ksrc"
		rm -rf "$src"
		mkdir -p "$src"
		tar -xf "$ksrc" -C "$src" --strip-components=1
		touch "$src/.unpacked"
	fi
fi
[ -f "$src/Makefile" ] || die "$src is not a kernel source tree"
src_version=$(make -s -C "$src" kernelversion)
[ "$src_version" = "$version" ] || die "the source in $ksrc is Linux $src_version, the kernel is $version ($release)"

log "preparing a Rust-capable build of $release in $out (about two minutes, once)"
rm -rf "$out"
mkdir -p "$out"
cp "$config" "$out/.config"
# Debian's headers name the compiler and the release here; the kernel's Makefile reads it.
[ -f "$headers/.kernelvariables" ] && cp "$headers/.kernelvariables" "$out/"
make_vars=(O="$out" LOCALVERSION="${release#"$version"}" CC="$CC" RUSTC="$RUSTC" HOSTRUSTC="$RUSTC"
	BINDGEN="$BINDGEN" PAHOLE="$PAHOLE")
make -s -C "$src" "${make_vars[@]}" olddefconfig >&2
# The configuration must come out as the kernel's: any option that moved would change the bindings.
changed=$(diff <(grep '^CONFIG_' "$config" | sort) <(grep '^CONFIG_' "$out/.config" | sort) | grep '^[<>]' || true)
if [ -n "$changed" ]; then
	echo "$changed" >&2
	die "the configuration changed when re-read with this toolchain and source (above: < the kernel's, > now)"
fi
make -s -C "$src" "${make_vars[@]}" -j"$(nproc)" modules_prepare >&2
cp "$headers/Module.symvers" "$out/"
# BTF for modules is generated against vmlinux when the headers carry it.
[ -f "$headers/vmlinux" ] && cp "$headers/vmlinux" "$out/"
got_release=$(make -s -C "$src" "${make_vars[@]}" kernelrelease)
[ "$got_release" = "$release" ] || die "the prepared build says release $got_release, the kernel is $release"
touch "$out/.complete"
log "ready: build modules with make -C $out M=<module dir>"
echo "$out"
