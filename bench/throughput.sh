#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Throughput cost of Mercury: maximum TCP throughput over a veth pair with no rate limit,
# alternating within one run between (a) nothing attached (noqueue), (b) the same htb tree
# mercuryd builds (100 Gbit, never the bottleneck) made with tc, without the classifier, and
# (c) full `mercuryd attach --qdisc htb` (tree + classifier on TCX). c/a is Mercury's whole
# cost on this kernel (which has no mqprio/prio/ets), c/b the classifier's share of it.
# Median of ROUNDS runs of SECS seconds each. `-j`: JSON.
set -uo pipefail
ROUNDS=${ROUNDS:-5}
SECS=${SECS:-3}
json=0
[ "${1:-}" = -j ] && json=1
# reno: bbr retransmits heavily on an unshaped veth, which would blur a 2 % comparison.
TCP_CC=${TCP_CC:-reno}
. "$(dirname "$0")/../tests/integration/lib.sh"
tmp=$(mktemp -d)
trap 'cleanup; rm -rf "$tmp"' EXIT

setup_pair >/dev/null || { echo "namespace setup failed" >&2; exit 1; }
nsenter --net=/var/run/netns/"$NS_R" iperf3 -s -p 5301 >/dev/null 2>&1 &
PIDS+=($!)
sleep 0.5

run_flow() { # -> Gbit/s
	in_s iperf3 -c 10.77.0.2 -p 5301 -t "$SECS" -J 2>/dev/null |
		jq '.end.sum_received.bits_per_second / 1e9'
}
mode_none() { :; }
mode_tree_on() { # mercuryd's htb shape (daemon/tc/qdisc_htb.c), built by hand
	local b
	in_s tc qdisc add dev va root handle 4d45: htb default 17
	in_s tc class add dev va parent 4d45: classid 4d45:1 htb rate 100gbit ceil 100gbit \
		burst 12500000 cburst 12500000 quantum 60000
	for b in 0 1 2 3 4 5 6 7; do
		in_s tc class add dev va parent 4d45:1 classid 4d45:1$b htb rate 1mbit ceil 100gbit \
			burst 65536 cburst 12500000 prio $b quantum 60000
		in_s tc qdisc add dev va parent 4d45:1$b pfifo limit 1000
	done
}
mode_tree_off() { in_s tc qdisc del dev va root; }
mode_attach_on() { mercuryd_s attach va --qdisc htb --rate 100gbit >/dev/null; }
mode_attach_off() { mercuryd_s detach va >/dev/null; }

declare -A res
for r in $(seq 1 "$ROUNDS"); do
	res[none]+="$(run_flow) "
	mode_tree_on
	res[classifier]+="$(run_flow) "
	mode_tree_off
	mode_attach_on
	res[attached]+="$(run_flow) "
	mode_attach_off
done
median() { printf '%s\n' $1 | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
m_none=$(median "${res[none]}")
m_cls=$(median "${res[classifier]}")
m_att=$(median "${res[attached]}")
r_cls=$(echo "$m_cls / $m_none" | bc -l)
r_att=$(echo "$m_att / $m_none" | bc -l)
r_clsf=$(echo "$m_att / $m_cls" | bc -l)
if [ $json = 1 ]; then
	jq -n --arg n "${res[none]}" --arg c "${res[classifier]}" --arg a "${res[attached]}" \
		--argjson mn "$m_none" --argjson mc "$m_cls" --argjson ma "$m_att" \
		'{rounds: ($n | split(" ") | map(select(. != "") | tonumber) | length),
		  gbit_none: $mn, gbit_htb_tree_only: $mc, gbit_attached_htb: $ma,
		  ratio_attached_vs_none: ($ma / $mn), ratio_attached_vs_tree: ($ma / $mc)}'
else
	printf 'veth TCP throughput, median of %d x %ds runs (Gbit/s):\n' "$ROUNDS" "$SECS"
	printf '  nothing attached            %6.2f   runs: %s\n' "$m_none" "${res[none]}"
	printf '  htb tree only (tc)          %6.2f   runs: %s  vs nothing %.3f\n' "$m_cls" "${res[classifier]}" "$r_cls"
	printf '  mercuryd attach (htb+tcx)   %6.2f   runs: %s  vs nothing %.3f, vs tree %.3f\n' "$m_att" "${res[attached]}" "$r_att" "$r_clsf"
fi
