#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Functional checks of the DSCP fabric, not timing benchmarks: ResNet-50 on 4 nodes, switch
# ports QUEUES strict-priority DSCP queues, mercury-ps defaults (4 connections), each CASE in
# turn, REPEAT times, ITERS iterations each. Cases:
#   guard-off, guard-on   the fabric order guard (mercuryd attach --dscp-guard) off / on, with
#                         connections by layer group (CL_DSCP_CONNS=0)
#   group, queue          the guard on (its default); connections by layer group
#                         (CL_DSCP_CONNS=0) / by switch queue (mercury-ps --dscp-queues)
#   group-noguard, queue-noguard   the same with the guard off
# Per run, summed over the nodes: the kernel's retransmission, reordering and recovery
# counters (nstat names), and per node [dscp_kept, order_kept, order_released] of the
# classifier since attach; then conns and split_queues of the run. Lines in
# $OUT/counters.txt, the runs in $OUT/results.jsonl.
# Usage: [REPEAT=2] [ITERS=3] [QUEUES=4] [CASES="guard-off guard-on"] [OUT=DIR]
#        cluster/guard_check.sh
#   e.g. QUEUES=8 CASES="group queue" cluster/guard_check.sh
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
REPEAT=${REPEAT:-2} ITERS=${ITERS:-3} OUT=${OUT:-build/guard-check} QUEUES=${QUEUES:-4}
CASES=${CASES:-guard-off guard-on}
export CL_DSCP=1 CL_PORT_QUEUES=$QUEUES
. cluster/lib.sh
mkdir -p "$OUT"; : >"$OUT/results.jsonl"; : >"$OUT/counters.txt"
SCALE=25 RATE=$((10000 / 25)) model=resnet50 k=2
ts=$(echo "$SCALE / $k" | bc -l)
cluster_up 4 "$RATE" mercuryd 2> >(grep -v quantum >&2) || exit 1
serve_start || exit 1
cluster_rto_scaled "$ts" || exit 1
cluster_fabric_shrink "$k" || exit 1
NAMES="TCPSACKReorder TCPTSReorder TCPRenoReorder TCPDSACKRecv TCPDSACKOfoRecv TCPDSACKUndo TCPLossUndo TCPSpuriousRTOs TCPFastRetrans TCPLostRetransmit TCPTimeouts TCPSackRecoveryFail TCPSACKReneging TCPRenoRecovery TCPSackRecovery TCPOFOQueue TCPSpuriousRtxHostQueues TCPLossProbes TCPLossProbeRecovery TCPRackReoWnd"
snap() { # all nodes' TcpExt + RetransSegs/OutSegs, summed, as NAME=VALUE lines
	local i
	for ((i = 0; i < CL_NODES; i++)); do
		cl_in "$i" cat /proc/net/netstat /proc/net/snmp
	done | awk '/^(TcpExt|Tcp):/ { if (!(($1) in hdr)) { hdr[$1] = 1; for (k = 2; k <= NF; k++) h[$1, k] = $k; next }
		for (k = 2; k <= NF; k++) v[h[$1, k]] += $k; delete hdr[$1] }
		END { for (n in v) print n, v[n] }' | sort
}
for ((REP = 0; REP < REPEAT; REP++)); do
	for g in $CASES; do
		case $g in
		guard-off | guard-on) CL_DSCP_CONNS=0 && cluster_dscp_guard "${g#guard-}" || exit 1 ;;
		group | queue | group-noguard | queue-noguard)
			CL_DSCP_CONNS=0
			[[ $g == queue* ]] && CL_DSCP_CONNS=1
			want=on
			[[ $g == *-noguard ]] && want=off
			if [ "${CL_DSCP_GUARD:-on}" != "$want" ]; then cluster_dscp_guard "$want" || exit 1; fi
			;;
		*) echo "guard_check: unknown case $g" >&2 && exit 2 ;;
		esac
		cluster_ports "$QUEUES" || exit 1
		snap >"$OUT/s0"
		run_cell "$OUT/results.jsonl" "$g" "$model" mercury --iters "$ITERS" --warmup 1 \
			--shrink "$k" --time-scale "$ts" || echo "run failed" >&2
		snap >"$OUT/s1"
		kept=""
		for ((i = 0; i < CL_NODES; i++)); do
			kept="$kept $(cl_in "$i" "$MERCURYD" --pin-root "$CL_PIN/n$i" -j status e0 | jq -c "[.interfaces[0].dscp_kept.packets, .interfaces[0].order_kept.packets, .interfaces[0].order_released.packets]")"
		done
		{
			printf '%s rep %d: [dscp_kept, order_kept, order_released] per node:%s;' "$g" "$REP" "$kept"
			join "$OUT/s0" "$OUT/s1" | awk -v names="$NAMES RetransSegs OutSegs" 'BEGIN { split(names, a, " "); for (i in a) want[a[i]] = 1 }
				want[$1] { printf " %s=%d", $1, $3 - $2 } END { print "" }'
		} | tee -a "$OUT/counters.txt"
		tail -n 1 "$OUT/results.jsonl" | jq -c '{label: .label, iter_s: .iter_s, retrans_pct: .retrans_pct, timeouts: .timeouts, switch_drops: .switch_drops, conns: .conns, split_sockets: .split_sockets, split_queues: .split_queues}' 2>/dev/null | tee -a "$OUT/counters.txt"
	done
done
