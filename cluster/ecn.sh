#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Drop-tail against ECN-marking switch ports, side by side (make bench-ecn; not in CI). One
# full-duplex cluster; between runs every switch port is either the FIFO of bench-fabric
# (drop-tail, the nodes' connections without ECN: bench-fabric's setting) or that FIFO with
# CE marked above a threshold (cluster/lib.sh cluster_ecn, bench/port_ecn.c), as a ToR switch
# with WRED/ECN marks, the nodes asking for ECN (net.ipv4.tcp_ecn=1). REPEAT runs of every
# variant in turn per model; the ideal bound once per model.
#
# A variant is LABEL:PORTS:MODE:ARGS
#   PORTS  droptail|ecn
#   MODE   fifo|partition|mercury (partition: ByteScheduler with cluster/lib.sh's tuned (P, C)
#          for the model and node count, tuned on drop-tail ports)
#   ARGS   extra mercury-ps arguments, words split on spaces
# Default variants: fifo, partition and mercury (Mercury's defaults: 4 connections a pair,
# windows by the node count, 16 KiB at 4 nodes and 8 KiB at 8) on each kind of port, and on ECN ports mercury with the kernel's autotuned
# windows (--rcvbuf 0: the marks, not a fixed window, bound what the senders put on a port).
#
# Usage: cluster/ecn.sh [--models "resnet50 ..."] [--nodes N] [--repeat N] [--iters N]
#        [--scale S] [--mark BYTES] [--variant LABEL:PORTS:MODE:ARGS]... [--tworack] [--out DIR]
# --mark: the marking threshold in emulated bytes (default: a quarter of the port buffer).
# Prints one table and leaves DIR/results.jsonl.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"

MODELS="resnet50 vgg16" NODES=4 REPEAT=2 ITERS=6 SCALE=25 FABRIC=duplex
OUT=${OUT:-$CL_ROOT/build/bench-ecn}
VARIANTS=()
while [ $# -gt 0 ]; do
	case $1 in
	--models) MODELS=$2; shift ;;
	--nodes) NODES=$2; shift ;;
	--repeat) REPEAT=$2; shift ;;
	--iters) ITERS=$2; shift ;;
	--scale) SCALE=$2; shift ;;
	--mark) CL_ECN_MARK_SET=$2; shift ;;
	--variant) VARIANTS+=("$2"); shift ;;
	--tworack) FABRIC=tworack ;;
	--out) OUT=$2; shift ;;
	-h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "bench-ecn: unknown option $1 (--help)" >&2; exit 2 ;;
	esac
	shift
done
[ ${#VARIANTS[@]} -gt 0 ] ||
	VARIANTS=("fifo:droptail:fifo:" "partition:droptail:partition:" "mercury:droptail:mercury:"
		"fifo-ecn:ecn:fifo:" "partition-ecn:ecn:partition:" "mercury-ecn:ecn:mercury:"
		"mercury-ecn-autowin:ecn:mercury:--rcvbuf 0")
for n in NODES REPEAT ITERS SCALE; do
	[[ ${!n} =~ ^[1-9][0-9]*$ ]] || { echo "bench-ecn: --${n,,} takes a count >= 1" >&2; exit 2; }
done
[ -z "$CL_ECN_MARK_SET" ] || [[ $CL_ECN_MARK_SET =~ ^[1-9][0-9]*$ ]] ||
	{ echo "bench-ecn: --mark takes a byte count >= 1" >&2; exit 2; }
for v in "${VARIANTS[@]}"; do
	IFS=: read -r label ports mode _ <<<"$v"
	[[ $label =~ ^[A-Za-z0-9_.+-]+$ ]] && [[ $ports =~ ^(droptail|ecn)$ ]] &&
		[[ $mode =~ ^(fifo|partition|mercury)$ ]] ||
		{ echo "bench-ecn: bad variant '$v': LABEL:droptail|ecn:fifo|partition|mercury:ARGS" >&2; exit 2; }
done
[ "$(id -u)" -eq 0 ] || { echo "bench-ecn: needs root (namespaces)" >&2; exit 77; }
[ -x "$PS_BIN" ] && [ -x "$MERCURYD" ] && [ -x "$PORT_ECN" ] ||
	{ echo "bench-ecn: run make first" >&2; exit 1; }
RATE=$((10000 / SCALE))
mkdir -p "$OUT"
res=$OUT/results.jsonl
: >"$res"
CL_PORT_QUEUES=1 CL_PORT_BUF_REAL=2097152 CL_FABRIC=$FABRIC CL_PORT_ECN=1
trap cluster_down EXIT
cluster_up "$NODES" "$RATE" mercuryd 2> >(grep -v quantum >&2) || exit 1
serve_start || exit 1
for model in $MODELS; do
	model_setup "$model" "$SCALE" "$ITERS" "$res" || exit 1
	cluster_fabric_shrink "$MODEL_K" || exit 1
	args=("${MODEL_ARGS[@]}")
	for ((REP = 0; REP < REPEAT; REP++)); do
		for v in "${VARIANTS[@]}"; do
			IFS=: read -r label ports mode extra <<<"$v"
			cluster_ecn "$([ "$ports" = ecn ] && echo 1 || echo 0)" || exit 1
			part=()
			[ "$mode" = partition ] && read -ra part <<<"$(tuned_of "$model" "$MODEL_K")"
			# shellcheck disable=SC2086 # ARGS are words
			run_cell "$res" "$label" "$model" "$mode" "${args[@]}" "${part[@]}" $extra ||
				exit 1
		done
	done
	echo "bench-ecn: $model done" >&2
done
REP=0
CL_PORT_ECN=1
labels=""
for v in "${VARIANTS[@]}"; do labels+="${labels:+ }${v%%:*}"; done
# the port buffer and threshold are each model's (shrunk): the fabric without them
fabric=$(fabric_desc | sed 's/FIFO ports of [0-9]* bytes, ECN marked above [0-9]* bytes/FIFO ports of 2 MiB real \/ the model'"'"'s shrink, ECN marked above a quarter of it/')
[ -n "$CL_ECN_MARK_SET" ] && fabric=${fabric/a quarter of it/$CL_ECN_MARK_SET bytes}
# Median of the runs per model and variant, each run's range, and per run: retransmitted
# segments / timeouts / CE-marked packets received
jq -rs --arg labels "$labels" --arg ce 1 -f "$here/variant_table.jq" --arg heading \
	"$NODES nodes, $RATE Mbit/s, $fabric (-ecn: with the marks; others drop-tail); median s an iteration (range) [retransmitted segments/timeouts/CE received per run]" \
	"$res" | tee "$OUT/table.md"
