#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Two TCP flows through a 200 Mbit bottleneck at the sender's veth egress, one tagged high:
# while both run the high one must get >= 90 % of the bottleneck; with the tags swapped the
# other one must. Backends: $MERCURY_TEST_QDISC (default "htb htb:15 tbf", the ones this
# kernel has); "htb:15" is htb with 15 bands, a second htb nested under one leaf: its rounds
# pit the nested tree's last band against the root's next (7 vs 8) and the first band
# against the last (0 vs 14).
# prio, ets and mqprio are work-conserving roots: on a veth nothing queues at them, so there
# is no contention to win; for them the test checks the steering (bands, TX queues) only.
. "$(dirname "$0")/lib.sh"

SECS=${SECS:-8}
backends=${MERCURY_TEST_QDISC:-htb htb:15 tbf}
tmp=$(mktemp -d)
trap 'cleanup; rm -rf "$tmp"' EXIT

run_backend() {
	local name=$1 b=${1%%:*} txq=1 bands=() low high_mbit low_mbit hi lo hb lb
	[ "$b" = mqprio ] && txq=4
	[[ $name == *:* ]] && bands=(--bands "${name#*:}")
	setup_pair "$txq" || { fail "$name: namespace setup"; return; }
	if ! mercuryd_s attach va --qdisc "$b" "${bands[@]}" --rate "${RATE_MBIT}mbit" \
		>"$tmp/attach" 2>&1; then
		fail "$name: attach: $(cat "$tmp/attach")"
		cleanup
		return
	fi
	low=$(($(mercuryd_s -j status va | jq '.interfaces[0].bands') - 1))
	for round in 1 2; do
		# high band, low band per round
		if [ "$name" = htb:15 ]; then
			if [ "$round" = 1 ]; then hb=7 lb=8; else hb=0 lb=14; fi
		else
			hb=0 lb=$low
		fi
		if [ "$round" = 1 ]; then hi=1 lo=2; else hi=2 lo=1; fi
		start_two_flows "$SECS" "$tmp/$b.$round"
		tag_flow $((40000 + hi)) "$hb" || fail "$name round $round: tag high flow"
		tag_flow $((40000 + lo)) "$lb" || fail "$name round $round: tag low flow"
		wait_flows
		# Delivered, per the receiver, while both senders run: after the tags (from 2 s) and
		# before the end, when the starved flow's buffer drains through the freed link.
		high_mbit=$(mean_mbit "$tmp/$b.$round.$hi.rx" 2 $((SECS - 1)))
		low_mbit=$(mean_mbit "$tmp/$b.$round.$lo.rx" 2 $((SECS - 1)))
		printf '%s round %d: high (port %d, band %d) %.1f Mbit/s, low (port %d, band %d) %.1f Mbit/s\n' \
			"$name" "$round" $((40000 + hi)) "$hb" "$high_mbit" $((40000 + lo)) "$lb" "$low_mbit"
		if [ "$b" = htb ] || [ "$b" = tbf ]; then
			check "$name round $round: high flow >= ${WIN_SHARE} of ${RATE_MBIT} Mbit" \
				ge "$high_mbit" "$(echo "$RATE_MBIT * $WIN_SHARE" | bc -l)"
			check "$name round $round: low flow <= 1 - ${WIN_SHARE} while both run" \
				ge "$(echo "$RATE_MBIT * (1 - $WIN_SHARE)" | bc -l)" "$low_mbit"
		fi
	done
	mercuryd_s -j status va >"$tmp/status"
	check "$name: tagged packets went to band $hb" \
		test "$(jq ".interfaces[0].per_band[$hb].packets" "$tmp/status")" -gt 1000
	check "$name: low flow's packets went to band $lb" \
		test "$(jq ".interfaces[0].per_band[$lb].packets" "$tmp/status")" -gt 100
	if [ "$b" = mqprio ]; then
		busy=$(in_s tc -s -j qdisc show dev va | jq '[.[] | select(.parent != null and (.parent | startswith("4d45:"))) | select(.bytes > 100000)] | length')
		check "$b: traffic spread over >= 2 TX queues by band ($busy)" test "${busy:-0}" -ge 2
	fi
	check "$name: no malformed packets" \
		test "$(jq '.interfaces[0].outcomes.malformed.packets' "$tmp/status")" -eq 0
	check "$name: detach" mercuryd_s detach va
	cleanup
}

for b in $backends; do run_backend "$b"; done
finish
