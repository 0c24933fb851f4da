#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# A level rise takes effect within its stated bound whatever the other traffic does (issue 32
# item 1). Two iperf3 flows through `mercuryd attach --qdisc htb --rate 200mbit`: A tagged at
# level 5, B at level 6 (below A: starved at its band's guaranteed rate, its socket's packets
# always queued there, TSQ refilling as each leaves). B's level then rises to 0. The order
# guard holds B in band 6 for at most MERCURY_ORDER_GUARD_US; B's later packets then go to
# band 0, but the receiver delivers them only once B's bytes already queued in band 6 have
# left at that band's guaranteed rate (TCP does not retransmit a segment still in the host
# queue). TCP small queues bound those bytes by net.ipv4.tcp_limit_output_bytes plus one GSO
# packet, so attach states the bound from that sysctl and the band rate (rise_bound_us). The
# test sets the sysctl in its namespace as README advises (LEVEL_RISE_TSQ, 128 KiB) and
# asserts: the stated bound is at most 1 s, and in the second that starts at the bound (at 1 s
# if the bound is longer) B leads: >= 80 % of what the link delivered and >= half the link
# (the share of what was delivered, not of the nominal rate: on a busy 2-core host a single
# flow cannot always fill 200 Mbit/s, and A, strictly below B, takes what B leaves). Bytes
# delivered are ss's bytes_acked, sampled at those instants.
# Linux applies tcp_limit_output_bytes to paced sockets (BBR) from 6.16 on; on older kernels,
# or where ss shows no skmem (the 6.1 guest), B's share is checked over the run's last 3 s,
# and the run is longer there (12 s): what B has queued in band 6 at the rise is bounded by
# nothing but its window, and drains at the band's guaranteed rate first (measured in the 6.1
# guest, 3 runs each: B got the link 1 s after its rise with attach --control default, 2.5-3 s
# after with --control first, which puts B's SYN and handshake ACK in band 0: B then wrote 6-13
# Mbit/s in its first second against 1-2, so more of it was queued at the rise; why BBR on 6.1
# starts faster so is not pinned. On 6.18, where TSQ bounds it, no difference).
. "$(dirname "$0")/lib.sh"
old_kernel() { [ "$(printf '%s\n' "$(uname -r | cut -d- -f1)" 6.16 | sort -V | head -n1)" != 6.16 ]; }
if old_kernel; then SECS=${SECS:-12}; else SECS=${SECS:-9}; fi
RISE_AT=${RISE_AT:-3}
SHARE=${LEVEL_RISE_SHARE:-0.8}
TSQ=${LEVEL_RISE_TSQ:-131072}
tmp=$(mktemp -d)
trap 'cleanup; rm -rf "$tmp"' EXIT

now() { date +%s.%N; }
# bytes_acked of the sender's socket with local port $1
acked() { in_s ss -tni "( sport = :$1 )" | grep -o 'bytes_acked:[0-9]*' | head -1 | cut -d: -f2; }
kv=$(uname -r | awk -F. '{print $1 * 100 + $2}')

setup_pair || { fail "namespace setup"; finish; }
[ "$kv" -ge 616 ] && bounded=1 || bounded=0
check "tcp_limit_output_bytes $TSQ in the sender's namespace" \
	in_s sysctl -qw net.ipv4.tcp_limit_output_bytes="$TSQ"
mercuryd_s -j attach va --qdisc htb --rate "${RATE_MBIT}mbit" >"$tmp/attach" ||
	fail "attach htb at ${RATE_MBIT} Mbit/s"
bound_us=$(jq -r '.rise_bound_us // empty' "$tmp/attach")
echo "attach: each band guaranteed $(jq -r '.band_rate_bps * 8 / 1e6' "$tmp/attach") Mbit/s," \
	"stated rise bound ${bound_us:-?} us"
# The 1 s target needs each band's guarantee above 1 Mbit/s (1 % of the link, so links of 100
# Mbit/s and more): the 6.1 guest runs 50 Mbit/s, where the formula gives 1.6 s; there the
# bound stated must be that value, not more.
if [ "$RATE_MBIT" -ge 100 ]; then
	check "attach states a rise bound of at most 1 s" test "${bound_us:-2000000}" -le 1000000
else
	check "attach states the bound of a ${RATE_MBIT} Mbit/s link (at most 1.7 s)" \
		test "${bound_us:-2000000}" -le 1700000
fi
bound=$(echo "${bound_us:-1000000} / 1000000" | bc -l)

start_two_flows "$SECS" "$tmp/f"
t0=$(now)
tag_flow 40001 5 || fail "tag A (level 5)"
tag_flow 40002 6 || fail "tag B (level 6)"
sleep "$(echo "$RISE_AT - ($(now) - $t0)" | bc -l)"
owner=$(socket_owner 40002)
in_s ss -tmni "( sport = :40002 )" | tr -s ' ' >"$tmp/ss_before"
mercuryd_s -j status va >"$tmp/st_before"
# the rise: B's tags replaced by level 0; it is in place when the second command returns
mercuryd_s tag --pid "${owner% *}" --fd "${owner#* }" --clear >/dev/null &&
	mercuryd_s tag --pid "${owner% *}" --fd "${owner#* }" --offset 0 --len 1000000000000000 \
		--level 0 >/dev/null || fail "raise B to level 0"
t_rise=$(now)
a0=$(acked 40002)
win=$bound
[ "$(echo "$win > 1" | bc -l)" -eq 1 ] && win=1
sleep "$(echo "$win - ($(now) - $t_rise)" | bc -l)"
t1=$(now) a1=$(acked 40002) o1=$(acked 40001)
sleep "$(echo "$win + 1 - ($(now) - $t_rise)" | bc -l)"
t2=$(now) a2=$(acked 40002) o2=$(acked 40001)
wait_flows
mercuryd_s -j status va >"$tmp/st_after"

wq=$(grep -o 'skmem:([^)]*)' "$tmp/ss_before" | grep -o ',t[0-9]*' | head -1 | tr -dc 0-9)
echo "B's bytes below TCP at the rise (skmem t, sk_wmem_alloc): ${wq:-?}"
for f in 1 2; do
	jq -r '[.intervals[] | "\(.sum.start|floor)-\(.sum.end|floor)s \(.sum.bits_per_second/1e6|floor)"] | join(", ")' \
		"$tmp/f.$f.rx" | sed "s/^/flow $f (Mbit\/s): /"
done
mbit() { echo "($3 - $2) * 8 / ($1) / 1000000" | bc -l; }
b_first=$(mbit "$t1 - $t_rise" "${a0:-0}" "${a1:-0}")
b_win=$(mbit "$t2 - $t1" "${a1:-0}" "${a2:-0}")
a_win=$(mbit "$t2 - $t1" "${o1:-0}" "${o2:-0}")
printf 'rise at %.2f s; B delivered %.1f Mbit/s in the first %.2f s after it, then in 1 s: B %.1f Mbit/s, A %.1f Mbit/s\n' \
	"$(echo "$t_rise - $t0" | bc -l)" "$b_first" "$win" "$b_win" "$a_win"
# B's share before the rise: the scenario really starved it
b_pre=$(mean_mbit "$tmp/f.2.rx" 1 "$RISE_AT")
check "B starved before its rise (${b_pre%.*} Mbit/s < 20 % of the link)" \
	ge "$(echo "$RATE_MBIT * 0.2" | bc -l)" "$b_pre"
if [ "$bounded" -eq 1 ] && [ -n "$wq" ]; then
	# the bound's premise, whatever the host's load: TSQ kept B's bytes below TCP within
	# max(tcp_limit_output_bytes + one GSO packet, two packets) (rise_bound.h)
	qmax=$((TSQ + 69632))
	[ "$qmax" -lt 139264 ] && qmax=139264
	check "B's bytes below TCP at the rise ($wq) within the bound's $qmax" test "$wq" -le "$qmax"
	check "B leads in the second from the stated bound after its rise: >= $SHARE of what was delivered" \
		ge "$b_win" "$(echo "($b_win + $a_win) * $SHARE" | bc -l)"
	check "B >= half of ${RATE_MBIT} Mbit/s in that second" ge "$b_win" "$(echo "$RATE_MBIT / 2" | bc -l)"
else
	# tcp_limit_output_bytes does not bind BBR here (before 6.16) or ss shows no skmem:
	# B is held to the link's share over the run's last 3 s
	b_end=$(mean_mbit "$tmp/f.2.rx" $((SECS - 3)) $((SECS - 1)))
	echo "kernel before 6.16 or no skmem: B's share checked over the last 3 s (${b_end} Mbit/s)"
	check "B >= $SHARE of ${RATE_MBIT} Mbit/s over the run's last 3 s" \
		ge "$b_end" "$(echo "$RATE_MBIT * $SHARE" | bc -l)"
fi
kept0=$(jq '.interfaces[0].order_kept.packets' "$tmp/st_before")
kept1=$(jq '.interfaces[0].order_kept.packets' "$tmp/st_after")
rel1=$(jq '.interfaces[0].order_released.packets // 0' "$tmp/st_after")
echo "order_kept packets: $kept0 before the rise, $kept1 after the run; released by the bound: $rel1"
# The guard holds B only if B has packets below TCP at the rise; where ss shows no skmem
# (the 6.1 guest) that is unknown, and with none queued there is nothing to hold: then the
# two are reported, not asserted.
if [ "${wq:-0}" -gt 0 ]; then
	check "the guard held B at its rise (order_kept rose)" test "$kept1" -gt "$kept0"
	check "the guard's bound released B (order_released >= 1)" test "$rel1" -ge 1
fi
echo "B's retransmitted segments: $(jq '.end.sum_sent.retransmits' "$tmp/f.2")"
check "detach" mercuryd_s detach va
finish
