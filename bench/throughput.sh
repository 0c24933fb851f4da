#!/usr/bin/env bash
# Throughput cost of Mercury: maximum TCP throughput over a veth pair with no rate limit,
# alternating within one run between (a) nothing attached, (b) Mercury's classifier alone
# on clsact (no qdisc change) and (c) full `mercuryd attach` (htb at 100 Gbit, never the
# bottleneck, + classifier). Median of ROUNDS runs of SECS seconds each. `-j`: JSON.
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
mode_filter_on() {
	in_s tc qdisc add dev va clsact
	in_s tc filter add dev va egress prio 1 bpf da obj "$ROOT/build/classifier.bpf.o" sec tc
}
mode_filter_off() { in_s tc qdisc del dev va clsact; }
mode_attach_on() { mercuryd_s attach va --qdisc htb --rate 100gbit >/dev/null; }
mode_attach_off() { mercuryd_s detach va >/dev/null; }

declare -A res
for r in $(seq 1 "$ROUNDS"); do
	res[none]+="$(run_flow) "
	mode_filter_on
	res[classifier]+="$(run_flow) "
	mode_filter_off
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
if [ $json = 1 ]; then
	jq -n --arg n "${res[none]}" --arg c "${res[classifier]}" --arg a "${res[attached]}" \
		--argjson mn "$m_none" --argjson mc "$m_cls" --argjson ma "$m_att" \
		'{rounds: ($n | split(" ") | map(select(. != "") | tonumber) | length),
		  gbit_none: $mn, gbit_classifier_only: $mc, gbit_attached_htb: $ma,
		  ratio_classifier_only: ($mc / $mn), ratio_attached_htb: ($ma / $mn)}'
else
	printf 'veth TCP throughput, median of %d x %ds runs (Gbit/s):\n' "$ROUNDS" "$SECS"
	printf '  nothing attached          %6.2f   runs: %s\n' "$m_none" "${res[none]}"
	printf '  classifier only (clsact)  %6.2f   runs: %s  ratio %.3f\n' "$m_cls" "${res[classifier]}" "$r_cls"
	printf '  mercuryd attach (htb)     %6.2f   runs: %s  ratio %.3f\n' "$m_att" "${res[attached]}" "$r_att"
fi
