#!/usr/bin/env bash
# Hands a driver to DKMS, which then builds it for each installed kernel, and again for every new
# one (needs root).
#
#   scripts/dkms.sh add DRIVER_DIR     prints NAME/VERSION; then: dkms install NAME/VERSION -k RELEASE
#
# DKMS copies what it is given to /usr/src/NAME-VERSION. A driver's directory builds alone (its
# scripts/ holds the build files its Makefile includes), so this stages the directory's sources
# only, without what an earlier build left there. An earlier NAME/VERSION is removed from DKMS
# first.
set -euo pipefail

die() {
	printf '[dkms] error: %s\n' "$*" >&2
	exit 1
}

if [ "${1:-}" != add ] || [ $# -ne 2 ]; then
	die "usage: scripts/dkms.sh add DRIVER_DIR"
fi
dir=$(cd "$2" && pwd) || die "$2: no such directory"
[ -f "$dir/dkms.conf" ] || die "$dir has no dkms.conf"
command -v dkms >/dev/null || die "dkms is not installed (Debian: apt install dkms)"
# shellcheck disable=SC1091  # the driver's own dkms.conf, a shell fragment by DKMS's definition
package=$(set +u && . "$dir/dkms.conf" && echo "$PACKAGE_NAME/$PACKAGE_VERSION")

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/scripts"
cp "$dir/dkms.conf" "$dir/Kbuild" "$dir/Makefile" "$stage/"
cp "$dir"/scripts/* "$stage/scripts/"
# The sources, in their directories (the DMA wrapper's parts are in src/dma_local/).
(cd "$dir" && find src -type f \( -name '*.rs' -o -name '*.c' -o -name '*.h' \) \
	-exec cp --parents {} "$stage/" \;)

if dkms status "$package" | grep -q .; then
	dkms remove "$package" --all >&2
fi
rm -rf "/usr/src/${package/\//-}"
dkms add "$stage" >&2
echo "$package"
