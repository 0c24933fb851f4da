#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Bad input: each case gets a one-line error naming the problem, exit status != 0, and
# nothing is left half-attached (qdiscs, filters and pins as before).
. "$(dirname "$0")/lib.sh"

snap() { in_s tc -j qdisc show dev va; in_s tc -j filter show dev va egress 2>/dev/null; ls "$PIN_ROOT/va" 2>/dev/null; }

# expect_error "description" "regex the message must match" command...
expect_error() {
	local what=$1 want=$2 out rc lines before
	shift 2
	before=$(snap)
	out=$("$@" 2>&1 >/dev/null)
	rc=$?
	lines=$(printf '%s\n' "$out" | grep -c .)
	if [ "$rc" -eq 0 ]; then
		fail "$what: exit 0"
	elif [ "$lines" -ne 1 ]; then
		fail "$what: $lines lines of error: $out"
	elif ! printf '%s' "$out" | grep -Eqi -e "$want"; then
		fail "$what: message '$out' lacks /$want/"
	elif [ "$(snap)" != "$before" ]; then
		fail "$what: state changed"
	else
		pass "$what ($out)"
	fi
}

setup_pair || { fail "namespace setup"; finish; }

expect_error "unknown interface" "no interface 'nope0'" mercuryd_s attach nope0 --qdisc htb --rate 1gbit
expect_error "unknown qdisc name" "unknown qdisc 'fq'" mercuryd_s attach va --qdisc fq
expect_error "bad rate" "--rate 'fast'" mercuryd_s attach va --qdisc htb --rate fast
expect_error "too many bands" "--bands '99'" mercuryd_s attach va --qdisc htb --bands 99 --rate 1gbit
expect_error "default band out of range" "not below --bands" mercuryd_s attach va --qdisc htb --bands 4 --default-band 4 --rate 1gbit
expect_error "unknown option" "unknown option '--frob'" mercuryd_s attach va --frob
expect_error "missing interface" "needs an interface" mercuryd_s attach --qdisc htb
expect_error "htb without a rate" "rate" mercuryd_s attach va --qdisc htb
# Backends this kernel lacks (here: prio, ets; the 6.1 matrix has them): probe with tc.
for q in "prio" "ets bands 2"; do
	if in_s tc qdisc add dev va root handle 7: $q >/dev/null 2>&1; then
		in_s tc qdisc del dev va root
		echo "note: this kernel has ${q%% *}; skipping its 'not available' case"
		continue
	fi
	expect_error "backend ${q%% *} missing in this kernel" "not available" mercuryd_s attach va --qdisc "${q%% *}"
done
expect_error "mqprio on a single-queue device" "queue" mercuryd_s attach va --qdisc mqprio
mkdir -p /tmp/$PFX-nobpffs
expect_error "pin root not on bpffs" "not on a bpffs mount" in_s "$MERCURYD" --pin-root /tmp/$PFX-nobpffs/mercury attach va --qdisc htb --rate 1gbit
expect_error "not root" "root" in_s setpriv --reuid=65534 --regid=65534 --clear-groups "$MERCURYD" --pin-root "$PIN_ROOT" attach va --qdisc htb --rate 1gbit
in_s tc qdisc replace dev va root handle 8001: tbf rate 50mbit burst 32k latency 40ms
expect_error "conflicting root qdisc" "tbf 8001:.*--force" mercuryd_s attach va --qdisc htb --rate 1gbit
in_s tc qdisc del dev va root
# A shared map of another layout pinned where mercuryd's belongs (say, an older mercuryd's):
# attach refuses before it touches anything, naming both layouts and this layout version.
mkdir -p "$PIN_ROOT"
bpftool map create "$PIN_ROOT/jobs" type hash key 4 value 4 entries 1 name jobs ||
	fail "pin a foreign jobs map"
expect_error "shared map of another layout pinned" "jobs has another layout.*layout version [0-9]+" \
	mercuryd_s attach va --qdisc htb --rate 1gbit
rm -f "$PIN_ROOT/jobs"
rmdir "$PIN_ROOT" 2>/dev/null
expect_error "detach of an interface never attached" "not attached" mercuryd_s detach va
expect_error "detach without interface" "exactly one interface" mercuryd_s detach
expect_error "unknown command" "unknown command 'frob'" "$MERCURYD" frob

# tag needs an attached interface first, then a live process, fd and TCP socket.
expect_error "tag before any attach" "no interface is attached" mercuryd_s tag --pid $$ --fd 0 --next 10 --level 0
mercuryd_s attach va --qdisc htb --rate 1gbit >/dev/null || fail "attach for the tag cases"
expect_error "tag: no such process" "no process 999999999|--pid" mercuryd_s tag --pid 999999999 --fd 3 --next 10 --level 0
expect_error "tag: no such fd" "has no fd 987" mercuryd_s tag --pid $$ --fd 987 --next 10 --level 0
expect_error "tag: not a socket" "not a TCP socket" mercuryd_s tag --pid $$ --fd 0 --next 10 --level 0
exec 9<>/dev/udp/127.0.0.1/9 2>/dev/null && {
	expect_error "tag: UDP socket" "not a TCP socket" mercuryd_s tag --pid $$ --fd 9 --next 10 --level 0
	exec 9>&-
}
expect_error "tag: level out of range" "--level '16'" mercuryd_s tag --pid $$ --fd 0 --next 10 --level 16
expect_error "tag: neither --next nor --offset" "either --next" mercuryd_s tag --pid $$ --fd 0 --level 1
# A socket path that cannot be served: refused before the shared maps are pinned.
expect_error "serve: socket directory cannot be made" "cannot create /proc/nope" \
	in_s "$MERCURYD" --pin-root "$PIN_ROOT-serve" serve --socket /proc/nope/x.sock
check "serve refused: no pins made" test ! -e "$PIN_ROOT-serve"
rm -rf "$PIN_ROOT-serve"
mercuryd_s detach va >/dev/null || fail "final detach"
rmdir /tmp/$PFX-nobpffs
check "no pins left" test ! -e "$PIN_ROOT"
finish
