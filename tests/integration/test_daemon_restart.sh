#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# kill -9 of mercuryd during traffic: the pinned data path keeps classifying (flows go on,
# the classifier drops nothing), and a restarted daemon reports the same state.
. "$(dirname "$0")/lib.sh"

tmp=$(mktemp -d)
trap 'cleanup; rm -rf "$tmp"' EXIT
config() { mercuryd_s -j status va | jq -S '.interfaces[0] | del(.per_band, .outcomes)'; }
total_packets() { mercuryd_s -j status va | jq '[.interfaces[0].outcomes[].packets] | add'; }
# "outcome-sum band-sum" of one status snapshot: the classifier counts a packet's outcome and
# its band in two per-CPU maps, so they agree only once no packet is between the two updates.
outcome_and_band_packets() {
	mercuryd_s -j status va | jq -r '.interfaces[0] | "\([.outcomes[].packets] | add) \([.per_band[].packets] | add)"'
}
sock_dir=$tmp/run

setup_pair || { fail "namespace setup"; finish; }
check "attach" mercuryd_s attach va --qdisc htb --rate "${RATE_MBIT}mbit"
# nsenter execs mercuryd, so $! is the daemon itself (not a subshell)
nsenter --net=/var/run/netns/"$NS_S" "$MERCURYD" --pin-root "$PIN_ROOT" serve --socket "$sock_dir/mercuryd.sock" >"$tmp/serve.log" 2>&1 &
daemon=$!
PIDS+=($daemon)
for i in $(seq 1 50); do [ -S "$sock_dir/mercuryd.sock" ] && break; sleep 0.1; done
check "service is up" test -S "$sock_dir/mercuryd.sock"
before=$(config)

start_two_flows 6 "$tmp/flow"
tag_flow 40001 0 || fail "tag flow 1"
sleep 2
p1=$(total_packets)
kill -9 "$daemon"
wait "$daemon" 2>/dev/null
check "daemon is gone" sh -c "! kill -0 $daemon 2>/dev/null"
check "it was mercuryd that died" grep -q "serving events" "$tmp/serve.log"
sleep 2
p2=$(total_packets)
check "classifier keeps counting after the daemon died ($p1 -> $p2)" test "$p2" -gt "$p1"
wait_flows
for i in 1 2; do
	check "flow $i ran to its end without error" sh -c "jq -e '.error == null and (.intervals | length) >= 5' '$tmp/flow.$i' >/dev/null"
done
after_kill=$(jq '[.intervals[] | select(.sum.start >= 3) | .sum.bits_per_second] | min' "$tmp/flow.1")
check "tagged flow never stalled after the kill (min interval $after_kill bit/s)" ge "${after_kill:-0}" 1
both=$(echo "$(mean_mbit "$tmp/flow.1" 3) + $(mean_mbit "$tmp/flow.2" 3)" | bc -l)
check "the link stayed busy after the kill ($both Mbit/s)" ge "$both" "$(echo "$RATE_MBIT * $WIN_SHARE" | bc -l)"
check "flow 1 (tagged) kept priority after the kill" \
	ge "$(mean_mbit "$tmp/flow.1" 3)" "$(echo "$RATE_MBIT * $WIN_SHARE" | bc -l)"
for _ in $(seq 1 20); do
	read -r outcomes bands < <(outcome_and_band_packets)
	[ "$outcomes" = "$bands" ] && break
	sleep 0.2
done
check "every classified packet was counted in a band, none dropped ($outcomes outcomes, $bands in bands)" \
	test "${outcomes:-0}" -gt 0 -a "$outcomes" = "$bands"
drops=$(in_s tc -s -j filter show dev va egress 2>/dev/null | jq '[.. | .drops? // empty] | add // 0')
check "no drops by the classifier ($drops)" test "$drops" -eq 0

nsenter --net=/var/run/netns/"$NS_S" "$MERCURYD" --pin-root "$PIN_ROOT" serve --socket "$sock_dir/mercuryd.sock" >"$tmp/serve2.log" 2>&1 &
daemon=$!
PIDS+=($daemon)
sleep 1
check "restarted service is up over the stale socket file" kill -0 "$daemon"
check "restarted daemon reports the same state" test "$(config)" = "$before"
kill -TERM "$daemon"
wait "$daemon"
rc=$?
check "SIGTERM exits cleanly (rc $rc)" test "$rc" -eq 0
check "the service removed its socket" test ! -e "$sock_dir/mercuryd.sock"
check "data path stays attached after the service stops" test "$(config)" = "$before"
check "detach" mercuryd_s detach va
finish
