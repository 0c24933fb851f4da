#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Where the link's time goes in real training: one traced run per mode on 2 nodes of the
# emulated cluster (as bench/torch_bench.sh runs them), with each node's bytes sent sampled
# every 5 ms (bench/link_sample.py) beside each trainer's forward/backward stamps
# (torch_train.py --phases) and, in the PS modes, the PS timeline; then per rank the link's
# use in forward and in backward passes and a strip of the last iterations
# (bench/torch_trace_report.py). 100 % is a bulk transfer on the same link.
#   bench/torch_trace.sh [MODE ...]   (modes: fifo partition mercury ddp; default mercury ddp)
#   MODEL=resnet18 BATCH=8 IMAGE=224 RATE=400 ITERS=8 WARMUP=2 BUCKET_MB=5 OUTDIR=build/torch-trace
#   TRAIN_ARGS="--conns 1": more torch_train.py options for every mode's trainers
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/torch_preflight.sh"
torch_preflight torch-trace 10 "$@"
modes=("$@")
[ ${#modes[@]} -gt 0 ] || modes=(mercury ddp)
for m in "${modes[@]}"; do
	case "$m" in fifo | partition | mercury | ddp) ;;
	*) echo "torch-trace: unknown mode '$m' (fifo, partition, mercury, ddp)" >&2; exit 2 ;;
	esac
done
CL_PFX=mtt$$
. "$here/../cluster/lib.sh"
MODEL=${MODEL:-resnet18} BATCH=${BATCH:-8} IMAGE=${IMAGE:-224} RATE=${RATE:-400}
ITERS=${ITERS:-8} WARMUP=${WARMUP:-2} BUCKET_MB=${BUCKET_MB:-5}
OUTDIR=${OUTDIR:-$CL_ROOT/build/torch-trace}
read -ra train_args <<<"${TRAIN_ARGS:-}"
export CL_TORCH_ENV="$CL_TORCH_MALLOC_ENV" # bench-torch's trainer environment

cluster_up 2 "$RATE" mercuryd || exit 1
serve_start || exit 1
daemons=("${CL_PIDS[@]: -2}") # one process in each node's namespace: mercuryd serve
ref=$(link_reference "$RATE" | jq .egress_mbit) || exit 1
echo "torch-trace: $MODEL ${IMAGE}x$IMAGE batch $BATCH, $RATE Mbit/s (bulk TCP counts $ref)"
for mode in "${modes[@]}"; do
	d=$OUTDIR/$mode
	rm -rf "$d" && mkdir -p "$d" || exit 1
	"$CL_PY" "$here/link_sample.py" --pid "${daemons[0]}" --pid "${daemons[1]}" \
		--stop "$d/stop" >"$d/link.tsv" &
	sampler=$!
	saved=("${CL_PIDS[@]}")
	CL_PIDS+=("$sampler") # killed at teardown if the script ends early
	extra=(--bucket-mb "$BUCKET_MB")
	[ "$mode" = ddp ] || extra=(--timeline "$d")
	run_torch "$d" "$here/torch_train.py" --model "$MODEL" --batch "$BATCH" --image "$IMAGE" \
		--mode "$mode" --iters "$ITERS" --warmup "$WARMUP" --out "$d" --phases "$d" "${extra[@]}" \
		"${train_args[@]}"
	rc=$?
	touch "$d/stop"
	wait "$sampler"
	CL_PIDS=("${saved[@]}")
	if [ "$rc" -ne 0 ]; then
		echo "torch-trace: $mode failed:" >&2
		tail -n 5 "$d"/node*.log >&2
		continue
	fi
	echo
	echo "== $mode: $(jq -sr 'max_by(.iter_s) | "\(.iter_s * 1000 | round / 1000) s an iteration (slower rank), step-to-step \(.step_median_s * 1000 | round / 1000)"' "$d"/rank*.json)"
	"$CL_PY" "$here/torch_trace_report.py" "$d" "$ref" --skip "$WARMUP"
done
echo
echo "torch-trace: samples, stamps and timelines in $OUTDIR/<mode>/"
