#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The baseline tuned as a user of ByteScheduler would tune it, against untuned Mercury, on
# the emulated cluster (issue 17). Per model and case:
#   1. the (P, C) grid of partition mode, once per cell: P (partition, parameters) in
#      125K 250K 500K 1M 2M x C/P in 2 4 8 16 with C <= 16M, plus (4M, 16M);
#   2. the TOP (3) fastest cells, fifo and mercury, REPEAT (3) times in turn (fifo, mercury,
#      top 1, top 2, top 3, fifo, ...); each mode's median picks the best partition.
# Then, optionally, the per-op start-up cost swept (--op-costs) and a link whose rate changes
# during the run (--varying M; VARY_RATES, VARY_ITERS), both with the partition cell tuned
# for the model's mxnet case (so run that case in the same --out first).
# Results: $OUT/<model>.<case>.jsonl, <model>.opcost.jsonl, <model>.varying.jsonl; tables by
# cluster/tune_report.py into $OUT/tune.md.
#
# Cases: mxnet (MXNet placement at 10 GbE / SCALE), bal (compute scaled to comm = compute),
# split (every array, and so every partition, sliced over all servers: bench.sh's second
# table), balanced (arrays up to MXNet's bound placed whole on the server holding the fewest
# parameters so far, mercury.torch's default, for every mode: partitions too).
# Sizes and credits are in the model's original parameters (divided by the shrink, as every
# size in cluster/bench.sh).
#
# Usage: cluster/tune.sh [--models "vgg16 resnet50"] [--cases "mxnet bal split balanced"] [--iters N]
#        [--repeat N] [--top N] [--grid "P:C ..."] [--op-costs "0 50 200 1000"]
#        [--op-cost-model M] [--varying M] [--out DIR] [--nodes N] [--scale S]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"

MODELS="vgg16 resnet50" CASES="mxnet bal" NODES=4 SCALE=25 ITERS=8 REPEAT=3 TOP=3
OUT=${OUT:-$CL_ROOT/build/tune}
OP_COSTS="" OP_MODEL="" VARYING=""
GRID=""
for p in 125000 250000 500000 1000000 2000000; do
	for r in 2 4 8 16; do
		[ $((p * r)) -le 16000000 ] && GRID+="$p:$((p * r)) "
	done
done
GRID+="4000000:16000000"
while [ $# -gt 0 ]; do
	case $1 in
	--models) MODELS=$2; shift ;;
	--cases) CASES=$2; shift ;;
	--iters) ITERS=$2; shift ;;
	--repeat) REPEAT=$2; shift ;;
	--top) TOP=$2; shift ;;
	--grid) GRID=$2; shift ;;
	--op-costs) OP_COSTS=$2; shift ;;
	--op-cost-model) OP_MODEL=$2; shift ;;
	--varying) VARYING=$2; shift ;;
	--out) OUT=$2; shift ;;
	--nodes) NODES=$2; shift ;;
	--scale) SCALE=$2; shift ;;
	-h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "tune: unknown option $1 (see --help)" >&2; exit 2 ;;
	esac
	shift
done
for c in $CASES; do
	case $c in mxnet | bal | split | balanced) ;; *) echo "tune: unknown case $c (mxnet, bal, split, balanced)" >&2; exit 2 ;; esac
done
for v in ITERS REPEAT TOP NODES SCALE; do
	[[ ${!v} =~ ^[1-9][0-9]*$ ]] || { echo "tune: --${v,,} takes a count >= 1" >&2; exit 2; }
done
[ "$(id -u)" -eq 0 ] || { echo "tune: needs root (namespaces)" >&2; exit 77; }
[ -x "$PS_BIN" ] && [ -x "$MERCURYD" ] || { echo "tune: build first (make)" >&2; exit 1; }
RATE=$((10000 / SCALE))
mkdir -p "$OUT"
start=$(date +%s)

# args_of MODEL CASE: the mercury-ps arguments every mode of a cell shares.
args_of() {
	local model=$1 case=$2 k ts f
	k=$(shrink_of "$model")
	ts=$(echo "$SCALE / $k" | bc -l)
	if [ "$case" = bal ]; then
		f=$("$PS_BIN" ideal --profile "$CL_ROOT/models/$model.prof" --nodes "$NODES" \
			--rate 10gbit | jq '.comm_only_s / .compute_only_s')
		ts=$(echo "$ts * $f" | bc -l)
	fi
	echo --iters "$ITERS" --warmup 1 --shrink "$k" --time-scale "$ts" $(place_of "$case")
}

# place_of CASE: the placement flag of a case (the ideal's too).
place_of() {
	case $1 in split) echo --split-all ;; balanced) echo --placement balanced ;; esac
}

# part_args MODEL P C: partition sizes at the model's shrink.
part_args() {
	local k
	k=$(shrink_of "$1")
	echo --part $(($2 / k)) --credit $(($3 / k))
}

# best_cells FILE LABEL_PREFIX N: the N fastest "P:C" among the successful runs of a prefix.
best_cells() {
	jq -r --arg p "$2" 'select(.ok and (.label | startswith($p))) | "\(.iter_s) \(.label)"' "$1" |
		sort -g | head -n "$3" | sed "s/^[^ ]* $2//"
}

# The model's scaled RTO, and its port buffer (full duplex: CL_PORT_BUF_REAL shrunk like the
# model, as cluster/fabric.sh sets it), so that the grid is tuned on the fabric of the
# fabric.sh cells it is compared with.
rto_for() {
	cluster_rto_scaled "$(echo "$SCALE / $(shrink_of "$1")" | bc -l)" &&
		cluster_fabric_shrink "$(shrink_of "$1")"
}

cluster_up "$NODES" "$RATE" mercuryd || exit 1
serve_start || exit 1
# the bound counts the rack uplink where there is one (CL_FABRIC=tworack), as model_ideal does
UPLINK=()
[ "$CL_FABRIC" = tworack ] && UPLINK=(--uplink "${CL_UPLINK_MBIT}mbit")

for model in $MODELS; do
	rto_for "$model" || exit 1
	for case in $CASES; do
		f=$OUT/$model.$case.jsonl
		: >"$f"
		read -ra args <<<"$(args_of "$model" "$case")"
		ts=${args[7]}
		read -ra place <<<"$(place_of "$case")"
		"$PS_BIN" ideal --profile "$CL_ROOT/models/$model.prof" --nodes "$NODES" \
			--rate "${RATE}mbit" --shrink "$(shrink_of "$model")" --time-scale "$ts" \
			"${place[@]}" "${UPLINK[@]}" | jq -c '. + {label: "ideal", ok: true}' >>"$f"
		t0=$(date +%s)
		REP=0
		for pc in $GRID; do
			read -ra pa <<<"$(part_args "$model" "${pc%%:*}" "${pc##*:}")"
			run_cell "$f" "grid:$pc" "$model" partition "${args[@]}" "${pa[@]}"
		done
		echo "{\"label\":\"grid-cost\",\"wall_s\":$(($(date +%s) - t0))}" >>"$f"
		mapfile -t top < <(best_cells "$f" grid: "$TOP")
		for pc in "${top[@]}"; do # the bound under each cell's own placement
			read -ra pa <<<"$(part_args "$model" "${pc%%:*}" "${pc##*:}")"
			"$PS_BIN" ideal --profile "$CL_ROOT/models/$model.prof" --nodes "$NODES" \
				--rate "${RATE}mbit" --shrink "$(shrink_of "$model")" --time-scale "$ts" \
				"${place[@]}" "${UPLINK[@]}" --mode partition "${pa[@]}" | jq -c --arg l "ideal:$pc" '. + {label: $l, ok: true}' >>"$f"
		done
		for ((REP = 0; REP < REPEAT; REP++)); do
			run_cell "$f" fifo "$model" fifo "${args[@]}"
			run_cell "$f" mercury "$model" mercury "${args[@]}" --bands "$CL_BANDS"
			for pc in "${top[@]}"; do
				read -ra pa <<<"$(part_args "$model" "${pc%%:*}" "${pc##*:}")"
				run_cell "$f" "top:$pc" "$model" partition "${args[@]}" "${pa[@]}"
			done
		done
		echo "tune: $model $case done ($(($(date +%s) - start)) s so far)" >&2
	done
done

# The partition cell tuned for MODEL's mxnet case (median of its repeated runs).
tuned_cell() {
	jq -rs 'map(select(.ok and (.label | startswith("top:")))) | group_by(.label) |
		map({l: .[0].label, m: (map(.iter_s) | sort | .[(length - 1) / 2 | floor])}) |
		sort_by(.m) | .[0].l // empty' "$OUT/$1.mxnet.jsonl" 2>/dev/null | sed 's/^top://'
}

if [ -n "$OP_COSTS" ] && [ -n "$OP_MODEL" ]; then
	pc=$(tuned_cell "$OP_MODEL")
	pc=${pc:-1000000:4000000}
	f=$OUT/$OP_MODEL.opcost.jsonl
	: >"$f"
	rto_for "$OP_MODEL" || exit 1
	read -ra args <<<"$(args_of "$OP_MODEL" mxnet)"
	read -ra pa <<<"$(part_args "$OP_MODEL" "${pc%%:*}" "${pc##*:}")"
	for ((REP = 0; REP < REPEAT; REP++)); do
		for c in $OP_COSTS; do
			run_cell "$f" "fifo@$c" "$OP_MODEL" fifo "${args[@]}" --op-cost "$c"
			run_cell "$f" "mercury@$c" "$OP_MODEL" mercury "${args[@]}" --bands "$CL_BANDS" \
				--op-cost "$c"
			run_cell "$f" "partition:$pc@$c" "$OP_MODEL" partition "${args[@]}" "${pa[@]}" \
				--op-cost "$c"
		done
	done
fi

# A link whose rate changes during the run (the TPDS paper's case): every node's egress
# cycles through VARY_RATES ("Mbit/s:seconds" ...; emulated seconds), from the run's start.
# Partition keeps the cell tuned at the fixed rate, mercury stays untuned; the report gives
# per-phase iteration times (iterations that lie wholly inside one phase).
VARY_RATES=${VARY_RATES:-"$RATE:16 $((RATE / 4)):32"}
VARY_ITERS=${VARY_ITERS:-16}
set_rate() {
	local i
	for ((i = 0; i < CL_NODES; i++)); do
		cl_in "$i" tc class change dev e0 parent 4d45: classid 4d45:1 htb rate "${1}mbit" \
			ceil "${1}mbit" burst 64k cburst 64k || return 1
	done
}
rate_cycler() {
	local log=$1 r
	for ((;;)); do
		for r in $VARY_RATES; do
			set_rate "${r%%:*}"
			echo "$(/usr/bin/python3 -c 'import time; print(time.monotonic())') ${r%%:*}" >>"$log"
			sleep "${r##*:}"
		done
	done
}
if [ -n "$VARYING" ]; then
	pc=$(tuned_cell "$VARYING")
	pc=${pc:-1000000:4000000}
	f=$OUT/$VARYING.varying.jsonl
	: >"$f"
	rto_for "$VARYING" || exit 1
	read -ra args <<<"$(args_of "$VARYING" mxnet)"
	args[1]=$VARY_ITERS
	read -ra pa <<<"$(part_args "$VARYING" "${pc%%:*}" "${pc##*:}")"
	for r in $VARY_RATES; do
		"$PS_BIN" ideal --profile "$CL_ROOT/models/$VARYING.prof" --nodes "$NODES" \
			--rate "${r%%:*}mbit" --shrink "$(shrink_of "$VARYING")" --time-scale "${args[7]}" |
			jq -c --argjson r "${r%%:*}" '. + {label: "ideal", rate: $r}' >>"$f"
	done
	for ((REP = 0; REP < REPEAT; REP++)); do
		for m in fifo mercury "partition:$pc"; do
			log=$(mktemp)
			rate_cycler "$log" &
			cyc=$!
			CL_PIDS+=("$cyc")
			case $m in
			fifo) run_cell "$f" fifo "$VARYING" fifo "${args[@]}" ;;
			mercury) run_cell "$f" mercury "$VARYING" mercury "${args[@]}" --bands "$CL_BANDS" ;;
			*) run_cell "$f" "$m" "$VARYING" partition "${args[@]}" "${pa[@]}" ;;
			esac
			kill "$cyc" 2>/dev/null
			wait "$cyc" 2>/dev/null
			unset 'CL_PIDS[-1]'
			jq -Rn --arg m "$m" --argjson rep "$REP" \
				'{label: "phases", of: $m, rep: $rep, changes: [inputs | split(" ") | map(tonumber)]}' \
				<"$log" -c >>"$f"
			rm -f "$log"
		done
	done
	set_rate "$RATE"
fi

cluster_down
/usr/bin/python3 "$here/tune_report.py" "$OUT" | tee "$OUT/tune.md"
echo "tune: $(($(date +%s) - start)) s in all" >&2
