#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Mercury on a full-duplex fabric (make bench-fabric): every switch port a bounded buffer at
# its node's rate, so N-to-1 pushes queue and drop there as in a real cluster.
#
# Per node count, one cluster whose nodes write each packet's level as DSCP (mercuryd attach
# --dscp); between runs the switch ports are either one FIFO (what most fabrics give) or
# PORT_QUEUES strict-priority queues chosen by DSCP (a switch with a DSCP-to-queue map).
# Modes, REPEAT times in turn per model (fifo, partition, mercury, mercury-dscp, fifo, ...):
#   fifo          vanilla PS, untagged, FIFO ports
#   partition     ByteScheduler with the (P, C) tuned per model by cluster/tune.sh on this
#                 fabric (`cluster/tune.sh --models "..." --cases mxnet --iters 6` at 372bb2c;
#                 at 8 nodes re-tuned with --nodes 8; cluster/RESULTS.md; TUNED and
#                 TUNED_8N and, on two racks, TUNED_TWORACK of cluster/lib.sh override)
#   mercury       Mercury's defaults, FIFO ports: priority at the sender only
#   mercury-dscp  Mercury's defaults but --conns 16 (by layer group; 4 on two racks and in
#                 the sweep's buffers below the default: the defaults), switch
#                 ports strict priority on DSCP (connections by switch queue, run_ps's
#                 --dscp-queues, lost to 16 by group side by side: cluster/RESULTS.md)
#   ideal         the paper's bound (mercury-ps ideal; with full-duplex links of one rate a
#                 node's ingress carries per layer what its egress does, so the bound holds
#                 on this fabric unchanged; two racks add the uplink, --uplink)
# Then a sweep of the port buffer (ResNet-50; partition left out) and the two-rack topology.
#
# Usage: cluster/fabric.sh [--models "resnet50 ..."] [--nodes "4 8"] [--repeat N]
#        [--iters N] [--buffers "B..."] [--sweep-model M] [--tworack-models "M ..."]
#        [--no-sweep] [--no-tworack] [--tworack-nodes N] [--only-tworack] [--quick]
#        [--scale S] [--mercury-args "ARGS"] [--out DIR]
# --mercury-args: more mercury-ps options for both Mercury modes (e.g. "--pulls-alike").
# --scale S: the emulation's time scale (default 25: links of 10 Gbit/s / 25 = 400 Mbit/s);
# a larger S runs slower links and longer iterations with the same ratios, so the host's CPU
# does less per emulated second (to tell a CPU limit from a network one).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"

MODELS="resnet50 vgg16 alexnet inception3 bert_base" NODE_COUNTS="4 8" REPEAT=3 ITERS=6
SCALE=${SCALE:-25} PORT_QUEUES=${PORT_QUEUES:-8} OUT=${OUT:-$CL_ROOT/build/bench-fabric}
# Real per-port buffers of the sweep (bytes; divided by the shrink like the default 2 MiB)
BUFFERS="524288 8388608 33554432" SWEEP_MODEL=resnet50 TWORACK_MODELS="resnet50 vgg16"
MERCURY_ARGS="" SWEEP=1 TWORACK=1 PARTITION=1 MAIN=1 MODELS_SET=0 TWORACK_NODES=8 DSCP_CONNS=16 BIG_NODES_MODELS=${BIG_NODES_MODELS:-"resnet50 vgg16"}
# ByteScheduler's (P, C) per model: cluster/lib.sh's TUNED and, at 8 nodes, TUNED_8N (on two
# racks TUNED_TWORACK)
while [ $# -gt 0 ]; do
	case $1 in
	--models) MODELS=$2 MODELS_SET=1; shift ;;
	--nodes) NODE_COUNTS=$2; shift ;;
	--repeat) REPEAT=$2; shift ;;
	--iters) ITERS=$2; shift ;;
	--buffers) BUFFERS=$2; shift ;;
	--sweep-model) SWEEP_MODEL=$2; shift ;;
	--tworack-models) TWORACK_MODELS=$2; shift ;;
	--no-sweep) SWEEP=0 ;;
	--no-tworack) TWORACK=0 ;;
	--tworack-nodes) TWORACK_NODES=$2; shift ;;
	--only-tworack) MAIN=0 ;;
	--quick) MODELS=resnet50 NODE_COUNTS=4 REPEAT=1 ITERS=3 SWEEP=0 TWORACK=0 ;;
	--scale) SCALE=$2; shift ;;
	--mercury-args) MERCURY_ARGS=$2; shift ;;
	--out) OUT=$2; shift ;;
	-h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "bench-fabric: unknown option $1 (--help)" >&2; exit 2 ;;
	esac
	shift
done
[[ $REPEAT =~ ^[1-9][0-9]*$ ]] || { echo "bench-fabric: --repeat takes a count >= 1" >&2; exit 2; }
[[ $ITERS =~ ^[1-9][0-9]*$ ]] || { echo "bench-fabric: --iters takes a count >= 1" >&2; exit 2; }
[[ $SCALE =~ ^[1-9][0-9]*$ ]] && [ "$SCALE" -le 1000 ] ||
	{ echo "bench-fabric: --scale takes a whole time scale 1-1000" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "bench-fabric: needs root (namespaces)" >&2; exit 77; }
[ -x "$PS_BIN" ] && [ -x "$MERCURYD" ] || { echo "bench-fabric: run make first" >&2; exit 1; }
RATE=$((10000 / SCALE))
mkdir -p "$OUT"
: >"$OUT/results.jsonl"
export CL_DSCP=1

# cell LABEL MODEL MODE PORT_QUEUES ARGS...: one run with the switch ports set first
cell() {
	local label=$1 model=$2 mode=$3 q=$4
	shift 4
	cluster_ports "$q" || return 1
	run_cell "$OUT/results.jsonl" "$label" "$model" "$mode" "$@"
}

# model_cells TAG MODEL: ideal once, then every mode REPEAT times in turn
model_cells() {
	local tag=$1 model=$2 k args
	model_params "$model" "$SCALE" "$ITERS" || return 1
	k=$MODEL_K args=("${MODEL_ARGS[@]}")
	cluster_fabric_shrink "$k" || return 1
	model_ideal "$model" |
		jq -c --arg l "ideal$tag" --arg f "$(fabric_desc)" --argjson k "$k" --argjson ts "$MODEL_TS" \
			'. + {label: $l, fabric: $f, shrink: $k, time_scale: $ts, rate_mbit: '"$RATE"'}' \
			>>"$OUT/results.jsonl"
	for ((REP = 0; REP < REPEAT; REP++)); do
		cell "fifo$tag" "$model" fifo 1 "${args[@]}"
		# shellcheck disable=SC2046
		[ "$PARTITION" = 1 ] &&
			cell "partition$tag" "$model" partition 1 "${args[@]}" $(tuned_of "$model" "$k")
		# shellcheck disable=SC2086 # ARGS are words
		cell "mercury$tag" "$model" mercury 1 "${args[@]}" $MERCURY_ARGS
		# connections by layer group, DSCP_CONNS of them: on DSCP ports the best setting
		# side by side (cluster/RESULTS.md, "DSCP settings side by side"), not one per
		# switch queue
		# shellcheck disable=SC2086
		CL_DSCP_CONNS=0 cell "mercury-dscp$tag" "$model" mercury "$PORT_QUEUES" "${args[@]}" \
			--conns "$DSCP_CONNS" $MERCURY_ARGS
	done
	REP=0
	echo "bench-fabric: $model on $CL_NODES nodes ($tag) done" >&2
}

[ "$MAIN" = 1 ] || NODE_COUNTS=""
for n in $NODE_COUNTS; do
	CL_PORT_QUEUES=1 CL_PORT_BUF_REAL=2097152
	CL_FABRIC=duplex
	cluster_up "$n" "$RATE" mercuryd 2> >(grep -v quantum >&2) || exit 1
	serve_start || exit 1
	models=$MODELS
	[ "$n" -gt 4 ] && [ "$MODELS_SET" = 0 ] && models=$BIG_NODES_MODELS
	for model in $models; do model_cells "-n$n" "$model" || exit 1; done
	if [ "$SWEEP" = 1 ] && [ "$n" = 4 ]; then
		for b in $BUFFERS; do
			CL_PORT_BUF_REAL=$b PARTITION=0
			# 16 connections were chosen side by side at the default buffer; below it
			# their windows overflow the port (256 KB: 2.39 s with 3-7 timeouts a run,
			# the defaults 1.654 s and none: `cluster/dscp_settings.sh --buffer 524288`,
			# cluster/RESULTS.md "Port buffer"), so there the DSCP cell keeps Mercury's 4
			DSCP_CONNS=16
			[ "$b" -lt 2097152 ] && DSCP_CONNS=4
			model_cells "-n$n-buf$b" "$SWEEP_MODEL" || exit 1
		done
		PARTITION=1 DSCP_CONNS=16
		CL_PORT_BUF_REAL=2097152
	fi
	cluster_down
done
if [ "$TWORACK" = 1 ]; then
	n=$TWORACK_NODES
	# Behind the 2:1 uplink 16 connections a pair starve in the lower queues past their
	# timers (43-454 timeouts a run); 4 by layer group met 2-70 and ran 1.07-1.32x
	# faster (`cluster/dscp_settings.sh --tworack`, cluster/RESULTS.md, "8 nodes, and two
	# racks")
	DSCP_CONNS=4
	CL_PORT_QUEUES=1 CL_PORT_BUF_REAL=2097152
	CL_FABRIC=tworack
	cluster_up "$n" "$RATE" mercuryd 2> >(grep -v quantum >&2) || exit 1
	serve_start || exit 1
	for model in $TWORACK_MODELS; do model_cells "-n$n-tworack" "$model" || exit 1; done
	cluster_down
fi
/usr/bin/python3 "$here/fabric_report.py" "$OUT/results.jsonl" | tee "$OUT/results.md"
