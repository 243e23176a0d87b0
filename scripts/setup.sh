#!/usr/bin/env bash
# Installs everything the project needs and builds the Rust-enabled kernel. Idempotent: a re-run
# with everything up to date only checks, and says so.
#
#   scripts/setup.sh                all steps
#   scripts/setup.sh --demo         what the demo boots: the toolchain, QEMU and the lab kernel, not
#                                   the KASAN kernel nor Debian's kernels and chroots
#   scripts/setup.sh --kernel NAME  lab kernel NAME only (lab or kasan), after --demo
#   scripts/setup.sh --debian       Debian's kernels, chroots and prepared headers only, after --demo
#   --quiet                         without the final summary
#
# A part another set-up is making (scripts/test.sh makes the KASAN kernel and Debian's kernels in
# the background, and the harness asks for them when a test first needs them) is waited for, then
# found done.
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

QUIET=0
PART=all
ONLY_KERNEL=
usage="scripts/setup.sh [--demo | --kernel NAME | --debian] [--quiet]"
while [ $# -gt 0 ]; do
	case $1 in
	--demo | --debian | --kernel) [ "$PART" = all ] || die "one of --demo, --kernel and --debian: $usage" ;;
	esac
	case $1 in
	--quiet) QUIET=1 ;;
	--demo) PART=demo ;;
	--debian) PART=debian ;;
	--kernel)
		PART=kernel
		ONLY_KERNEL=${2:-}
		[[ " ${LAB_KERNELS[*]} " == *" $ONLY_KERNEL "* ]] || die "--kernel takes one of: ${LAB_KERNELS[*]}"
		shift
		;;
	*) die "unknown argument $1: $usage" ;;
	esac
	shift
done

APT_PACKAGES=(
	build-essential bc flex bison libelf-dev libssl-dev cpio xz-utils kmod python3 unzip
	rustc-web rust-web-src rust-web-clippy
	clang-19 lld-19 llvm-19
	busybox-static e2fsprogs ethtool iproute2 nvme-cli
	shellcheck mmdebstrap
)

as_root() {
	if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

step_apt() {
	local missing=() p
	for p in "${APT_PACKAGES[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	log "installing Debian packages: ${missing[*]}"
	as_root apt-get update -q
	as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends --no-remove \
		"${missing[@]}"
}

# apt-get or apt-cache (first argument), as root, with the private list kernel/apt-qemu.list and
# package lists of its own in the cache.
apt_qemu() {
	local tool=$1 state=$CACHE/apt-qemu
	shift
	mkdir -p "$state/lists/partial" "$state/cache/archives/partial"
	as_root env DEBIAN_FRONTEND=noninteractive "$tool" -q -o APT::Sandbox::User=root \
		-o "Dir::Etc::sourcelist=$ROOT/kernel/apt-qemu.list" \
		-o Dir::Etc::sourceparts=/dev/null -o "Dir::State::Lists=$state/lists" -o "Dir::Cache=$state/cache" "$@"
}

# bookworm-backports' QEMU, at the version of the machine's qemu-utils when it has one (this machine
# kind comes with 10.0.2 from there; bookworm's own QEMU 7.2 would remove it), else the newest.
# Nothing is removed.
step_qemu() {
	local utils have want
	# dpkg-query fails for a package it has never seen: that is "not installed", not an error.
	utils=$(dpkg-query -W -f='${db:Status-Status} ${Version}' qemu-utils 2>/dev/null | sed -n 's/^installed //p' || true)
	have=$(dpkg-query -W -f='${db:Status-Status} ${Version}' qemu-system-x86 2>/dev/null | sed -n 's/^installed //p' || true)
	if [ -n "$have" ] && [ "$have" = "$utils" ] && [[ $have == *bpo12* ]]; then
		return 0
	fi
	apt_qemu apt-get update >/dev/null
	want=$utils
	if [[ $want != *bpo12* ]]; then
		want=$(apt_qemu apt-cache madison qemu-system-x86 | awk -F'|' '/bookworm-backports/ { gsub(/ /, "", $2); print $2; exit }')
	fi
	[ -n "$want" ] || die "no QEMU in bookworm-backports"
	log "installing QEMU $want from bookworm-backports"
	apt_qemu apt-get install -y --no-install-recommends --no-remove -t bookworm-backports \
		"qemu-system-x86=$want" "qemu-system-common=$want" "qemu-system-data=$want" "qemu-utils=$want" >/dev/null
}

step_bindgen() {
	if [ -x "$BINDGEN" ] && "$BINDGEN" --version 2>/dev/null | grep -qF "$BINDGEN_VERSION"; then
		return 0
	fi
	log "building bindgen-cli $BINDGEN_VERSION (about a minute)"
	cargo install --locked --quiet --root "$TOOLS" "bindgen-cli@$BINDGEN_VERSION"
}

step_libclang() {
	local stamp=$LIBCLANG_DIR/.version
	if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$LIBCLANG_WHEEL_VERSION" ] && [ -f "$LIBCLANG_DIR/libclang.so" ]; then
		return 0
	fi
	log "fetching libclang $LIBCLANG_WHEEL_VERSION (bookworm's libclang 14 is older than the kernel accepts)"
	local tmp
	tmp=$(mktemp -d)
	python3 -m pip download --quiet --no-deps --only-binary=:all: --dest "$tmp" \
		"libclang==$LIBCLANG_WHEEL_VERSION"
	mkdir -p "$LIBCLANG_DIR"
	unzip -q -o -j "$tmp"/libclang-*.whl '*/clang/native/libclang.so' -d "$LIBCLANG_DIR"
	rm -rf "$tmp"
	echo "$LIBCLANG_WHEEL_VERSION" >"$stamp"
}

step_cargo_generate() {
	if [ -x "$CARGO_GENERATE" ] && "$CARGO_GENERATE" --version 2>/dev/null | grep -qF "$CARGO_GENERATE_VERSION"; then
		return 0
	fi
	# 0.26 needs a newer rustc than stable here; path templates are all the project uses. Its own
	# release profile (fat LTO, one codegen unit) made the build take four minutes for a tool that
	# expands a template in a moment.
	log "building cargo-generate $CARGO_GENERATE_VERSION with the nightly toolchain"
	CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 \
		cargo +nightly install --locked --quiet --no-default-features --root "$TOOLS" \
		"cargo-generate@$CARGO_GENERATE_VERSION"
}

# apt-get or apt-cache (first argument) with the project's private source list.
apt_private() {
	local tool=$1 state=$CACHE/apt
	shift
	"$tool" -q -o APT::Sandbox::User=root -o "Dir::Etc::sourcelist=$ROOT/kernel/apt-sources.list" -o Dir::Etc::sourceparts=/dev/null \
		-o "Dir::State::Lists=$state/lists" -o "Dir::Cache::archives=$state/archives" \
		-o "Dir::Cache=$state/cache" "$@"
}

APT_PRIVATE_UPDATED=0
apt_private_update() {
	[ "$APT_PRIVATE_UPDATED" = 1 ] && return 0
	mkdir -p "$CACHE/apt/lists/partial" "$CACHE/apt/archives/partial" "$CACHE/apt/cache"
	log "reading Debian's package lists for the kernel sources"
	apt_private apt-get update >/dev/null
	APT_PRIVATE_UPDATED=1
}

# Download and unpack one kernel source package at its pinned version, or at the newest of the same
# series when Debian has pruned the pin.
fetch_source() {
	local pkg=$1 pin=$2 ver dir tarball tmp
	if ver=$(source_version "$pkg") && [ -f "$(source_dir "$pkg")/.unpacked" ]; then
		[ "$ver" = "$pin" ] || warn "$pkg: using $ver from the cache; the pinned $pin was not available"
		return 0
	fi
	apt_private_update
	ver=$pin
	if ! apt_private apt-cache show "$pkg=$pin" >/dev/null 2>&1; then
		ver=$(apt_private apt-cache madison "$pkg" | awk -F'|' '{gsub(/ /, "", $2); print $2}' |
			sort -V | tail -n 1)
		[ -n "$ver" ] || die "$pkg is not available from any suite in kernel/apt-sources.list"
		warn "$pkg $pin (pinned in kernel/sources.conf) is gone from Debian; falling back to the newest, $ver"
	fi
	mkdir -p "$CACHE/debs" "$CACHE/src"
	log "downloading $pkg $ver"
	(cd "$CACHE/debs" && apt_private apt-get download "$pkg=$ver" >/dev/null)
	dir=$CACHE/src/${pkg}_$ver
	tmp=$(mktemp -d)
	log "unpacking $pkg $ver"
	dpkg-deb -x "$CACHE/debs/${pkg}_${ver//:/%3a}_all.deb" "$tmp"
	tarball=$(find "$tmp/usr/src" -maxdepth 1 -name 'linux-source-*.tar.*' | head -n 1)
	[ -n "$tarball" ] || die "$pkg $ver has no source tarball in /usr/src"
	rm -rf "$dir"
	mkdir -p "$dir"
	tar -xf "$tarball" -C "$dir" --strip-components=1
	rm -rf "$tmp"
	touch "$dir/.unpacked"
	echo "$ver" >"$CACHE/src/$pkg.version"
}

step_sources() {
	local pkg pin role
	while read -r pkg pin role; do
		[ "$PART" = demo ] && [ "$role" = test ] && continue
		fetch_source "$pkg" "$pin"
	done < <(source_pins)
}

# Run make, showing one progress line every 20 s instead of thousands of compiler lines; the whole
# output goes to LOG and its tail is shown on failure.
make_with_progress() {
	local what=$1 log=$2
	shift 2
	local start=$SECONDS
	"$@" >"$log" 2>&1 &
	local pid=$!
	while kill -0 "$pid" 2>/dev/null; do
		sleep 20 &
		wait $! || true
		kill -0 "$pid" 2>/dev/null || break
		log "$what: $(grep -cE '^  (CC|RUSTC|AS|LD|AR|BINDGEN|EXPORTS)' "$log" || true) steps, $((SECONDS - start)) s"
	done
	if ! wait "$pid"; then
		tail -n 40 "$log" >&2
		die "$what failed; the whole log is $log"
	fi
	log "$what: done in $((SECONDS - start)) s"
}

# Runs the rest of the arguments holding the lock named by the first, waiting for another set-up
# that holds it. The lock goes with the process, also when it dies.
locked() {
	local name=$1 fd
	shift
	mkdir -p "$CACHE/locks"
	exec {fd}>"$CACHE/locks/$name.lock"
	if ! flock -n "$fd"; then
		log "waiting for another set-up to finish $name"
		flock "$fd"
	fi
	"$@"
	exec {fd}>&-
}

# Builds lab kernel NAME unless its build (keyed by all that produced it) is in the cache.
step_kernel() {
	locked "kernel-$1" build_kernel "$1"
}

build_kernel() {
	local name=$1 pkg src build fragments
	pkg=$(build_package)
	src=$(source_dir "$pkg") || die "no $pkg in $CACHE/src: run scripts/setup.sh --demo first"
	build=$(kernel_build_dir "$name")
	if [ -f "$build/.complete" ]; then
		return 0
	fi
	local -a vars
	mapfile -t vars < <(kernel_make_vars "$name")
	mapfile -t fragments < <(kernel_fragments "$name")
	LIBCLANG_PATH=$(kernel_libclang_dir "$name")
	export LIBCLANG_PATH
	rm -rf "$build"
	mkdir -p "$build"
	log "configuring the $name kernel ($pkg $(source_version "$pkg")) in $build"
	make -s -C "$src" O="$build" "${vars[@]}" tinyconfig >/dev/null
	(cd "$build" && "$src/scripts/kconfig/merge_config.sh" -m -O "$build" .config "${fragments[@]}" >/dev/null)
	make -s -C "$src" O="$build" "${vars[@]}" olddefconfig >/dev/null
	check_config "$build/.config" "${fragments[@]}"
	make -s -C "$src" O="$build" "${vars[@]}" rustavailable >/dev/null ||
		die "the kernel does not accept this Rust toolchain: run 'make -C $src O=$build ${vars[*]} rustavailable' to see why"
	make_with_progress "$name kernel build" "$build/build.log" \
		make -C "$src" O="$build" "${vars[@]}" -j"$(($(nproc) + 1))" bzImage modules
	if grep -qE '(^|: )warning:' "$build/build.log"; then
		warn "the $name kernel build printed warnings: grep warning: $build/build.log"
	fi
	touch "$build/.complete"
}

# Every option the fragments ask for must have survived olddefconfig, or some test would later fail
# for a reason far from its cause.
check_config() {
	local config=$1 fragment line name want got bad=0
	shift
	for fragment in "$@"; do
		while IFS= read -r line; do
			case $line in
			CONFIG_*=*) ;;
			*) continue ;;
			esac
			name=${line%%=*}
			want=${line#*=}
			got=$(grep -E "^$name=|^# $name is not set" "$config" || true)
			if [ "$want" = n ]; then
				case $got in "$name="[ym]) warn "$name=n was asked for but is ${got#*=}" && bad=1 ;; esac
			elif [ "$got" != "$line" ]; then
				warn "$name=$want was asked for, but the config has '${got:-nothing}' (a dependency is missing)"
				bad=1
			fi
		done <"$fragment"
		[ "$bad" = 0 ] || die "${fragment#"$ROOT"/} does not apply cleanly; see the warnings above"
	done
}

# The chroot of Debian kernel NAME: that Debian release with its own kernel toolchain, dkms and the
# kernel's headers and source, as a user of it would install them (mmdebstrap, from Debian's mirror).
step_debian_chroot() {
	local name=$1 dir suite packages old
	dir=$(debian_chroot_dir "$name")
	[ -f "$dir/.complete" ] && return 0
	suite=$(debian_kernel_field "$name" suite)
	packages=$(debian_chroot_packages "$name" | paste -sd,)
	for old in "$CACHE/chroot/$name"-*; do
		[ -e "$old" ] && [ "$old" != "$dir" ] && rm -rf "$old"
	done
	log "making the $name chroot: Debian $suite with $packages"
	rm -rf "$dir"
	mkdir -p "$CACHE/chroot"
	# sid's Release file is valid for days only; the mirror this machine kind reaches may be older.
	as_root mmdebstrap --quiet --variant=apt --aptopt='Acquire::Check-Valid-Until "false"' \
		--include="$packages" "$suite" "$dir" - < <(
			tr ',' '\n' <<<"$(debian_kernel_field "$name" apt-suites)" |
				sed 's|.*|deb http://deb.debian.org/debian & main|'
		)
	touch "$dir/.complete"
}

# Debian's unmodified kernel image of Debian kernel NAME and the C modules the tests load, unpacked
# from linux-binary-<release> and linux-modules-<release>.
step_debian_kernel() {
	local name=$1 release dir tmp pkg rel
	release=$(debian_kernel_field "$name" release)
	dir=$(debian_kernel_dir "$name")
	[ -f "$dir/.complete" ] && return 0
	apt_private_update
	log "downloading Debian's $release kernel"
	tmp=$(mktemp -d)
	(cd "$tmp" && apt_private apt-get download "linux-binary-$release" "linux-modules-$release" >/dev/null)
	rm -rf "$dir"
	mkdir -p "$dir"
	for pkg in "$tmp"/*.deb; do
		dpkg-deb -x "$pkg" "$tmp/root"
	done
	cp "$tmp/root/usr/lib/modules/$release/vmlinuz" "$dir/"
	for rel in "${DEBIAN_C_MODULES[@]}"; do
		mkdir -p "$dir/$(dirname "$rel")"
		xz -dc "$tmp/root/usr/lib/modules/$release/kernel/$rel.ko.xz" >"$dir/$rel.ko"
	done
	rm -rf "$tmp"
	touch "$dir/.complete"
}

# Debian's headers of kernel NAME completed for Rust, in the chroot, as the drivers' Makefiles do on
# a user's first build; this also checks that the chroot's toolchain is the kernel's.
step_debian_headers() {
	local name=$1 release
	release=$(debian_kernel_field "$name" release)
	"$ROOT/scripts/debian-chroot.sh" "$name" "$ROOT/template/scripts/prepare-headers.sh" "/lib/modules/$release/build" >/dev/null
}

# The chroot and the kernel image of each of Debian's kernels.
debian_downloads() {
	local kernel
	for kernel in $(debian_kernels); do
		step_debian_chroot "$kernel"
		step_debian_kernel "$kernel"
	done
}

# Debian's kernels: chroots, images, and their headers prepared as a user's first build does.
step_debian() {
	locked debian debian_part
}

debian_part() {
	local kernel
	debian_downloads
	for kernel in $(debian_kernels); do
		step_debian_headers "$kernel"
	done
}

# Parts of the set-up that run beside others: NAME -> process ID, which is also their process
# group's. All of them stop with the set-up.
declare -A BACKGROUND=()
stop_background() {
	local pid
	for pid in "${BACKGROUND[@]}"; do
		kill -- "-$pid" 2>/dev/null || true
	done
}
trap stop_background EXIT

# in_background NAME COMMAND...: starts COMMAND (a step) beside the set-up, in a process group of
# its own (job control for this one start), so that stopping it stops what it started too.
in_background() {
	local name=$1
	shift
	set -m
	"$@" </dev/null &
	set +m
	BACKGROUND[$name]=$!
}

# finish_background NAME: waits for it; its failure is the set-up's.
finish_background() {
	local pid=${BACKGROUND[$1]}
	unset "BACKGROUND[$1]"
	wait "$pid" || die "setting up $1 failed; see the messages above"
}

# lowly COMMAND...: COMMAND at the lowest CPU priority, using what the others leave idle.
lowly() {
	renice -n 19 -p "$BASHPID" >/dev/null
	"$@"
}

main() {
	local start=$SECONDS kernel kernels=()
	mkdir -p "$CACHE" "$TOOLS"
	case $PART in
	kernel)
		kernels=("$ONLY_KERNEL")
		step_kernel "$ONLY_KERNEL"
		;;
	debian) step_debian ;;
	demo | all)
		# The host tools build with the machine's own cargo from the start, while apt and the
		# downloads mostly wait on the network; cargo-generate, needed last, yields to the rest.
		in_background bindgen step_bindgen
		in_background cargo-generate lowly step_cargo_generate
		step_apt
		step_qemu
		step_libclang
		step_sources
		finish_background bindgen
		kernels=(lab)
		[ "$PART" = all ] && kernels=("${LAB_KERNELS[@]}")
		if [ "$PART" = all ]; then
			# Debian's chroots and kernel images are mostly downloading: they come while the
			# kernels build (and then their headers are prepared beside them).
			in_background "Debian's kernels" step_debian
		fi
		for kernel in "${kernels[@]}"; do
			step_kernel "$kernel"
		done
		finish_background cargo-generate
		[ "$PART" = all ] && finish_background "Debian's kernels"
		;;
	esac
	if [ "$QUIET" = 0 ]; then
		for kernel in "${kernels[@]}"; do
			log "$kernel kernel: $(kernel_build_dir "$kernel")"
		done
		log "ready in $((SECONDS - start)) s"
	fi
}

main
