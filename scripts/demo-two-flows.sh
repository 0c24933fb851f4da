#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Demo: two TCP flows share a 200 Mbit bottleneck, first without Mercury (FIFO: they split
# it), then with Mercury (flow 1 tagged most urgent, flow 2 least: flow 1 takes the link).
. "$(dirname "$0")/../tests/integration/lib.sh"
SECS=${SECS:-6}
tmp=$(mktemp -d)
trap 'cleanup; rm -rf "$tmp"' EXIT

setup_pair >/dev/null || { echo "demo: namespace setup failed" >&2; exit 1; }
report() {
	printf '  %-28s flow 1: %6.1f Mbit/s   flow 2: %6.1f Mbit/s\n' "$1" \
		"$(mean_mbit "$2.1" 2)" "$(mean_mbit "$2.2" 2)"
}
echo "Two iperf3 flows over a ${RATE_MBIT} Mbit/s bottleneck (veth in namespaces, $TCP_CC), ${SECS}s each:"
in_s tc qdisc add dev va root handle 1: tbf rate "${RATE_MBIT}mbit" burst 64k latency 50ms
start_two_flows "$SECS" "$tmp/off"
wait_flows
report "Mercury off (FIFO tbf):" "$tmp/off"
in_s tc qdisc del dev va root
mercuryd_s attach va --qdisc htb --rate "${RATE_MBIT}mbit" >/dev/null || { echo "demo: attach failed" >&2; exit 1; }
start_two_flows "$SECS" "$tmp/on"
tag_flow 40001 0 && tag_flow 40002 7 || echo "demo: tagging failed" >&2
wait_flows
report "Mercury on (1 high, 2 low):" "$tmp/on"
mercuryd_s -j status va | jq -r '.interfaces[0] | "  classifier: " + ([.per_band[] | select(.packets > 0) | "band \(.band) \(.packets) pkts"] | join(", ")) + ", untagged/other \(.outcomes.no_payload.packets) acks"'
mercuryd_s detach va >/dev/null
