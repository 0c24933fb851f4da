#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The emulated cluster's full-duplex fabric (cluster/lib.sh, the default): the switch port
# towards each node is a bounded FIFO at the node's rate, so two senders into one node share
# its downlink (in the egress-only fabric they would get twice the rate); with DSCP ports the
# nodes' classifiers mark each packet's level and the switch queues it by DSCP; the PS runs
# correctly over both and reports timeouts and switch drops; ECN-marking ports mark CE;
# per-job port queues split a downlink by job, not by connection.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 77; }
command -v iperf3 >/dev/null || { echo "SKIP: no iperf3 (make deps)"; exit 77; }
[ -x /usr/bin/python3 ] || { echo "SKIP: needs /usr/bin/python3 (cluster/collect.py)"; exit 77; }
CL_PFX=mqfab$$
. "$here/../../cluster/lib.sh"
[ -x "$PS_BIN" ] && [ -x "$MERCURYD" ] || { echo "SKIP: mercury-ps / mercuryd not built"; exit 77; }
fails=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fails=$((fails + 1)); fi; }
out=$(mktemp -d)
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	rm -rf "$out"
	cluster_down
}
trap cleanup EXIT
# two_senders PORT1 PORT2 SECONDS OUT1 OUT2 "ARGS1" "ARGS2": nodes 1 and 2 send into node 0 at
# once (iperf3 -J reports in OUT1, OUT2; ARGSn: more iperf3 client options, e.g. -P 4).
two_senders() {
	local p a args1 args2
	read -ra args1 <<<"$6"
	read -ra args2 <<<"$7"
	for p in "$1" "$2"; do
		cl_in 0 iperf3 -s -1 -p "$p" -B "$(cl_ip 0)" >/dev/null 2>&1 &
		pids+=($!)
	done
	sleep 0.5
	cl_in 1 iperf3 -c "$(cl_ip 0)" -p "$1" -t "$3" -J "${args1[@]}" >"$4" 2>/dev/null &
	a=$!
	cl_in 2 iperf3 -c "$(cl_ip 0)" -p "$2" -t "$3" -J "${args2[@]}" >"$5" 2>/dev/null
	wait "$a"
}

export CL_DSCP=1
CL_FABRIC=duplex cluster_up 3 200 mercuryd 2>/dev/null || { echo "FAIL: cluster setup"; exit 1; }
serve_start || { echo "FAIL: mercuryd serve"; exit 1; }
qd=$(cl_sw tc qdisc show dev s0)
check "the switch port towards node 0 is a FIFO of the port buffer at 200 Mbit/s" \
	"[[ \$qd == *'tbf 5: root'*'rate 200Mbit'* ]]"

# Two senders into node 0 at once: together they get node 0's downlink, not twice it.
d0=$(switch_drops) p0=$(switch_port_drops)
two_senders 5201 5202 3 "$out/a.json" "$out/b.json" "" ""
d1=$(switch_drops) p1=$(switch_port_drops)
# what two autotuned senders overflow is node 0's port, and the ports add up to the total
check "switch drops per port: node 0's port overflowed, the ports sum to the total ($p0 -> $p1)" \
	"jq -ne --argjson a '$p0' --argjson b '$p1' '(\$b.s0 - (\$a.s0 // 0)) > 0 and
		([\$b | to_entries[] | .value - (\$a[.key] // 0)] | add) == $d1 - $d0' >/dev/null"
sum=$(jq -s 'map(.end.sum_received.bits_per_second) | add / 1e6 | floor' "$out/a.json" "$out/b.json")
check "two senders into one node share its 200 Mbit/s downlink (${sum:-?} Mbit/s together)" \
	"[ '${sum:-0}' -gt 100 ] && [ '${sum:-999}' -le 210 ]"

for m in fifo mercury; do
	run_ps "$out/r.jsonl" "$m" tiny "$m" --iters 2 --chunk 10000 --verify --timeout 20
	check "$m over FIFO switch ports: every node finished, every pull matched" \
		"[ -s '$out/r.jsonl' ] && tail -n1 '$out/r.jsonl' | jq -e '.mode == \"$m\" and .ok' >/dev/null"
done
check "every run reports its fabric, retransmission timeouts and switch drops" \
	"jq -es 'length == 2 and all(.[]; (.fabric | startswith(\"full duplex\")) and (.timeouts | type) == \"number\" and (.switch_drops | type) == \"number\")' '$out/r.jsonl' >/dev/null"

cluster_ports 4 || { echo "FAIL: DSCP switch ports"; exit 1; }
run_ps "$out/r.jsonl" mercury-dscp tiny mercury --iters 3 --chunk 10000 --verify --timeout 20
check "mercury over DSCP strict-priority ports: every node finished, every pull matched, tagged" \
	"[ \$(wc -l <'$out/r.jsonl') -eq 3 ] && tail -n1 '$out/r.jsonl' | jq -e '.ok and .tagged' >/dev/null"
queues=0
for ((i = 0; i < 3; i++)); do
	n=$(cl_sw tc -s class show dev "s$i" | awk '/^class htb 5:1[0-9a-f] / { c = 1; next }
		c && /Sent/ { if ($2 > 100000) k++; c = 0 } END { print k + 0 }')
	[ "$n" -gt "$queues" ] && queues=$n
done
check "the switch queued the marked packets by DSCP in several queues ($queues)" "[ $queues -ge 2 ]"
# Connections by switch queue (run_ps passes --dscp-queues 4): tiny's 6 layers of 13 groups
# lie in queues 0, 1 and 2 of 4, so even --conns 1 gives one connection per queue, 3.
run_ps "$out/r.jsonl" mercury-dscp-1 tiny mercury --iters 2 --chunk 10000 --verify --timeout 20 --conns 1
check "mercury over DSCP ports with --conns 1: one connection per switch queue used (3), every pull matched" \
	"tail -n1 '$out/r.jsonl' | jq -e '.ok and .tagged and .conns == 3 and (.split_queues | type) == \"number\"' >/dev/null"
CL_DSCP_CONNS=0 run_ps "$out/r.jsonl" mercury-dscp-off tiny mercury --iters 2 --chunk 10000 --verify --timeout 20 --conns 1
check "... and with CL_DSCP_CONNS=0 the one connection given" \
	"tail -n1 '$out/r.jsonl' | jq -e '.ok and .conns == 1' >/dev/null"
dscp=$(cl_in 0 "$MERCURYD" --pin-root "$CL_PIN/n0" -j status e0 | jq -c '.interfaces[0].dscp // empty')
check "mercuryd status shows the band-to-DSCP map the cluster gave (${dscp:0:40}...)" "[ -n '$dscp' ]"

# ECN-marking FIFO ports (CL_PORT_ECN): two ECN senders into node 0 get CE marks there and
# lose nothing; the PS runs over them and reports the marks.
cluster_ecn 1 || { echo "FAIL: ECN switch ports"; exit 1; }
# tc's output captured first: grep -q leaving a pipe early fails it under pipefail (SIGPIPE)
filters=$(cl_sw tc filter show dev s0 egress) qdiscs=$(cl_sw tc qdisc show dev s0)
check "the port towards node 0 has the marking filter in front of its FIFO" \
	"[[ \$filters == *'name mercury_port_ec '* && \$qdiscs == *'tbf 5: root'* ]]"
ce0=$(counters 0 | awk '{ print $6 }')
two_senders 5203 5204 3 /dev/null /dev/null "-P 2" "-P 2"
ce1=$(counters 0 | awk '{ print $6 }')
check "two ECN senders into node 0: CE marks arrive ($((ce1 - ce0)) packets)" "[ $((ce1 - ce0)) -gt 0 ]"
run_ps "$out/r.jsonl" mercury-ecn tiny mercury --iters 2 --chunk 10000 --verify --timeout 20 --rcvbuf 0
check "mercury over ECN ports: every node finished, every pull matched; the run names the marking and counts CE" \
	"tail -n1 '$out/r.jsonl' | jq -e '.ok and (.fabric | test(\"ECN marked above\")) and (.ce_received | type) == \"number\"' >/dev/null"
cluster_ecn 0 || { echo "FAIL: back to drop-tail ports"; exit 1; }
filters=$(cl_sw tc filter show dev s0 egress)
check "cluster_ecn 0 removes the marking filter" "[[ \$filters != *'name mercury_port_ec '* ]]"

# Pure ACKs first on FIFO ports (CL_PORT_ACK_FIRST=1): the ACKs of a flow into node 0 take
# the queue above the data on the port towards the sender; the data keep one FIFO.
CL_PORT_ACK_FIRST=1 cluster_ports 1 || { echo "FAIL: FIFO switch ports, ACKs first"; exit 1; }
two_senders 5208 5209 1 /dev/null /dev/null "" ""
acks=$(cl_sw tc -s class show dev s1 classid 5:9 | awk '/Sent/ { print $4; exit }')
fifo=$(cl_sw tc qdisc show dev s1 | grep -c 'bfifo .* parent 5:10 ')
check "ACKs first on FIFO ports: ${acks:-no} packets above the one data FIFO ($fifo)" \
	"[ '${acks:-0}' -gt 100 ] && [ '$fifo' = 1 ]"

# Per-job port queues (CL_PORT_JOBS): a job of four connections (port 5205) and one of one
# connection (port 5206) into node 0 at once each get about half of its downlink, where a
# FIFO port shares by connection.
CL_PORT_JOBS="5205 5206"
cluster_ports 1 || { echo "FAIL: per-job switch ports"; exit 1; }
qd=$(cl_sw tc class show dev s0)
check "the port towards node 0 has a queue per job and one for the rest" \
	"[ \$(grep -c 'class htb 5:1[0-9a-f] parent 5:1 ' <<<\"\$qd\") -eq 3 ]"
two_senders 5205 5206 4 "$out/j4.json" "$out/j1.json" "-P 4" ""
j4=$(jq '.end.sum_received.bits_per_second / 1e6 | floor' "$out/j4.json")
j1=$(jq '.end.sum_received.bits_per_second / 1e6 | floor' "$out/j1.json")
check "per-job ports: 4 connections ${j4:-?} Mbit/s, 1 connection ${j1:-?} Mbit/s: each 40-60 % of the two" \
	"[ -n '$j4' ] && [ -n '$j1' ] && [ \$((100 * ${j1:-0} / (${j1:-0} + ${j4:-0} + 1))) -ge 40 ] && [ \$((100 * ${j1:-0} / (${j1:-0} + ${j4:-0} + 1))) -le 60 ]"
# ... and with CL_PORT_ACK_FIRST=1 the ACKs coming back to the senders through their own
# downlinks take the queue above the jobs'.
CL_PORT_ACK_FIRST=1 cluster_ports 1 || { echo "FAIL: per-job switch ports, ACKs first"; exit 1; }
cl_in 0 iperf3 -s -1 -p 5207 -B "$(cl_ip 0)" >/dev/null 2>&1 &
pids+=($!)
sleep 0.5
cl_in 1 iperf3 -c "$(cl_ip 0)" -p 5207 -t 1 >/dev/null 2>&1
acks=$(cl_sw tc -s class show dev s1 classid 5:9 | awk '/Sent/ { print $4; exit }')
check "ACKs first: the port towards the sender queued ${acks:-no} packets above the jobs" \
	"[ '${acks:-0}' -gt 100 ]"
run_ps "$out/r.jsonl" mercury-jobports tiny mercury --iters 2 --chunk 10000 --verify --timeout 20
check "mercury over per-job ports: every pull matched; the run names the fabric" \
	"tail -n1 '$out/r.jsonl' | jq -e '.ok and (.fabric | test(\"per-job DWRR\"))' >/dev/null"

[ $fails -eq 0 ] && { echo "all checks passed"; exit 0; }
echo "$fails check(s) failed"
exit 1
