#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Runs Mercury's tests by category: unit (pure logic, cmocka), kernel (BPF_PROG_TEST_RUN and
# netlink tests, root), integration (network namespaces), system (units, install, format),
# vm (QEMU: the kernel matrix, and mercuryd.service under a real systemd). `all` runs every category that is part of `make test`.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$root/build}
export MERCURY_ROOT=$root MERCURY_BUILD=$build
export MERCURYD=${MERCURYD:-$build/mercuryd}
cd "$root" || exit 1

pass=0 fail=0 skip=0 failed=()
# Each test's output also goes to a log, so that the summary at the end can repeat what
# failed: CI shows the tail of a long run, where a failed check would otherwise be lost.
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
run_one() { # name, command...
	local name=$1 rc start end log
	shift
	log=$logs/${name//\//_}.log
	start=$(date +%s.%N)
	printf '== %s\n' "$name"
	# a file, not a pipe: a daemon a test leaves behind must not keep the run waiting
	"$@" >"$log" 2>&1
	rc=$?
	cat "$log"
	end=$(date +%s.%N)
	case $rc in
	0) pass=$((pass + 1)); printf '   PASS %s (%.1fs)\n' "$name" "$(echo "$end - $start" | bc)" ;;
	77) skip=$((skip + 1)); printf '   SKIP %s\n' "$name" ;;
	*) fail=$((fail + 1)); failed+=("$name"); printf '   FAIL %s (rc %d)\n' "$name" "$rc" ;;
	esac
}
# failure_summary: for each failed test, its failed checks and the last lines it printed.
failure_summary() {
	local name log
	for name in "${failed[@]}"; do
		log=$logs/${name//\//_}.log
		printf '\n--- %s: failed checks, then its last 15 lines\n' "$name"
		# vm/* logs carry the guest's lines behind "  | "
		grep -E '^(  \| )?(FAIL|E2E FAIL|not ok|\[  FAILED  \]|=== )' "$log" | grep -B1 -vE '^(  \| )?=== ' | grep -v '^--$' | head -n 20
		tail -n 15 "$log"
	done
}

cat_unit() {
	for t in "$build"/tests/test_*; do
		[ -x "$t" ] || continue
		src=$(basename "$t")
		[ -f "tests/unit/$src.c" ] && run_one "unit/$src" "$t"
	done
}
cat_kernel() {
	for t in "$build"/tests/test_*; do
		[ -x "$t" ] || continue
		src=$(basename "$t")
		[ -f "tests/kernel/$src.c" ] && run_one "kernel/$src" "$t"
	done
}
cat_integration() {
	for t in tests/integration/test_*.sh; do
		[ -f "$t" ] || continue
		run_one "integration/$(basename "$t" .sh)" timeout --kill-after=10 600 bash "$t"
	done
}
cat_system() {
	for t in tests/system/test_*.sh; do
		[ -f "$t" ] || continue
		run_one "system/$(basename "$t" .sh)" timeout 300 bash "$t"
	done
}
cat_gpu() { # skipped without CUDA (Debian's torch has none): scripts/gpu-check.sh on a GPU
	run_one "gpu/torch" timeout 600 bash tests/gpu/run.sh
}
cat_vm() {
	run_one "vm/matrix" timeout 900 bash tests/vm/run.sh
	run_one "vm/systemd" timeout 900 bash tests/vm/systemd-e2e.sh
}

what=${1:-all}
case $what in
unit) cat_unit ;;
kernel) cat_kernel ;;
integration) cat_integration ;;
system) cat_system ;;
vm) cat_vm ;;
gpu) cat_gpu ;;
all) cat_unit; cat_kernel; cat_system; cat_integration; cat_gpu; [ -x tests/vm/run.sh ] && cat_vm ;;
*) echo "usage: tests/run.sh [all|unit|kernel|integration|system|vm|gpu]" >&2; exit 2 ;;
esac
printf '\n%d passed, %d failed, %d skipped\n' "$pass" "$fail" "$skip"
[ "$fail" -eq 0 ] || {
	failure_summary
	printf '\nfailed: %s\n' "${failed[*]}"
	exit 1
}
