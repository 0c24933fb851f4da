#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Guest test runner (called by guest-init): the smoke tests of tests/vm/guest-smoke.sh, the
# kernel tests (build/tests/test_* built from tests/kernel/), then every
# tests/integration/test_*.sh. A script that mentions MERCURY_TEST_QDISC runs once per backend
# with MERCURY_TEST_QDISC=<backend>; others run once (backend "-"). Exit 77 = SKIP.
# Each result goes to $MERCURY_VM_RESULTS as "MERCURY-RESULT <backend> <test> <status> <secs>",
# the last line is "MERCURY-DONE <failed> <passed> <skipped>".
# Kernel command line knobs (passed as env): MERCURY_VM_BACKENDS=mqprio,prio,...,
# MERCURY_VM_ONLY=<regex on "backend/test">, MERCURY_VM_TEST_TIMEOUT=<s per test>.
set -u
cd "${MERCURY_ROOT:-/mercury}" || exit 1
results=${MERCURY_VM_RESULTS:-/dev/console}
IFS=, read -r -a backends <<<"${MERCURY_VM_BACKENDS:-mqprio,prio,ets,htb,tbf}"
only=${MERCURY_VM_ONLY:-}
per_test=${MERCURY_VM_TEST_TIMEOUT:-240}
smoke=tests/vm/guest-smoke.sh
npass=0 nfail=0 nskip=0

report() { # backend test status secs
	local line="MERCURY-RESULT $1 $2 $3 $4"
	echo "$line" >>"$results"
	[ "$results" = /dev/console ] || echo "$line"
}

run_test() { # backend test command...
	local backend=$1 name=$2 rc t0 t1 status
	shift 2
	[ -n "$only" ] && ! [[ "$backend/$name" =~ $only ]] && return 0
	echo "=== [$backend] $name: $*"
	read -r t0 _ </proc/uptime
	MERCURY_TEST_QDISC=${backend#-} timeout --kill-after=10 "$per_test" "$@" </dev/null 2>&1 |
		sed -u 's/^/  | /'
	rc=${PIPESTATUS[0]}
	read -r t1 _ </proc/uptime
	case $rc in
	0) status=PASS; npass=$((npass + 1)) ;;
	77) status=SKIP; nskip=$((nskip + 1)) ;;
	124 | 137) status=FAIL; nfail=$((nfail + 1)); echo "  | timed out after ${per_test}s" ;;
	*) status=FAIL; nfail=$((nfail + 1)) ;;
	esac
	report "$backend" "$name" "$status" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')"
}

run_test - smoke/modules bash $smoke modules
for b in "${backends[@]}"; do run_test "$b" smoke/qdisc bash $smoke qdisc "$b"; done
[[ " ${backends[*]} " == *" mqprio "* ]] && run_test mqprio smoke/mqprio-steer bash $smoke mqprio-steer
for obj in noop.bpf.o classifier.bpf.o; do
	run_test - "smoke/bpf-clsact-${obj%.bpf.o}" bash $smoke bpf-clsact "$obj"
done
run_test - smoke/veth-iperf3 bash $smoke veth-iperf3
for b in "${backends[@]}"; do run_test "$b" smoke/mercuryd-attach bash $smoke mercuryd-attach "$b"; done

# Kernel tests (BPF_PROG_TEST_RUN, netlink): the 6.1 verifier and helpers, not the host's.
for t in "${MERCURY_BUILD:-/mercury/build}"/tests/test_*; do
	[ -x "$t" ] && [ -f "tests/kernel/$(basename "$t").c" ] || continue
	run_test - "kernel/$(basename "$t")" "$t"
done

for t in tests/integration/test_*.sh; do
	[ -f "$t" ] || continue
	name=integration/$(basename "$t" .sh)
	# The PS cluster tests measure the parameter server, not the kernel, and need python3.
	if [ "$(basename "$t")" = test_ps_cluster.sh ] ||
		[ "$(basename "$t")" = test_partition_baseline.sh ] ||
		[ "$(basename "$t")" = test_ps_serve.sh ] ||
		[ "$(basename "$t")" = test_ps_local_direct.sh ]; then
		run_test - "$name" sh -c 'echo "host-only: the PS, not the kernel"; exit 77'
	elif grep -q MERCURY_TEST_QDISC "$t"; then
		for b in "${backends[@]}"; do run_test "$b" "$name" bash "$t"; done
	else
		run_test - "$name" bash "$t"
	fi
done

echo "MERCURY-DONE $nfail $npass $nskip" >>"$results"
echo "MERCURY-DONE $nfail $npass $nskip"
