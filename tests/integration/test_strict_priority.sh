#!/usr/bin/env bash
# Two TCP flows through a 200 Mbit bottleneck at the sender's veth egress, one tagged high:
# while both run the high one must get >= 90 % of the bottleneck; with the tags swapped the
# other one must. Backends: $MERCURY_TEST_QDISC (default "htb tbf", the ones this kernel has).
# prio, ets and mqprio are work-conserving roots: on a veth nothing queues at them, so there
# is no contention to win; for them the test checks the steering (bands, TX queues) only.
. "$(dirname "$0")/lib.sh"

SECS=${SECS:-8}
backends=${MERCURY_TEST_QDISC:-htb tbf}
tmp=$(mktemp -d)
trap 'cleanup; rm -rf "$tmp"' EXIT

run_backend() {
	local b=$1 txq=1 low high_mbit low_mbit hi lo
	[ "$b" = mqprio ] && txq=4
	setup_pair "$txq" || { fail "$b: namespace setup"; return; }
	if ! mercuryd_s attach va --qdisc "$b" --rate "${RATE_MBIT}mbit" >"$tmp/attach" 2>&1; then
		fail "$b: attach: $(cat "$tmp/attach")"
		cleanup
		return
	fi
	low=$(($(mercuryd_s -j status va | jq '.interfaces[0].bands') - 1))
	for round in 1 2; do
		if [ "$round" = 1 ]; then hi=1 lo=2; else hi=2 lo=1; fi
		start_two_flows "$SECS" "$tmp/$b.$round"
		tag_flow $((40000 + hi)) 0 || fail "$b round $round: tag high flow"
		tag_flow $((40000 + lo)) "$low" || fail "$b round $round: tag low flow"
		wait_flows
		high_mbit=$(mean_mbit "$tmp/$b.$round.$hi" 2)
		low_mbit=$(mean_mbit "$tmp/$b.$round.$lo" 2)
		printf '%s round %d: high (port %d) %.1f Mbit/s, low (port %d) %.1f Mbit/s\n' \
			"$b" "$round" $((40000 + hi)) "$high_mbit" $((40000 + lo)) "$low_mbit"
		if [ "$b" = htb ] || [ "$b" = tbf ]; then
			check "$b round $round: high flow >= ${WIN_SHARE} of ${RATE_MBIT} Mbit" \
				ge "$high_mbit" "$(echo "$RATE_MBIT * $WIN_SHARE" | bc -l)"
			check "$b round $round: low flow <= 1 - ${WIN_SHARE} while both run" \
				ge "$(echo "$RATE_MBIT * (1 - $WIN_SHARE)" | bc -l)" "$low_mbit"
		fi
	done
	mercuryd_s -j status va >"$tmp/status"
	check "$b: tagged packets went to band 0" \
		test "$(jq '.interfaces[0].per_band[0].packets' "$tmp/status")" -gt 1000
	check "$b: low flow's packets went to band $low" \
		test "$(jq ".interfaces[0].per_band[$low].packets" "$tmp/status")" -gt 100
	if [ "$b" = mqprio ]; then
		busy=$(in_s tc -s -j qdisc show dev va | jq '[.[] | select(.parent != null and (.parent | startswith("4d45:"))) | select(.bytes > 100000)] | length')
		check "$b: traffic spread over >= 2 TX queues by band ($busy)" test "${busy:-0}" -ge 2
	fi
	check "$b: no malformed packets" \
		test "$(jq '.interfaces[0].outcomes.malformed.packets' "$tmp/status")" -eq 0
	check "$b: detach" mercuryd_s detach va
	cleanup
}

for b in $backends; do run_backend "$b"; done
finish
