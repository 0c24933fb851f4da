#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Whether a trainer computes slower in mercury mode than in fifo (issue 34, item 4): 2 nodes
# of the emulated cluster as bench/torch_bench.sh runs them, fifo and mercury alternating in
# rounds, each round once as usual (both trainers, their PS threads, both mercury-ps serve and
# the network stack share the two cores) and once with rank 0's main thread alone on the
# first CPU after the warm-up (torch_train.py --pin-main: everything else on the others).
# Per run rank 0's compute (forward and backward less its waits, median) and its main
# thread's CPU seconds an iteration; then per layout the paired mercury/fifo ratios of each
# round, their median and a sign test (bench/torch_compute_report.py).
#   MODEL=resnet18 BATCH=8 IMAGE=224 RATE=400 REPEAT=5 ITERS=8 WARMUP=2 LAYOUTS="shared pinned"
#   OUT=build/torch-compute.jsonl
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/torch_preflight.sh"
torch_preflight torch-compute 13 "$@"
CL_PFX=mtc$$
. "$here/../cluster/lib.sh"
MODEL=${MODEL:-resnet18} BATCH=${BATCH:-8} IMAGE=${IMAGE:-224} RATE=${RATE:-400}
REPEAT=${REPEAT:-5} ITERS=${ITERS:-8} WARMUP=${WARMUP:-2} LAYOUTS=${LAYOUTS:-shared pinned}
OUT=${OUT:-$CL_ROOT/build/torch-compute.jsonl}
for l in $LAYOUTS; do
	case "$l" in shared | pinned) ;;
	*) echo "torch-compute: unknown layout '$l' (shared, pinned)" >&2; exit 2 ;;
	esac
done
export CL_TORCH_ENV="$CL_TORCH_MALLOC_ENV" # bench-torch's trainer environment
work=$(mktemp -d)
trap 'rm -rf "$work"; cluster_down' EXIT
: >"$OUT"

cluster_up 2 "$RATE" mercuryd || exit 1
serve_start || exit 1
echo "torch-compute: $MODEL ${IMAGE}x$IMAGE batch $BATCH, $RATE Mbit/s, $REPEAT rounds"
for ((round = 0; round < REPEAT; round++)); do
	for layout in $LAYOUTS; do
		pin=()
		[ "$layout" = pinned ] && pin=(--pin-main)
		for mode in fifo mercury; do
			d=$work/run
			rm -rf "$d" && mkdir -p "$d" || exit 1
			if ! run_torch "$d" "$here/torch_train.py" --model "$MODEL" --batch "$BATCH" \
				--image "$IMAGE" --mode "$mode" --iters "$ITERS" --warmup "$WARMUP" \
				--out "$d" "${pin[@]}"; then
				echo "torch-compute: $mode ($layout) failed:" >&2
				tail -n 5 "$d"/node*.log >&2
				exit 1
			fi
			jq -c --arg layout "$layout" --argjson round "$round" --argjson rate "$RATE" \
				'{round: $round, layout: $layout, rate_mbit: $rate, mode, iter_s,
				  compute_median_s, main_thread_cpu_s_per_iter, wait_s_per_iter,
				  cpu_by_thread, main_thread_sched_per_iter}' "$d/rank0.json" | tee -a "$OUT"
		done
	done
done
/usr/bin/python3 "$here/torch_compute_report.py" "$OUT"
