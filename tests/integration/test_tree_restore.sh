#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# attach --force over a foreign qdisc tree, then detach: `tc -d qdisc show`, `tc -d class show`
# and `tc -d filter show` (every parent) are byte-identical to before, for every root kind this
# kernel has and for an operator's htb tree with classes, leaf qdiscs and u32 filters. A tree
# that could not come back exactly is refused before anything changes; a detach killed in the
# middle of the replay is finished by a second detach.
. "$(dirname "$0")/lib.sh"

# The whole egress tree as tc shows it: qdiscs, classes, filters of every qdisc and class.
# htb's direct_packets_stat is a packet counter (IPv6 sends a few packets when a link comes
# up), not a setting: no save can bring a counter back.
snap() {
	local p
	in_s tc -d qdisc show dev va | sed 's/direct_packets_stat [0-9]*/direct_packets_stat N/' 
	in_s tc -d class show dev va
	for p in $(in_s tc -j qdisc show dev va | jq -r '.[] | select(.root == true or (.parent // "" | test("^ffff:") | not)) | .handle') \
		$(in_s tc class show dev va | awk '{print $3}'); do
		in_s tc -d filter show dev va parent "$p"
	done
}
has_qdisc() { # kind: can this kernel make it?
	in_s tc qdisc add dev va root handle 77: "$@" 2>/dev/null || return 1
	in_s tc qdisc del dev va root
}
attach_detach_same() { # label
	local before after err
	before=$(snap)
	err=$(mercuryd_s attach va --qdisc htb --rate 100mbit 2>&1)
	check "$1: refused without --force" sh -c "echo \"\$1\" | grep -q 'did not create'" _ "$err"
	check "$1: attach --force" mercuryd_s attach va --qdisc htb --rate 100mbit --force
	check "$1: Mercury's root in place" test "$(in_s tc -j qdisc show dev va root | jq -r '.[0].handle')" = "4d45:"
	check "$1: detach" mercuryd_s detach va
	after=$(snap)
	check "$1: qdiscs, classes and filters byte-identical after detach" test "$before" = "$after"
	[ "$before" = "$after" ] || diff <(echo "$before") <(echo "$after")
	check "$1: no pins left" test ! -e "$PIN_ROOT/va"
	in_s tc qdisc del dev va root 2>/dev/null
}

setup_pair 4 || { fail "namespace setup"; finish; }

# 1. Each root kind alone (noqueue is the default of a veth: nothing to save, nothing to force).
roots=(
	"htb"
	"htb r2q 5 default 30 direct_qlen 500"
	"tbf rate 50mbit burst 32k latency 40ms"
	"pfifo_fast"
	"pfifo limit 50"
	"bfifo limit 100000"
	"fq_codel limit 2000 target 3ms interval 50ms"
	"fq maxrate 80mbit"
	"prio bands 4 priomap 3 2 1 0 3 2 1 0 3 2 1 0 3 2 1 0"
	"ets bands 4 strict 2 quanta 3000 1500"
	"mqprio num_tc 2 map 0 0 0 0 1 1 1 1 0 0 0 0 0 0 0 0 queues 2@0 2@2 hw 0"
)
for r in "${roots[@]}"; do
	read -r -a args <<<"$r"
	if ! has_qdisc "${args[@]}"; then
		echo "skip: this kernel has no '${args[0]}' qdisc"
		continue
	fi
	in_s tc qdisc add dev va root handle 1: "${args[@]}"
	attach_detach_same "root ${args[0]}"
done
before=$(snap)
check "default root: attach needs no --force" mercuryd_s attach va --qdisc htb --rate 100mbit
check "default root: detach" mercuryd_s detach va
check "default root: identical after detach" test "$before" = "$(snap)"

# 2. An operator's tree: classes, leaf qdiscs, u32 filters on the root and on a class.
operator_tree() {
	in_s tc qdisc add dev va root handle 1: htb default 20
	in_s tc class add dev va parent 1: classid 1:1 htb rate 100mbit
	in_s tc class add dev va parent 1:1 classid 1:10 htb rate 60mbit ceil 100mbit prio 0
	in_s tc class add dev va parent 1:1 classid 1:20 htb rate 40mbit ceil 100mbit prio 1 quantum 3000
	in_s tc qdisc add dev va parent 1:10 handle 10: pfifo limit 100
	in_s tc qdisc add dev va parent 1:20 handle 20: bfifo limit 100000
	in_s tc filter add dev va parent 1: protocol ip prio 1 u32 match ip dport 22 0xffff flowid 1:10
	in_s tc filter add dev va parent 1: protocol ip prio 2 u32 match ip protocol 17 0xff flowid 1:20
	in_s tc filter add dev va parent 1:1 protocol ip prio 3 u32 match ip tos 0x10 0xff flowid 1:10
} 2>/dev/null
operator_tree
check "operator tree built (3 classes, 2 leaves)" test "$(in_s tc class show dev va | wc -l)" -eq 3
attach_detach_same "operator htb tree"

# 3. What cannot come back is refused, naming it, and nothing changes.
in_s tc qdisc add dev va root handle 1: htb default 1
in_s tc class add dev va parent 1: classid 1:1 htb rate 100mbit 2>/dev/null
in_s tc filter add dev va parent 1: prio 5 bpf da obj "$ROOT/build/noop.bpf.o" sec tc
before=$(snap)
err=$(mercuryd_s attach va --qdisc htb --rate 100mbit --force 2>&1)
rc=$?
check "a tree with a cls_bpf filter is refused (rc $rc)" test "$rc" -ne 0
check "the refusal names the filter: $err" sh -c "echo \"\$1\" | grep -q 'filter bpf parent 1:0 pref 5'" _ "$err"
check "refused: the tree is untouched" test "$before" = "$(snap)"
check "refused: no pins" test ! -e "$PIN_ROOT/va"
in_s tc qdisc del dev va root

# A rate estimator: its settings show in no dump.
in_s tc qdisc add dev va root handle 1: estimator 1sec 8sec htb default 1
before=$(snap)
err=$(mercuryd_s attach va --qdisc htb --rate 100mbit --force 2>&1)
check "a qdisc with a rate estimator is refused, naming it: $err" sh -c "echo \"\$1\" | grep -q 'qdisc htb 1: root of va has a rate estimator'" _ "$err"
check "refused: the tree is untouched" test "$before" = "$(snap)"
in_s tc qdisc del dev va root

# u32 instances of one pref on two classes list each other's tables in every dump: refused.
in_s tc qdisc add dev va root handle 1: htb default 1
in_s tc class add dev va parent 1: classid 1:1 htb rate 100mbit 2>/dev/null
in_s tc filter add dev va parent 1: protocol ip prio 1 u32 match ip dport 22 0xffff flowid 1:1
in_s tc filter add dev va parent 1:1 protocol ip prio 1 u32 match ip dport 23 0xffff flowid 1:1
before=$(snap)
err=$(mercuryd_s attach va --qdisc htb --rate 100mbit --force 2>&1)
check "u32 of one pref on two blocks is refused, naming them: $err" sh -c "echo \"\$1\" | grep -Eq 'pref 1 on 1:[01] and 1:[01]'" _ "$err"
check "refused: the tree is untouched" test "$before" = "$(snap)"
in_s tc qdisc del dev va root

# 4. A detach killed half-way through the replay: the second detach finishes it.
operator_tree
before=$(snap)
check "attach --force over the operator tree" mercuryd_s attach va --qdisc htb --rate 100mbit --force
MERCURYD_TEST_KILL_REPLAY_AT=4 mercuryd_s detach va >/dev/null 2>&1
rc=$?
check "the first detach was killed during the replay (rc $rc)" test "$rc" -eq 137
check "... leaving a partial tree" test "$before" != "$(snap)"
check "... and the pins, to finish from" test -e "$PIN_ROOT/va/saved_tree"
health=$(mercuryd_s -j status va | jq -r '.interfaces[0].health')
check "status says the detach is incomplete ($health)" test "$health" = "detach incomplete (run detach again)"
check "second detach" mercuryd_s detach va
check "the tree is whole again, byte-identical" test "$before" = "$(snap)"
check "no pins left" test ! -e "$PIN_ROOT/va"
in_s tc qdisc del dev va root
finish
