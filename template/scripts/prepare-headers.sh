#!/usr/bin/env bash
# Makes a distribution kernel's headers ready to build Rust modules, and prints the directory to
# build against.
#
#   scripts/prepare-headers.sh [--make] [HEADERS]   HEADERS: /lib/modules/$(uname -r)/build by default
#   --make   print, on one line, the directory and then the toolchain as make's command line takes
#            it (RUSTC=… HOSTRUSTC=… PAHOLE=…, and BINDGEN=… when the build runs it): the driver's
#            Makefile builds with exactly what was checked here
#
# A Rust module is compiled against the kernel's Rust build products (rust/*.rmeta, the proc-macro
# libraries rust/*.so, the target spec scripts/target.json), with the exact rustc that made them: a
# Rust symbol's name depends on it. Distributions ship those products differently:
#   Arch (linux-headers), NixOS (the kernel's dev output), a full kernel build: in the tree itself;
#   Ubuntu: in linux-lib-rust-<release> (/usr/src/linux-lib-rust-<release>/rust), which the
#           headers' rust link points to;
#   Debian, Fedora: not at all. They are rebuilt, once per kernel, from the kernel's own source
#           (KSRC; Debian: apt install linux-source-X.Y) with the kernel's toolchain, into
#           ${XDG_CACHE_HOME:-~/.cache}/rust-dma-drivers/kbuild/<release>-<key>.
# Shipped products are used as they are when the rustc that made them is the kernel's. The toolchain
# is the one the kernel recorded in its config: RUSTC, BINDGEN and PAHOLE when given, else a
# versioned name (rustc-1.85 and /usr/lib/rust-1.85/bin/rustc, bindgen-0.71, as Ubuntu installs
# them) before the plain one in PATH. Anything that does not fit stops here, before anything
# compiles, with one message naming what the kernel needs and what provides it on this system.
#
# Environment:
#   KSRC       the kernel source for a rebuild: a tree or a tarball (default /usr/src/linux-source-X.Y.tar.xz)
#   RUSTC, BINDGEN, PAHOLE   the toolchain
set -euo pipefail

log() { printf '[prepare-headers] %s\n' "$*" >&2; }
die() {
	printf '[prepare-headers] error: %s\n' "$*" >&2
	exit 1
}

MAKE_LINE=0
if [ "${1:-}" = --make ]; then
	MAKE_LINE=1
	shift
fi
headers=${1:-/lib/modules/$(uname -r)/build}

# The distribution, for naming its packages: the first of its ID and ID_LIKE (Mint is like
# Ubuntu, Manjaro like Arch) that is known here.
# shellcheck source=/dev/null  # the system's
os_ids=$( (. /etc/os-release 2>/dev/null && echo "${ID:-} ${ID_LIKE:-}") || true)
os_id=
for id in $os_ids; do
	case $id in debian | ubuntu | arch | fedora | nixos)
		os_id=$id
		break
		;;
	esac
done
case $os_id in
debian) os_name=Debian ;;
ubuntu) os_name=Ubuntu ;;
arch) os_name=Arch ;;
fedora) os_name=Fedora ;;
nixos) os_name=NixOS ;;
*) os_name="this system" ;;
esac

# What provides PART (headers, artifacts, source or toolchain) on this distribution.
provider() {
	case $os_id:$1 in
	debian:headers | ubuntu:headers) echo "apt install linux-headers-$release" ;;
	debian:source) echo "apt install linux-source-$series" ;;
	debian:toolchain) echo "apt install rustc rust-src bindgen dwarves $cc_package, from the kernel's own suite" ;;
	ubuntu:artifacts) echo "apt install linux-lib-rust-$release" ;;
	ubuntu:source) echo "apt install linux-source-$version, then KSRC=/usr/src/linux-source-$version/linux-source-$version.tar.bz2" ;;
	ubuntu:toolchain) echo "apt install rustc-$rustc_series rust-$rustc_series-src bindgen-$bindgen_series dwarves $cc_package" ;;
	arch:headers | arch:artifacts) echo "pacman -S the headers package of the running kernel (linux-headers for linux, linux-lts-headers for linux-lts)" ;;
	arch:toolchain) echo "pacman -S rust rust-src rust-bindgen pahole at the versions above (older ones are in the Arch Linux Archive)" ;;
	fedora:headers) echo "dnf install kernel-devel-$release" ;;
	fedora:source) echo "the kernel's source RPM (dnf download --source kernel-$release), prepared, as KSRC" ;;
	fedora:toolchain) echo "dnf install rust rust-src bindgen dwarves" ;;
	nixos:headers | nixos:artifacts) echo "KDIR=\$(nix-build '<nixpkgs>' -A linuxPackages.kernel.dev --no-out-link)/lib/modules/$release/build, the kernel's dev output" ;;
	nixos:toolchain) echo "the rustc, rust-bindgen and pahole of the nixpkgs the kernel was built from" ;;
	debian:artifacts | fedora:artifacts) ;; # none: the source is what the message names
	build:toolchain) echo "the toolchain the kernel was built with, as RUSTC=... BINDGEN=... PAHOLE=..." ;;
	build:artifacts) echo "make modules_prepare (or the whole build) in the kernel's build directory" ;;
	*:artifacts) echo "the kernel's Rust build products (rust/*.rmeta, rust/*.so, scripts/target.json) in its headers, or its source as KSRC" ;;
	*:source) echo "a source tree of Linux $version as KSRC" ;;
	*) echo "the distribution's package of the kernel's $1" ;;
	esac
}

# Stops with one message: what the kernel needs that is not here, and what provides it here.
needs=()
provides=()
toolchain_mismatch=0
stop() {
	printf '[prepare-headers] error: cannot build Rust modules for %s:\n' "$release" >&2
	printf '  %s\n' "${needs[@]}" >&2
	[ "$toolchain_mismatch" = 0 ] ||
		printf '%s\n' "Rust symbol names depend on the exact rustc and bindgen, so modules built with another" \
			"toolchain would not load: install the kernel's own, or point RUSTC/BINDGEN/PAHOLE at it." >&2
	local part what
	for part in $(printf '%s\n' "${provides[@]}" | awk '!seen[$0]++'); do
		what=$(provider "$part")
		[ -z "$what" ] || printf '%s: %s\n' "$os_name" "$what" >&2
	done
	exit 1
}

[ -d "$headers" ] || {
	release=$(uname -r)
	printf '[prepare-headers] error: %s does not exist: install the kernel headers (%s: %s)\n' \
		"$headers" "$os_name" "$(provider headers)" >&2
	exit 1
}
headers=$(cd "$headers" && pwd -P)
# A kernel build of one's own (its vmlinux.o is there) is not a distribution's package.
if [ -f "$headers/vmlinux.o" ]; then
	os_id=build
	os_name="This kernel build"
fi
config=$headers/.config
[ -f "$config" ] || die "$headers has no .config: not a kernel build or headers directory"

config_value() {
	sed -n "s/^$1=//p" "$config" | sed -e 's/^"//' -e 's/"$//'
}

grep -q '^CONFIG_RUST=y' "$config" || die "this kernel was built without Rust (CONFIG_RUST is not set in $config)"
for f in Module.symvers include/config/kernel.release; do
	[ -f "$headers/$f" ] || die "$headers has no $f"
done
release=$(cat "$headers/include/config/kernel.release")
# The kernel's version without the distribution's suffix: 7.3.4 of 7.3.4+deb13-amd64.
version=$(echo "$release" | grep -oE '^[0-9]+\.[0-9]+(\.[0-9]+)?')
series=$(echo "$version" | cut -d. -f1-2)

want_rustc=$(config_value CONFIG_RUSTC_VERSION_TEXT)
want_bindgen=$(config_value CONFIG_BINDGEN_VERSION_TEXT)
want_pahole=$(config_value CONFIG_PAHOLE_VERSION)
rustc_series=$(echo "$want_rustc" | grep -oE '[0-9]+\.[0-9]+' | head -n 1 || true)
bindgen_series=$(echo "$want_bindgen" | grep -oE '[0-9]+\.[0-9]+' | head -n 1 || true)
# The C compiler the kernel was built with, by the name its version text starts with
# ("x86_64-linux-gnu-gcc-14 (Debian 14.2.0-19) 14.2.0").
cc_text=$(config_value CONFIG_CC_VERSION_TEXT)
cc_name=${cc_text%% *}
# Its package: gcc-14 for x86_64-linux-gnu-gcc-14.
cc_package=${cc_name#*-linux-gnu-}

# TOOL's version as the kernel's Kconfig records it, run as PROGRAM, or "not installed (PROGRAM)".
version_of() {
	local tool=$1 program=$2 v
	case $tool in
	rustc) "$program" --version 2>/dev/null || echo "not installed ($program)" ;;
	bindgen) "$program" --version 2>/dev/null | head -n 1 || echo "not installed ($program)" ;;
	pahole)
		v=$("$program" --version 2>/dev/null) || {
			echo "not installed ($program)"
			return 0
		}
		v=${v#v}
		echo "${v/./}"
		;;
	esac
}

# The first of the candidates (after TOOL and the version wanted) that is that version, else the
# last: a given RUSTC/BINDGEN/PAHOLE is the only candidate.
pick() {
	local tool=$1 want=$2 candidate
	shift 2
	for candidate in "$@"; do
		[ "$(version_of "$tool" "$candidate")" = "$want" ] && echo "$candidate" && return 0
	done
	echo "${*: -1}"
}
if [ -n "${RUSTC:-}" ]; then
	RUSTC=$(pick rustc "$want_rustc" "$RUSTC")
else
	RUSTC=$(pick rustc "$want_rustc" "rustc-$rustc_series" "/usr/lib/rust-$rustc_series/bin/rustc" rustc)
fi
if [ -n "${BINDGEN:-}" ]; then
	BINDGEN=$(pick bindgen "$want_bindgen" "$BINDGEN")
else
	BINDGEN=$(pick bindgen "$want_bindgen" "bindgen-$bindgen_series" bindgen)
fi
PAHOLE=${PAHOLE:-pahole}

# The rustc that made an .rmeta file, from its header: "rust", three zero bytes, the format's
# version, then (at 16 since rustc 1.76, 12 before) the LEB128 length and the text of
# `rustc --version`.
rmeta_rustc() {
	local file=$1 at b0 b1 len text
	if [ "$(head -c 4 "$file")" = rust ]; then
		for at in 16 12; do
			read -r b0 b1 < <(od -An -tu1 -j "$at" -N2 "$file")
			[ -n "${b1:-}" ] || continue
			len=$b0
			if [ "$b0" -ge 128 ]; then
				len=$((b0 - 128 + b1 * 128))
				at=$((at + 1))
			fi
			[ "$len" -gt 0 ] || continue
			text=$(dd if="$file" bs=1 skip=$((at + 1)) count="$len" status=none)
			case $text in rustc\ *)
				echo "$text"
				return 0
				;;
			esac
		done
	fi
	echo "an unknown rustc"
}

# The toolchain against the kernel's record, for the tools the chosen route runs.
check_tool() { # TOOL PROGRAM WANT OPTION [at-least]
	local tool=$1 program=$2 want=$3 option=$4 got
	[ -n "$want" ] || return 0
	got=$(version_of "$tool" "$program")
	[ "$got" = "$want" ] && return 0
	# A newer pahole makes the same BTF where nothing else is built with it (the AT_LEAST mode).
	[ "${5:-}" = at-least ] && [[ $got =~ ^[0-9]+$ ]] && [ "$got" -ge "$want" ] && return 0
	needs+=("$tool: the kernel was built with \"$want\", found \"$got\" ($option)")
	provides+=(toolchain)
	toolchain_mismatch=1
}

# The result: the directory, and with --make the toolchain for make's command line.
result() {
	local dir=$1
	shift
	if [ "$MAKE_LINE" = 1 ]; then
		echo "$dir RUSTC=$RUSTC HOSTRUSTC=$RUSTC PAHOLE=$PAHOLE $*"
	else
		echo "$dir"
	fi
	exit 0
}

# The Rust build products the headers carry: in the tree (Arch, NixOS, a full build) or behind its
# rust link (Ubuntu).
if [ -L "$headers/rust" ] && [ ! -e "$headers/rust" ]; then
	needs+=("$headers/rust links to $(readlink "$headers/rust"), which is not there: the kernel's Rust build products are a package of their own")
	provides+=(artifacts)
elif [ -f "$headers/rust/libkernel.rmeta" ]; then
	made_by=$(rmeta_rustc "$headers/rust/libkernel.rmeta")
	# What a module's build reads of them (x86_64's target spec is a file of the build).
	missing=()
	for f in rust/libcore.rmeta rust/libcompiler_builtins.rmeta rust/libmacros.so \
		include/generated/rustc_cfg scripts/target.json; do
		[ -f "$headers/$f" ] || missing+=("$f")
	done
	if [ -n "$want_rustc" ] && [ "$made_by" != "$want_rustc" ]; then
		needs+=("the Rust build products in $headers/rust were made by \"$made_by\", the kernel by \"$want_rustc\" (CONFIG_RUSTC_VERSION_TEXT)")
		provides+=(artifacts)
	elif [ ${#missing[@]} -gt 0 ]; then
		needs+=("$headers has Rust build products but not ${missing[*]}")
		provides+=(artifacts)
	else
		# Used as they are: the module build runs rustc, and pahole for the modules' BTF.
		check_tool rustc "$RUSTC" "${want_rustc:-$made_by}" CONFIG_RUSTC_VERSION_TEXT
		if grep -q '^CONFIG_DEBUG_INFO_BTF_MODULES=y' "$config"; then
			check_tool pahole "$PAHOLE" "$want_pahole" CONFIG_PAHOLE_VERSION at-least
		fi
		[ ${#needs[@]} -eq 0 ] || stop
		result "$headers"
	fi
fi

# Rebuilt from the kernel's source, with the whole toolchain. Why the shipped products were not
# used only matters when this cannot be done either.
shipped_needs=("${needs[@]}")
needs=()
check_tool rustc "$RUSTC" "$want_rustc" CONFIG_RUSTC_VERSION_TEXT
check_tool bindgen "$BINDGEN" "$want_bindgen" CONFIG_BINDGEN_VERSION_TEXT
check_tool pahole "$PAHOLE" "$want_pahole" CONFIG_PAHOLE_VERSION
CC=$cc_name
if ! command -v "$CC" >/dev/null; then
	needs+=("C compiler: the kernel was built with \"$cc_text\", $CC is not installed")
	provides+=(toolchain)
fi
if [ "$toolchain_mismatch" = 0 ] && sysroot=$("$RUSTC" --print sysroot) &&
	[ ! -d "$sysroot/lib/rustlib/src/rust/library/core" ]; then
	needs+=("$RUSTC has no standard library source in $sysroot/lib/rustlib/src, from which the kernel's core is built")
	provides+=(toolchain)
fi
ksrc=${KSRC:-/usr/src/linux-source-$series.tar.xz}
if [ ! -e "$ksrc" ]; then
	needs+=("no kernel source at $ksrc to build the Rust build products from (or set KSRC)")
	provides+=(source)
fi
if [ ${#needs[@]} -gt 0 ]; then
	needs=("${shipped_needs[@]}" "${needs[@]}")
	stop
fi
[ ${#shipped_needs[@]} -eq 0 ] || log "${shipped_needs[0]}: building them from the kernel's source instead"

cache=${RDD_KBUILD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rust-dma-drivers/kbuild}
key=$({
	echo "recipe 1"
	cat "$config" "$headers/Module.symvers"
	stat -L -c "%n %s %Y" "$ksrc"
	"$RUSTC" -vV
	version_of bindgen "$BINDGEN"
	version_of pahole "$PAHOLE"
	"$CC" --version | head -n 1
} | sha256sum | cut -c1-16)
out=$cache/$release-$key
[ -f "$out/.complete" ] && result "$out" "BINDGEN=$BINDGEN"

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
log "ready: build modules with make -C $out M=<module dir> RUSTC=$RUSTC"
result "$out" "BINDGEN=$BINDGEN"
