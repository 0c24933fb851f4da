#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# `make test-vm`: runs Mercury's guest tests inside Debian 12's 6.1 kernel under QEMU TCG.
# Fetches the kernel (cached in $MERCURY_VM_CACHE, default /var/cache/mercury-vm), builds an
# initramfs with the project's binaries and tests, boots it (PVH, uncompressed vmlinux) under a
# hard timeout, and fails unless every guest test passed or skipped, no panic, no hang, and the
# guest reported MERCURY-DONE. Exit 0 only on full success.
# Env: MERCURY_VM_TIMEOUT (s, default 540), MERCURY_VM_MEM (default 2G), MERCURY_VM_SMP (2),
#      MERCURY_VM_BACKENDS, MERCURY_VM_ONLY, MERCURY_VM_TEST_TIMEOUT (passed to the guest),
#      MERCURY_VM_KERNEL (6.1.0-N-amd64), MERCURY_VM_BOOT=vmlinuz (slower fallback),
#      MERCURY_VM_KEEP=1 (keep the work dir with console.log/results.log),
#      MERCURY_VM_APPEND (extra kernel command line).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
export MERCURY_ROOT=$root MERCURY_BUILD=${MERCURY_BUILD:-$root/build}
cache=${MERCURY_VM_CACHE:-/var/cache/mercury-vm}
limit=${MERCURY_VM_TIMEOUT:-540}
t_start=$(date +%s.%N)
log() { printf 'test-vm: %s\n' "$*" >&2; }
elapsed() { awk -v a="$t_start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

command -v qemu-system-x86_64 >/dev/null || { log "qemu-system-x86_64 missing: apt-get install qemu-system-x86"; exit 1; }
[ -x "$MERCURY_BUILD/mercuryd" ] || log "note: no $MERCURY_BUILD/mercuryd (run make): its guest tests will skip"

kdir=$(MERCURY_VM_CACHE=$cache "$here/fetch-kernel.sh") || { log "could not fetch the 6.1 kernel"; exit 1; }
kver=$(cat "$kdir/version")
work=$(mktemp -d "${TMPDIR:-/tmp}/mercury-vm.XXXXXX")
tail_pid=
cleanup() {
	[ -n "$tail_pid" ] && kill "$tail_pid" 2>/dev/null
	if [ "${MERCURY_VM_KEEP:-0}" = 1 ]; then log "logs kept in $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
"$here/build-initramfs.sh" "$kdir" "$work/initramfs.cpio.gz" || { log "initramfs build failed"; exit 1; }
t_built=$(elapsed)

kernel=$kdir/vmlinux
[ "${MERCURY_VM_BOOT:-vmlinux}" = vmlinuz ] && kernel=$kdir/vmlinuz
append="console=ttyS0 panic=-1 oops=panic loglevel=4 rdinit=/init"
for v in MERCURY_VM_BACKENDS MERCURY_VM_ONLY MERCURY_VM_TEST_TIMEOUT; do
	[ -n "${!v:-}" ] && append="$append $v=${!v}"
done
append="$append ${MERCURY_VM_APPEND:-}"
: >"$work/console.log"
: >"$work/results.log"
tail -n +1 -f "$work/console.log" &
tail_pid=$!
log "booting $kver ($(basename "$kernel")) under TCG, limit ${limit}s"
t_boot=$(date +%s.%N)
timeout --kill-after=10 "$limit" qemu-system-x86_64 \
	-accel tcg -M pc -cpu max -smp "${MERCURY_VM_SMP:-2}" -m "${MERCURY_VM_MEM:-2G}" \
	-kernel "$kernel" -initrd "$work/initramfs.cpio.gz" -append "$append" \
	-display none -monitor none -nic none -no-reboot \
	-serial "file:$work/console.log" -serial "file:$work/results.log" </dev/null
qrc=$?
t_vm=$(awk -v a="$t_boot" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
sleep 0.3
kill "$tail_pid" 2>/dev/null
wait "$tail_pid" 2>/dev/null
tail_pid=

res=$(tr -d '\r' <"$work/results.log")
problems=()
[ "$qrc" -eq 124 ] || [ "$qrc" -eq 137 ] && problems+=("hung: QEMU killed after ${limit}s")
[ "$qrc" -ne 0 ] && [ "$qrc" -ne 124 ] && [ "$qrc" -ne 137 ] && problems+=("qemu exited $qrc")
grep -q 'Kernel panic' "$work/console.log" && problems+=("guest panicked: $(grep -m1 'Kernel panic' "$work/console.log" | tr -d '\r')")
grep -qE '^MERCURY-DONE ' <<<"$res" || problems+=("guest never reported MERCURY-DONE")
grep -qE '^MERCURY-BOOTED ' <<<"$res" || problems+=("guest init never started")

# Summary: one row per test, one column per backend ("-" = backend-independent).
cols=(- mqprio prio ets htb tbf)
echo
echo "== VM matrix: $kver under QEMU TCG"
awk -v cols="${cols[*]}" '
	BEGIN { n = split(cols, c, " ") }
	/^MERCURY-RESULT / { r[$3 SUBSEP $2] = $4; if (!($3 in seen)) { seen[$3] = 1; order[++m] = $3 }
		cnt[$4]++ }
	END {
		printf "%-32s", "test"; for (i = 1; i <= n; i++) printf " %-7s", c[i]; printf "\n"
		for (j = 1; j <= m; j++) {
			printf "%-32s", order[j]
			for (i = 1; i <= n; i++) { k = order[j] SUBSEP c[i]; printf " %-7s", (k in r) ? r[k] : "." }
			printf "\n"
		}
		printf "%d passed, %d failed, %d skipped\n", cnt["PASS"], cnt["FAIL"], cnt["SKIP"]
	}' <<<"$res"
booted=$(awk '/^MERCURY-BOOTED / { print $2 }' <<<"$res")
echo "boot to init: ${booted:-?} s guest uptime; VM wall ${t_vm} s; initramfs build ${t_built} s; total $(elapsed) s"

nfail=$(awk '/^MERCURY-DONE / { print $2 }' <<<"$res")
[ "${nfail:-0}" -eq 0 ] || problems+=("$nfail guest test(s) failed: $(awk '$1 == "MERCURY-RESULT" && $4 == "FAIL" { printf "%s[%s] ", $3, $2 }' <<<"$res")")
if [ ${#problems[@]} -gt 0 ]; then
	printf 'test-vm: FAIL: %s\n' "${problems[@]}" >&2
	MERCURY_VM_KEEP=1
	exit 1
fi
echo "test-vm: PASS"
