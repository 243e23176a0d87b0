#!/usr/bin/env bash
# Lays out the installed headers of one of Debian's kernels as another distribution ships its
# headers, with the Rust build products of a prepared build directory (template/scripts/
# prepare-headers.sh's), for harness/tests/debian_kernels.rs. Run in the kernel's chroot.
#
#   headers-as-shipped.sh arch OUT RELEASE PRODUCTS      as Arch's linux-headers: rust/*.rmeta,
#                                                        rust/*.so and scripts/target.json in the tree
#   headers-as-shipped.sh ubuntu OUT RELEASE PRODUCTS    as Ubuntu's: rust/ in OUT/linux-lib-rust-RELEASE
#                                                        (the linux-lib-rust package), the headers'
#                                                        rust a link to it; and OUT/bin holding a
#                                                        rustc of another version before rustc-X.Y,
#                                                        the kernel's, as Ubuntu's versioned packages
#
# Prints the headers directory, OUT/linux-headers-RELEASE.
set -euo pipefail

layout=${1:?usage: headers-as-shipped.sh arch|ubuntu OUT RELEASE PRODUCTS}
out=${2:?no OUT}
release=${3:?no RELEASE}
products=${4:?no PRODUCTS}
debian=$(readlink -f "/lib/modules/$release/build")
tree=$out/linux-headers-$release

rm -rf "$out"
mkdir -p "$out"
# Debian's architecture half: its Makefile names the tree itself as the output directory and
# includes the generic half; scripts and tools are relative links to linux-kbuild.
cp -a "$debian" "$tree"
sed -i "s|^KBUILD_OUTPUT=.*|KBUILD_OUTPUT=$tree|" "$tree/Makefile"
rm "$tree/scripts" "$tree/tools"
cp -a "$(readlink -f "$debian/scripts")" "$tree/scripts"
ln -s "$(readlink -f "$debian/tools")" "$tree/tools"
cp "$products/scripts/target.json" "$tree/scripts/"
cp "$products/include/generated/rustc_cfg" "$tree/include/generated/"

case $layout in
arch) rust=$tree/rust ;;
ubuntu)
	rust=$out/linux-lib-rust-$release/rust
	ln -s "../linux-lib-rust-$release/rust" "$tree/rust"
	want=$(sed -n 's/^CONFIG_RUSTC_VERSION_TEXT="\(.*\)"$/\1/p' "$tree/.config")
	series=$(echo "$want" | grep -oE '[0-9]+\.[0-9]+' | head -n 1)
	mkdir -p "$out/bin"
	# A newer rustc first in PATH, as rustup's would be, that can do nothing but name itself.
	# shellcheck disable=SC2016  # expansions of the scripts written
	printf '%s\n' '#!/bin/sh' '[ "$1" = --version ] && echo "rustc 1.99.0 (0000000 2027-01-01)" && exit 0' \
		'echo "this rustc is not the kernel'"'"'s" >&2' 'exit 1' >"$out/bin/rustc"
	printf '%s\n' '#!/bin/sh' 'exec /usr/bin/rustc "$@"' >"$out/bin/rustc-$series"
	chmod +x "$out/bin/rustc" "$out/bin/rustc-$series"
	;;
*)
	echo "headers-as-shipped.sh: no layout $layout (arch or ubuntu)" >&2
	exit 1
	;;
esac
mkdir -p "$rust"
cp "$products"/rust/*.rmeta "$products"/rust/*.so "$rust/"
echo "$tree"
