#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Mercury's settings on DSCP strict-priority switch ports, side by side (not in CI): one
# full-duplex cluster whose nodes write each packet's level as DSCP, REPEAT runs of every
# variant in turn per model, mercury on FIFO ports first as the reference. It answers which
# connection layout and window a DSCP fabric wants (cluster/RESULTS.md, "DSCP settings side
# by side"; docs/fabric.md's incast rule: window x connections x (N - 1) <= the port buffer).
#
# A variant is LABEL:GUARD:ARGS
#   GUARD  on|off: the fabric order guard (mercuryd attach --dscp-guard)
#   ARGS   extra mercury-ps arguments, words split on spaces; empty: connections by switch
#          queue (run_ps's --dscp-queues, one socket per DSCP queue); anything else: the
#          connections mercury-ps is given (e.g. "--conns 16 --rcvbuf 4096"), by layer group
# Default variants: queues:on:  queues-noguard:off:  conns16:on:--conns 16
#                   conns16-noguard:off:--conns 16
#
# --fifo-variant LABEL:ARGS: also mercury on FIFO ports with ARGS, after the reference (e.g.
# "fifo-ports-alike:--pulls-alike").
#
# --buffer BYTES: each switch port's buffer in real bytes, shrunk per model like bench-fabric's
# sweep (default 2097152, lib.sh's CL_PORT_BUF_REAL; the environment's value is not used).
#
# --tworack: two racks of N/2 nodes joined by an uplink of N/2 x rate / 2 each way (2:1, as
# bench-fabric's two-rack cells), its queues the switch ports' (FIFO or DSCP).
#
# Usage: cluster/dscp_settings.sh [--models "resnet50 ..."] [--nodes N] [--repeat N]
#        [--iters N] [--scale S] [--queues Q] [--variant LABEL:GUARD:ARGS]...
#        [--fifo-variant LABEL:ARGS]... [--buffer BYTES] [--tworack] [--out DIR]
# Prints one table (cluster/fabric_report.py's format is per mode; this one per variant) and
# leaves DIR/results.jsonl.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"

MODELS="resnet50 vgg16" NODES=4 REPEAT=2 ITERS=6 SCALE=25 QUEUES=8 FABRIC=duplex BUFFER=2097152
OUT=${OUT:-$CL_ROOT/build/bench-dscp-settings}
VARIANTS=() FIFO_VARIANTS=()
while [ $# -gt 0 ]; do
	case $1 in
	--models) MODELS=$2; shift ;;
	--nodes) NODES=$2; shift ;;
	--repeat) REPEAT=$2; shift ;;
	--iters) ITERS=$2; shift ;;
	--scale) SCALE=$2; shift ;;
	--queues) QUEUES=$2; shift ;;
	--variant) VARIANTS+=("$2"); shift ;;
	--fifo-variant) FIFO_VARIANTS+=("$2"); shift ;;
	--buffer) BUFFER=$2; shift ;;
	--tworack) FABRIC=tworack ;;
	--out) OUT=$2; shift ;;
	-h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "dscp-settings: unknown option $1 (--help)" >&2; exit 2 ;;
	esac
	shift
done
[ ${#VARIANTS[@]} -gt 0 ] ||
	VARIANTS=("queues:on:" "queues-noguard:off:" "conns16:on:--conns 16" "conns16-noguard:off:--conns 16")
for n in NODES REPEAT ITERS SCALE QUEUES BUFFER; do
	[[ ${!n} =~ ^[1-9][0-9]*$ ]] || { echo "dscp-settings: --${n,,} takes a count >= 1" >&2; exit 2; }
done
[ "$QUEUES" -ge 2 ] && [ "$QUEUES" -le 8 ] || { echo "dscp-settings: --queues takes 2-8" >&2; exit 2; }
for v in "${VARIANTS[@]}"; do
	IFS=: read -r label guard _ <<<"$v"
	[[ $label =~ ^[A-Za-z0-9_.+-]+$ ]] && [[ $guard =~ ^(on|off)$ ]] ||
		{ echo "dscp-settings: bad variant '$v': LABEL:on|off:ARGS" >&2; exit 2; }
done
for v in "${FIFO_VARIANTS[@]}"; do
	[[ ${v%%:*} =~ ^[A-Za-z0-9_.+-]+$ ]] && [[ $v == *:* ]] ||
		{ echo "dscp-settings: bad FIFO variant '$v': LABEL:ARGS" >&2; exit 2; }
done
[ "$(id -u)" -eq 0 ] || { echo "dscp-settings: needs root (namespaces)" >&2; exit 77; }
[ -x "$PS_BIN" ] && [ -x "$MERCURYD" ] || { echo "dscp-settings: run make first" >&2; exit 1; }
RATE=$((10000 / SCALE))
mkdir -p "$OUT"
res=$OUT/results.jsonl
: >"$res"
export CL_DSCP=1
CL_PORT_QUEUES=1 CL_PORT_BUF_REAL=$BUFFER CL_FABRIC=$FABRIC
trap cluster_down EXIT
cluster_up "$NODES" "$RATE" mercuryd 2> >(grep -v quantum >&2) || exit 1
serve_start || exit 1
for model in $MODELS; do
	model_setup "$model" "$SCALE" "$ITERS" "$res" || exit 1
	cluster_fabric_shrink "$MODEL_K" || exit 1
	args=("${MODEL_ARGS[@]}")
	for ((REP = 0; REP < REPEAT; REP++)); do
		cluster_dscp_guard on >/dev/null || exit 1
		cluster_ports 1 || exit 1
		run_cell "$res" fifo-ports "$model" mercury "${args[@]}" || exit 1
		for v in "${FIFO_VARIANTS[@]}"; do
			# shellcheck disable=SC2086 # ARGS are words
			run_cell "$res" "${v%%:*}" "$model" mercury "${args[@]}" ${v#*:} || exit 1
		done
		cluster_ports "$QUEUES" || exit 1
		for v in "${VARIANTS[@]}"; do
			IFS=: read -r label guard extra <<<"$v"
			cluster_dscp_guard "$guard" >/dev/null || exit 1
			if [ -z "$extra" ]; then
				run_cell "$res" "$label" "$model" mercury "${args[@]}" || exit 1
			else
				# shellcheck disable=SC2086 # ARGS are words
				CL_DSCP_CONNS=0 run_cell "$res" "$label" "$model" mercury "${args[@]}" $extra ||
					exit 1
			fi
		done
	done
	echo "dscp-settings: $model done" >&2
done
REP=0
labels="fifo-ports"
for v in "${FIFO_VARIANTS[@]}"; do labels+=" ${v%%:*}"; done
for v in "${VARIANTS[@]}"; do labels+=" ${v%%:*}"; done
# Median of the runs per model and variant, each run's range, retransmissions and timeouts
fabric=$([ "$FABRIC" = tworack ] && echo "two racks, 2:1 uplink" || echo "full duplex")
jq -rs --arg labels "$labels" --arg ce 0 -f "$here/variant_table.jq" --arg heading \
	"$NODES nodes, $RATE Mbit/s, $fabric, $QUEUES DSCP queues, ports of $BUFFER real bytes (fifo-ports: FIFO switch ports); median s an iteration (range) [retransmitted segments/timeouts per run]" \
	"$res" | tee "$OUT/table.md"
