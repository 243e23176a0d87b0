#!/usr/bin/env bash
# Runs a command in the chroot of one of Debian's Rust kernels (kernel/debian-kernels.conf), where
# that Debian release's own rustc, bindgen, pahole, gcc, dkms and the kernel's headers and source
# are installed, as on a user's machine. The repository and the cache appear at their own paths.
# Needs root (or sudo), as chroot does.
#
#   scripts/debian-chroot.sh debian-7.3 make -C drivers/e1000_rs KDIR=/lib/modules/7.3.4+deb13-amd64/build
#   scripts/debian-chroot.sh debian-7.2            # a shell
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

name=${1:?usage: debian-chroot.sh NAME [COMMAND...]}
shift
is_debian_kernel "$name" || die "$name is not in kernel/debian-kernels.conf (there: $(debian_kernels | tr '\n' ' '))"
chroot_dir=$(debian_chroot_dir "$name")
[ -f "$chroot_dir/.complete" ] || die "the $name chroot is not made ($chroot_dir): run scripts/setup.sh"
[ $# -gt 0 ] || set -- bash
sudo=()
[ "$(id -u)" -eq 0 ] || sudo=(sudo)
mkdir -p "$CACHE/kbuild"
# A private mount namespace: the bind mounts vanish with the command. The command starts in the
# current directory when the chroot sees it (inside the repository or the cache), else at the top.
# shellcheck disable=SC2016  # the script is for the inner bash, which gets the values as arguments
exec "${sudo[@]}" unshare --mount --propagation private -- bash -c '
	set -e
	root=$1 top=$2 cache=$3
	shift 3
	mkdir -p "$root$top" "$root$cache"
	mount --rbind /dev "$root/dev"
	mount -t proc proc "$root/proc"
	mount --bind "$top" "$root$top"
	mount --bind "$cache" "$root$cache"
	exec chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/local/bin:/usr/bin:/usr/sbin:/bin:/sbin \
		LANG=C.UTF-8 RDD_KBUILD_CACHE="$cache/kbuild" "$@"
' debian-chroot "$chroot_dir" "$ROOT" "$CACHE" sh -c 'cd "$1" 2>/dev/null || cd "$2"; shift 2; exec "$@"' \
	sh "$PWD" "$ROOT" "$@"
