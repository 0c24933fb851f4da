#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# detach leaves the interface exactly as attach found it: qdiscs and filters identical, a
# foreign filter untouched, a foreign root qdisc replaced with --force restored. Also: attach
# is idempotent, refuses conflicts, and the pins carry BTF (bpftool shows field names).
. "$(dirname "$0")/lib.sh"

snap() { in_s tc -j qdisc show dev va; in_s tc -j filter show dev va egress 2>/dev/null; }
same_as() { [ "$(snap)" = "$1" ]; }

setup_pair || { fail "namespace setup"; finish; }

# 1. Default root, TCX hook.
before=$(snap)
hook=$(default_hook)
check "attach htb ($hook)" mercuryd_s attach va --qdisc htb --rate 100mbit
check "hook is $hook" test "$(mercuryd_s -j status va | jq -r '.interfaces[0].hook')" = "$hook"
check "root qdisc is Mercury's htb" test "$(in_s tc -j qdisc show dev va root | jq -r '.[0].kind')" = htb
check "bpftool shows cfg fields by name" sh -c "bpftool map dump pinned '$PIN_ROOT/va/cfg' | grep -q skb_priority"
check "bpftool shows attach_state fields" sh -c "bpftool map dump pinned '$PIN_ROOT/va/attach_state' | grep -q qdisc_handle"
out=$(mercuryd_s attach va --qdisc htb --rate 100mbit 2>&1)
check "second identical attach is a no-op" sh -c "echo \"\$1\" | grep -q 'already attached'" _ "$out"
out=$(mercuryd_s attach va --qdisc htb --bands 4 --rate 100mbit 2>&1)
check "re-attach without --force is refused with a reason" sh -c "echo \"\$1\" | grep -q 'already attached'" _ "$out"
check "re-attach with --force changes the bands" mercuryd_s attach va --qdisc htb --bands 4 --rate 100mbit --force
check "status shows 4 bands" test "$(mercuryd_s -j status va | jq '.interfaces[0].bands')" -eq 4
check "detach" mercuryd_s detach va
check "qdiscs and filters identical after detach ($hook)" same_as "$before"
check "pins removed" test ! -e "$PIN_ROOT"

# 2. A foreign filter on clsact egress; Mercury on clsact too.
in_s tc qdisc add dev va clsact
in_s tc filter add dev va egress prio 100 bpf da obj "$ROOT/build/noop.bpf.o" sec tc
before=$(snap)
check "attach tbf (clsact)" mercuryd_s attach va --qdisc tbf --rate 100mbit --hook clsact
check "hook is clsact" test "$(mercuryd_s -j status va | jq -r '.interfaces[0].hook')" = clsact
check "two egress filters while attached" test "$(in_s tc -j filter show dev va egress | jq '[.[] | select(.options != null)] | length')" -eq 2
check "detach" mercuryd_s detach va
check "foreign filter still there, all identical (clsact)" same_as "$before"
in_s tc qdisc del dev va clsact

# 3. Mercury created clsact itself: detach removes it again.
before=$(snap)
check "attach htb (clsact, created)" mercuryd_s attach va --qdisc htb --rate 100mbit --hook clsact
check "detach" mercuryd_s detach va
check "clsact removed with Mercury's filter" same_as "$before"

# 4. A foreign root qdisc: refused, then replaced with --force and restored by detach.
in_s tc qdisc replace dev va root handle 8001: tbf rate 50mbit burst 32k latency 40ms
before=$(snap)
err=$(mercuryd_s attach va --qdisc htb --rate 100mbit 2>&1)
rc=$?
check "foreign root refused (rc $rc)" test "$rc" -ne 0
check "refusal names the conflict: $err" sh -c "echo \"\$1\" | grep -q \"tbf 8001:\"" _ "$err"
check "refused attach left nothing" same_as "$before"
check "refused attach left no pins" test ! -e "$PIN_ROOT/va"
check "attach --force" mercuryd_s attach va --qdisc htb --rate 100mbit --force
check "detach" mercuryd_s detach va
check "foreign tbf root restored identically" same_as "$before"
in_s tc qdisc del dev va root

# 5. Same interface name in another namespace, same pin root: refused, never a silent no-op.
NS_X=${PFX}x
trap 'cleanup; ip netns del "$NS_X" 2>/dev/null' EXIT
ip netns add "$NS_X" && ip -n "$NS_X" link add va type veth peer name vx && ip -n "$NS_X" link set va up
check "attach in the first namespace" mercuryd_s attach va --qdisc htb --rate 100mbit
err=$(nsenter --net=/var/run/netns/"$NS_X" "$MERCURYD" --pin-root "$PIN_ROOT" attach va --qdisc htb --rate 100mbit 2>&1)
rc=$?
check "attach of the same name from another namespace is refused (rc $rc)" test "$rc" -ne 0
check "refusal names it: $err" sh -c "echo \"\$1\" | grep -q 'another network namespace'" _ "$err"
check "the other namespace's va is untouched" test "$(ip netns exec "$NS_X" tc -j qdisc show dev va | jq -r '.[0].kind')" = noqueue
check "detach from the other namespace is refused" sh -c "! nsenter --net=/var/run/netns/$NS_X '$MERCURYD' --pin-root '$PIN_ROOT' detach va 2>/dev/null"
check "detach in the first namespace" mercuryd_s detach va
ip netns del "$NS_X"
# 6. A pin root whose parents do not exist yet (one per node, say): created, then removed.
deep=$PIN_ROOT/nodes/n0
check "attach with a pin root two levels below nothing" in_s "$MERCURYD" --pin-root "$deep" attach va --qdisc htb --rate 100mbit
check "its pins are there" test -e "$deep/va/attach_state"
check "detach from it" in_s "$MERCURYD" --pin-root "$deep" detach va
check "its interface pins are gone" test ! -e "$deep/va"
rm -rf "$PIN_ROOT/nodes"
finish
