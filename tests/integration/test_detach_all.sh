#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# mercuryd detach --all (what the Debian package's removal runs): every interface attached
# under the pin root is detached (a replaced root qdisc put back), the tag fast path and the
# shared pins go, the pin root itself is removed; with nothing attached it is success.
. "$(dirname "$0")/lib.sh"

quiet() { "$@" >/dev/null; }
# The fast path goes on a cgroup of this test's own: at the hierarchy's root it would answer
# the tag calls of every other process on the machine (other tests' too) while attached.
cg_root=$(cgroup2_mount)
cg=${cg_root:+$cg_root/${PFX}da}
cleanup_cgroup() {
	cleanup
	[ -n "$cg" ] && [ -d "$cg" ] && rmdir "$cg" 2>/dev/null
}
trap cleanup_cgroup EXIT INT TERM

setup_pair || { fail "namespace setup"; finish; }
ip link add vc netns "$NS_S" type veth peer name vd netns "$NS_R" && in_s ip link set vc up &&
	in_r ip link set vd up || fail "a second device"
# vc has a root qdisc of its own (tbf): detach must put it back.
in_s tc qdisc replace dev vc root tbf rate 100mbit burst 32kb latency 50ms || fail "tbf on vc"
before_va=$(in_s tc -j qdisc show dev va root | jq -c '[.[] | .kind]')

check "attach va (htb)" quiet mercuryd_s attach va --qdisc htb --rate ${RATE_MBIT}mbit
# -q: the replaced-qdisc and rise-bound warnings are not printed, the result still is
errf=$(mktemp)
out=$(in_s "$MERCURYD" -q --pin-root "$PIN_ROOT" attach vc --qdisc htb --rate 100mbit --force 2>"$errf")
check "attach vc over its tbf (--force)" test $? -eq 0
errs=$(head -c 300 "$errf")
rm -f "$errf"
check "-q: no warning on stderr ($errs)" test -z "$errs"
check "-q: the result still on stdout ($out)" sh -c "echo \"\$1\" | grep -q '^attached vc'" _ "$out"
fp_id=
[ -n "$cg" ] && mkdir -p "$cg" && mercuryd_s fastpath attach --cgroup "$cg" >/dev/null 2>&1 && fp_id=$(mercuryd_s -j status | jq -r '.fastpath.prog_id // empty')
check "two interfaces attached" test "$(mercuryd_s -j status | jq '.interfaces | length')" -eq 2

out=$(mercuryd_s detach --all -j)
echo "detach --all -j: $out"
check "detach --all: one JSON document, both detached" \
	quiet jq -e '[.interfaces[].result] == ["detached", "detached"] and .pin_root_removed' <<<"$out"
check "va's root qdisc is what it was ($before_va)" test "$(in_s tc -j qdisc show dev va root | jq -c '[.[] | .kind]')" = "$before_va"
check "vc's tbf is back" sh -c "nsenter --net=/var/run/netns/$NS_S tc qdisc show dev vc root | grep -q '^qdisc tbf'"
check "no Mercury filter left on va" test -z "$(in_s tc filter show dev va egress 2>/dev/null)"
check "the pin root is gone ($PIN_ROOT)" test ! -e "$PIN_ROOT"
if [ -n "$fp_id" ]; then
	check "the tag fast path (program $fp_id) went with it" sh -c "! bpftool prog show id $fp_id >/dev/null 2>&1"
else
	echo "note: no tag fast path here (mercuryd fastpath attach failed); not checked"
fi

check "detach --all with nothing attached: success" mercuryd_s detach --all
check "... and -j says so" sh -c "'$MERCURYD' --pin-root '$PIN_ROOT' -j detach --all | jq -e '.interfaces == []' >/dev/null"
out=$(mercuryd_s detach --all va 2>&1)
rc=$?
check "detach --all with an interface too: usage error, exit 2 ($out)" test "$rc" -eq 2
finish
