#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Where a run leaves the switch's links idle: one model on the emulated fabric, each mode once,
# with every switch port's bytes sent sampled every INTERVAL seconds (bench/link_sample.py in
# the switch's namespace: s<i> towards node i, and on two racks u0 / u1, the uplink from rack
# 0 to rack 1 and back). port_trace_report.py then says per port how busy it was over the
# measured iterations, and for the uplink and the busiest node port how busy in each tenth of
# an iteration (from the cluster's forward-pass ends), beside the ideal bound's iteration.
# Every node's per-layer timeline (mercury-ps --timeline) is kept in the mode's folder.
#
# Modes (as cluster/fabric.sh runs them): fifo, mercury (FIFO ports), mercury-dscp (strict
# priority on DSCP, PORT_QUEUES queues, connections by layer group: 4 a pair on two racks,
# 16 on one switch).
#
# Usage: cluster/port_trace.sh [--model M] [--nodes N] [--fabric tworack|duplex]
#        [--scale S] [--iters N] [--modes "fifo mercury mercury-dscp"] [--interval S]
#        [--mercury-args "ARGS"] [--label L] [--out DIR]
# --mercury-args: more mercury-ps options for both Mercury modes (e.g. "--pulls-alike");
# --label L names the modes' folders and rows <mode>-L: variants side by side in one DIR (one
# model and fabric a DIR: its ideal line is written once).
# Defaults: vgg16, 8 nodes, two racks, scale 50, 6 iterations, all three modes, 0.01 s.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"

MODEL=vgg16 NODES=8 FABRIC=tworack SCALE=50 ITERS=6 MODES="fifo mercury mercury-dscp"
INTERVAL=0.01 MERCURY_ARGS="" LABEL="" PORT_QUEUES=${PORT_QUEUES:-8} OUT=${OUT:-$CL_ROOT/build/port-trace}
while [ $# -gt 0 ]; do
	case $1 in
	--model) MODEL=$2; shift ;;
	--nodes) NODES=$2; shift ;;
	--fabric) FABRIC=$2; shift ;;
	--scale) SCALE=$2; shift ;;
	--iters) ITERS=$2; shift ;;
	--modes) MODES=$2; shift ;;
	--interval) INTERVAL=$2; shift ;;
	--mercury-args) MERCURY_ARGS=$2; shift ;;
	--label) LABEL=$2; shift ;;
	--out) OUT=$2; shift ;;
	-h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "port-trace: unknown option $1 (--help)" >&2; exit 2 ;;
	esac
	shift
done
[ -f "$CL_ROOT/models/$MODEL.prof" ] || { echo "port-trace: no model '$MODEL' in models/" >&2; exit 2; }
for v in NODES ITERS SCALE; do
	[[ ${!v} =~ ^[1-9][0-9]*$ ]] || { echo "port-trace: --${v,,} takes a count >= 1" >&2; exit 2; }
done
case $FABRIC in tworack | duplex) ;; *) echo "port-trace: --fabric is tworack or duplex" >&2; exit 2 ;; esac
for m in $MODES; do
	case $m in fifo | mercury | mercury-dscp) ;; *) echo "port-trace: unknown mode '$m' (fifo, mercury, mercury-dscp)" >&2; exit 2 ;; esac
done
[[ $INTERVAL =~ ^0\.[0-9]+$ ]] || { echo "port-trace: --interval takes seconds below 1 (e.g. 0.01)" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "port-trace: needs root (namespaces)" >&2; exit 77; }
[ -x "$PS_BIN" ] && [ -x "$MERCURYD" ] || { echo "port-trace: run make first" >&2; exit 1; }
RATE=$((10000 / SCALE))
[[ $LABEL =~ ^[A-Za-z0-9_.-]*$ ]] || { echo "port-trace: --label takes letters, digits, . _ -" >&2; exit 2; }
mkdir -p "$OUT"
touch "$OUT/results.jsonl"
export CL_DSCP=1 CL_FABRIC=$FABRIC CL_PORT_QUEUES=1 CL_PORT_BUF_REAL=2097152

cluster_up "$NODES" "$RATE" mercuryd 2> >(grep -v quantum >&2) || exit 1
serve_start || exit 1
model_params "$MODEL" "$SCALE" "$ITERS" || exit 1
cluster_fabric_shrink "$MODEL_K" || exit 1
ports=() rates=()
for ((i = 0; i < NODES; i++)); do ports+=("s$i") rates+=("$RATE"); done
if [ "$FABRIC" = tworack ]; then
	ports+=(u0 u1) rates+=("$CL_UPLINK_MBIT" "$CL_UPLINK_MBIT")
fi
grep -q '"label":"ideal"' "$OUT/results.jsonl" ||
	model_ideal "$MODEL" | jq -c --arg f "$(fabric_desc)" '. + {label: "ideal", fabric: $f}' >>"$OUT/results.jsonl"
# a process in the switch's namespace names it to the sampler (nsenter execs it: $! is it)
nsenter --net=/var/run/netns/"${CL_PFX}sw" sleep 3600 &
anchor=$!
CL_PIDS+=("$anchor")
conns=16
[ "$FABRIC" = tworack ] && conns=4 # fabric.sh's DSCP_CONNS on two racks
for mode in $MODES; do
	label=$mode${LABEL:+-$LABEL}
	d=$OUT/$label
	rm -rf "$d" && mkdir -p "$d" || exit 1
	# a label run again replaces its row
	jq -c --arg l "$label" 'select(.label != $l)' "$OUT/results.jsonl" >"$OUT/results.tmp" &&
		mv "$OUT/results.tmp" "$OUT/results.jsonl"
	q=1 args=("${MODEL_ARGS[@]}") ps_mode=$mode
	[ "$mode" = mercury-dscp ] && q=$PORT_QUEUES ps_mode=mercury args+=(--conns "$conns")
	# shellcheck disable=SC2206
	[ "$ps_mode" = mercury ] && args+=($MERCURY_ARGS)
	cluster_ports "$q" || exit 1
	jq -n -c --arg ports "${ports[*]}" --arg rates "${rates[*]}" --argjson interval "$INTERVAL" \
		'{ports: ($ports | split(" ")), rate_mbit: ($rates | split(" ") | map(tonumber)), interval: $interval}' \
		>"$d/ports.json"
	"$CL_PY" "$CL_ROOT/bench/link_sample.py" --pid "$anchor" --iface "$(IFS=,; echo "${ports[*]}")" \
		--interval "$INTERVAL" --stop "$d/stop" >"$d/ports.tsv" &
	sampler=$!
	saved=("${CL_PIDS[@]}")
	CL_PIDS+=("$sampler")
	# every node's per-layer timeline beside the samples ($d/<mode>.<model>.tl.<node>)
	CL_KEEP_TIMELINES=$d CL_KEEP_ALL_NODES=1 CL_DSCP_CONNS=0 \
		run_cell "$d/run.jsonl" "$label" "$MODEL" "$ps_mode" "${args[@]}"
	touch "$d/stop"
	wait "$sampler" || { echo "port-trace: $mode: the port sampler failed" >&2; exit 1; }
	CL_PIDS=("${saved[@]}")
	cat "$d/run.jsonl" >>"$OUT/results.jsonl"
	echo "port-trace: $label done: $(jq -r '"\(.iter_s * 1000 | round / 1000) s an iteration"' "$d/run.jsonl")" >&2
done
cluster_down
"$CL_PY" "$here/port_trace_report.py" "$OUT" | tee "$OUT/report.md"
