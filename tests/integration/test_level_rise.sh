#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# A level rise takes effect within a bounded time whatever the other traffic does (issue 32
# item 1). Two iperf3 flows through `mercuryd attach --qdisc htb --rate 200mbit`: A tagged at
# level 5, B at level 6 (below A: starved at its leaf's guaranteed 1 Mbit/s, its socket's
# packets always queued there, TSQ refilling as each leaves). B's level then rises to 0.
# Without the order guard's time bound B stayed in band 6 for as long as A ran. With it, B's
# new packets go to band 0 after MERCURY_ORDER_GUARD_US, but TSQ lets B's socket send only
# as its packets already in band 6 drain (at the leaf's 1 Mbit/s; TCP does not retransmit a
# segment still in the host queue), so the rise takes effect after the guard's bound plus
# the drain of the bytes B had below TCP at the rise (measured here: ss's skmem t). The test
# asserts B >= 80 % of the link from 1 s after that point, and prints B's share in the
# second after the rise (the issue's 1 s target, which needs a larger guaranteed rate per
# band: see README, "Order guard").
. "$(dirname "$0")/lib.sh"
SECS=${SECS:-13}
RISE_AT=${RISE_AT:-3}
SHARE=${LEVEL_RISE_SHARE:-0.8}
tmp=$(mktemp -d)
trap 'cleanup; rm -rf "$tmp"' EXIT

setup_pair || { fail "namespace setup"; finish; }
check "attach htb at ${RATE_MBIT} Mbit/s" mercuryd_s attach va --qdisc htb --rate "${RATE_MBIT}mbit"
start_two_flows "$SECS" "$tmp/f"
t0=$(date +%s.%N)
tag_flow 40001 5 || fail "tag A (level 5)"
tag_flow 40002 6 || fail "tag B (level 6)"
sleep "$(echo "$RISE_AT - ($(date +%s.%N) - $t0)" | bc -l)"
owner=$(socket_owner 40002)
in_s ss -tmni "( sport = :40002 )" | tr -s ' ' >"$tmp/ss_before"
mercuryd_s -j status va >"$tmp/st_before"
t_rise=$(echo "$(date +%s.%N) - $t0" | bc -l)
# the rise: B's tags replaced by level 0
mercuryd_s tag --pid "${owner% *}" --fd "${owner#* }" --clear >/dev/null &&
	mercuryd_s tag --pid "${owner% *}" --fd "${owner#* }" --offset 0 --len 1000000000000000 \
		--level 0 >/dev/null || fail "raise B to level 0"
wait_flows
mercuryd_s -j status va >"$tmp/st_after"

wq=$(grep -o 'skmem:([^)]*)' "$tmp/ss_before" | grep -o 'wmem_alloc[0-9]*\|,t[0-9]*' | head -1 | tr -dc 0-9)
echo "B's bytes below TCP at the rise (skmem t, sk_wmem_alloc): ${wq:-?}"
echo "  drain time at the starved leaf's 1 Mbit/s: $(echo "${wq:-0} * 8 / 1000000" | bc -l | cut -c1-5) s"
for f in 1 2; do
	jq -r '[.intervals[] | "\(.sum.start|floor)-\(.sum.end|floor)s \(.sum.bits_per_second/1e6|floor)"] | join(", ")' \
		"$tmp/f.$f.rx" | sed "s/^/flow $f (Mbit\/s): /"
done
# iperf3's intervals start when its client connects, about 0.5 s before t0
drain=$(echo "${wq:-0} * 8 / 1000000" | bc -l)
from=$(echo "$t_rise + 0.5 + $drain + 1" | bc -l)
if [ -z "$wq" ]; then
	# ss shows no skmem here (the 6.1 guest): the drain is unknown, so B is held to the
	# link's share over the run's last 3 s (the unbounded guard kept it at 1 Mbit/s to the end)
	echo "bytes below TCP unknown: B's share checked over the last 3 s"
	from=$((SECS - 3))
elif [ "$(echo "$from > $SECS - 3" | bc -l)" -eq 1 ]; then
	fail "B had ${wq:-?} bytes below TCP: their drain does not fit the run (SECS=$SECS)"
	from=$((SECS - 3))
fi
b_mbit=$(mean_mbit "$tmp/f.2.rx" "$from" $((SECS - 1)))
a_mbit=$(mean_mbit "$tmp/f.1.rx" "$from" $((SECS - 1)))
b_1s=$(mean_mbit "$tmp/f.2.rx" "$(echo "$t_rise + 1.5" | bc -l)" "$(echo "$t_rise + 3.5" | bc -l)")
printf 'rise at %.2f s; B in the 2 s from 1 s after it: %.1f Mbit/s\n' "$t_rise" "$b_1s"
printf 'from %.2f s on (rise + drain %.2f s + 1 s): B %.1f Mbit/s, A %.1f Mbit/s\n' "$from" \
	"$drain" "$b_mbit" "$a_mbit"
check "B >= $SHARE of ${RATE_MBIT} Mbit/s from 1 s after its rise and drain" \
	ge "$b_mbit" "$(echo "$RATE_MBIT * $SHARE" | bc -l)"
kept0=$(jq '.interfaces[0].order_kept.packets' "$tmp/st_before")
kept1=$(jq '.interfaces[0].order_kept.packets' "$tmp/st_after")
rel1=$(jq '.interfaces[0].order_released.packets // 0' "$tmp/st_after")
echo "order_kept packets: $kept0 before the rise, $kept1 after the run; released by the bound: $rel1"
check "the guard held B at its rise (order_kept rose)" test "$kept1" -gt "$kept0"
check "the guard's bound released B (order_released >= 1)" test "$rel1" -ge 1
check "detach" mercuryd_s detach va
finish
