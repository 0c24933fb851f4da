#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The emulated ECN-marking switch port (bench/port_ecn.c, bpf/port_ecn.bpf.c; cluster/lib.sh
# CL_PORT_ECN=1): the sender's veth is a port, a tbf FIFO at RATE_MBIT with the marking
# program in front of it. Checks: bad arguments are refused with a reason; four reno flows
# that negotiated ECN, over IPv4 and over IPv6, get CE marks (the receiver counts CE packets,
# no header or checksum errors) and still fill the port; flows that did not negotiate ECN
# are never marked (counted as not ECN-capable above the threshold); detach removes the
# filter and its clsact, the tbf stays.
TCP_CC=reno # BBR does not answer ECN marks
. "$(dirname "$0")/lib.sh"
PORT_ECN=${PORT_ECN:-$ROOT/build/bench/port_ecn}
[ -x "$PORT_ECN" ] || { echo "SKIP: $PORT_ECN missing (make)"; exit 77; }
tmp=$(mktemp -d)
trap 'cleanup; rm -rf "$tmp"' EXIT
LIMIT=262144
MARK=32768
COUNTERS=$PIN_ROOT/port_ecn_counters

setup_pair || { fail "namespace setup"; finish; }
in_s tc qdisc add dev va root tbf rate "${RATE_MBIT}mbit" burst 64kb limit "$LIMIT" ||
	fail "tbf on the port"
mkdir -p "$PIN_ROOT"

in_s "$PORT_ECN" attach va --rate "${RATE_MBIT}mbit" --limit "$LIMIT" --mark-above "$LIMIT" \
	>/dev/null 2>"$tmp/err"
check "a threshold at the limit is refused (exit 2, with the reason)" \
	bash -c "[ $? -eq 2 ] && grep -q 'below --limit' '$tmp/err'"
in_s "$PORT_ECN" attach nosuchport0 --rate 100mbit --limit 1000 --mark-above 10 2>"$tmp/err"
check "an unknown device is refused (exit 1, named)" \
	bash -c "[ $? -eq 1 ] && grep -q nosuchport0 '$tmp/err'"
in_s "$PORT_ECN" attach va --rate fast --limit "$LIMIT" --mark-above "$MARK" 2>"$tmp/err"
check "a bad rate is refused (exit 2)" bash -c "[ $? -eq 2 ] && grep -q 'not a rate' '$tmp/err'"
check "nothing was attached by the refused commands" \
	bash -c "! nsenter --net=/var/run/netns/$NS_S tc qdisc show dev va | grep -q clsact"

check "attach --mark-above $MARK --pin" \
	in_s "$PORT_ECN" attach va --rate "${RATE_MBIT}mbit" --limit "$LIMIT" --mark-above "$MARK" \
	--pin "$COUNTERS"

# The receiver's kernel counter NAME as nstat names it (IpExtInCEPkts, IpInHdrErrors,
# Ip6InCEPkts), read from /proc/net (the reader's namespace; no nstat in the VM matrix's
# guest); "missing" when the kernel has no such counter.
rx_counter() {
	in_r cat /proc/net/netstat /proc/net/snmp /proc/net/snmp6 | awk -v n="$1" '
		NF == 2 && $1 == n { print $2; found = 1; exit }
		$1 ~ /:$/ { p = substr($1, 1, length($1) - 1)
			if (!(p in names)) { names[p] = $0; next }
			split(names[p], h)
			for (k = 2; k <= NF; k++) if (p h[k] == n) { print $k; found = 1; exit } }
		END { if (!found) print "missing" }'
}
stat_of() { in_s "$PORT_ECN" stats --pin "$COUNTERS" -j | jq -r ".$1"; }

# flows ADDR SECONDS: four parallel reno flows to the receiver; its delivered Mbit/s
flows() {
	nsenter --net=/var/run/netns/"$NS_R" timeout 30 iperf3 -s -1 -J -p 5301 >"$tmp/rx.json" 2>/dev/null &
	PIDS+=($!)
	sleep 0.5
	nsenter --net=/var/run/netns/"$NS_S" timeout 30 iperf3 -c "$1" -p 5301 -P 4 -t "$2" -C reno \
		>/dev/null 2>&1
	wait_flows
	jq '.end.sum_received.bits_per_second / 1e6' "$tmp/rx.json" 2>/dev/null || echo 0
}

for ns in "$NS_S" "$NS_R"; do nsenter --net=/var/run/netns/"$ns" sysctl -qw net.ipv4.tcp_ecn=1; done
ce4=$(rx_counter IpExtInCEPkts)
check "the receiver's CE counters can be read (IPv4 $ce4, IPv6 $(rx_counter Ip6InCEPkts))" \
	grep -Eq '^[0-9]+/[0-9]+$' <<<"$ce4/$(rx_counter Ip6InCEPkts)"
mbit=$(flows 10.77.0.2 3)
check "IPv4 with ECN: the receiver counts CE packets" [ "$(($(rx_counter IpExtInCEPkts) - ce4))" -gt 0 ]
check "IPv4 with ECN: the port still carries >= 80 % of $RATE_MBIT Mbit/s ($mbit)" \
	ge "$mbit" "$(echo "$RATE_MBIT * 0.8" | bc -l)"
ce6=$(rx_counter Ip6InCEPkts)
mbit=$(flows fd77::2 3)
check "IPv6 with ECN: the receiver counts CE packets" [ "$(($(rx_counter Ip6InCEPkts) - ce6))" -gt 0 ]
check "IPv6 with ECN: the port still carries >= 80 % of $RATE_MBIT Mbit/s ($mbit)" \
	ge "$mbit" "$(echo "$RATE_MBIT * 0.8" | bc -l)"
check "the program counted its marks" [ "$(stat_of marked)" -gt 0 ]
check "no IPv4 header or checksum errors at the receiver" \
	[ "$(rx_counter IpInHdrErrors)/$(rx_counter IpExtInCsumErrors)" = 0/0 ]

# Without ECN the same load is never marked: CE can only go on ECN-capable packets.
in_s sysctl -qw net.ipv4.tcp_ecn=0
ce4=$(rx_counter IpExtInCEPkts)
skipped=$(stat_of not_capable_above_threshold)
flows 10.77.0.2 2 >/dev/null
check "not ECN-capable: no CE arrives" [ "$(rx_counter IpExtInCEPkts)" = "$ce4" ]
check "not ECN-capable: counted above the threshold, left to the tbf" \
	[ "$(stat_of not_capable_above_threshold)" -gt "$skipped" ]

check "detach" in_s "$PORT_ECN" detach va
check "detach removed the filter and clsact, kept the tbf" \
	bash -c "q=\$(nsenter --net=/var/run/netns/$NS_S tc qdisc show dev va);
		! grep -q clsact <<<\"\$q\" && grep -q tbf <<<\"\$q\""
check "detach again is not an error" in_s "$PORT_ECN" detach va
finish
