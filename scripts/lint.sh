#!/usr/bin/env bash
# Static checks: shellcheck, rustfmt (the kernel's configuration for kernel code), clippy (CLIPPY=1
# for kernel code, cargo clippy for the harness) and checkpatch for the C files. Fails on any
# finding.
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"
cd "$ROOT"
KSRC=$(scripts/env.sh --get KSRC)
failed=0
fail() {
	printf '[lint] %s\n' "$*" >&2
	failed=1
}

shellcheck -x -S warning scripts/*.sh template/scripts/*.sh .ci/run harness/guest/*.sh harness/guest/scenarios/*/*.sh harness/scripts/*.sh \
	harness/guest/bench/*/*.sh harness/guest/demo/*.sh || fail "shellcheck"

kernel_rust=(template/src/*.rs modules/*/*.rs drivers/*/src/*.rs)
rustfmt --check --edition 2021 --config-path "$KSRC/.rustfmt.toml" "${kernel_rust[@]}" >/dev/null ||
	fail "rustfmt: run rustfmt --config-path $KSRC/.rustfmt.toml on ${kernel_rust[*]}"
cargo fmt --all --check >/dev/null || fail "cargo fmt: run cargo fmt --all"
cargo clippy --quiet --release --workspace --all-targets -- -D warnings || fail "cargo clippy"

# The template is linted as a driver generated from it.
generated=target/generated/lint_check
rm -rf "$generated"
mkdir -p target/generated
USER=${USER:-$(id -un)} "$CARGO_GENERATE" generate --path template --name lint_check \
	--destination target/generated --vcs none --no-workspace --silent >/dev/null 2>&1
for dir in modules/* drivers/* "$generated"; do
	# Its cases must not compile: harness/tests/dma_local_misuse.rs builds each and checks why.
	[ "$dir" = modules/dma_misuse ] && continue
	# A separate output directory (Kbuild's MO=) that starts empty, so that every file is compiled
	# and linted, and the sources stay clean.
	out_dir=$ROOT/target/kbuild/clippy/$(basename "$dir")
	rm -rf "$out_dir"
	mkdir -p "$out_dir"
	if ! out=$(make -s -C "$dir" CLIPPY=1 MO="$out_dir" PROJECT="$ROOT" 2>&1) || grep -qE '(^|: )(warning|error)[:[]' <<<"$out"; then
		printf '%s\n' "$out" >&2
		fail "CLIPPY=1 build of $dir"
	fi
done

while IFS= read -r c; do
	"$KSRC/scripts/checkpatch.pl" --no-tree --max-line-length=100 -q --terse --no-summary -f "$c" ||
		fail "checkpatch $c"
done < <(git ls-files -- 'template/*.[ch]' 'modules/*.[ch]' 'drivers/*.[ch]')

[ "$failed" = 0 ] && echo "[lint] clean"
exit "$failed"
