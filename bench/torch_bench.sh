#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Real training, 2 nodes of the emulated cluster (namespaces, each node's egress shaped by
# mercuryd's htb tree to RATE), one 1-thread trainer per node launched by torch.distributed.run:
# a torchvision model on synthetic data through mercury.torch (fifo, partition, mercury) and
# through PyTorch's DistributedDataParallel over gloo, against the ideal bound of the model's
# measured profile. Per rate: a tuning pass (one run per cell) picks partition's best
# (part, credit) and DDP's best bucket_cap_mb, then REPEAT rounds run every mode in turn.
# Prints one JSON line per run and a table of medians.
#   MODEL=resnet18 BATCH=8 IMAGE=224 RATES="100 200 400 800" REPEAT=3 ITERS=8 WARMUP=2
#   A rate "equal" is the one where the model's communication alone (mercury-ps ideal's
#   comm_only_s) takes as long as its compute measured here, whatever this machine's speed.
#   SIDE="LABEL:ARGS": instead of every mode, mercury against mercury with the trainer's
#   ARGS (e.g. "alike:--pulls-alike"), REPEAT rounds in turn, no tuning pass; medians printed.
#   MALLOC_TUNED=1: every trainer, DDP's too, keeps freed memory in glibc's heap instead of
#   unmapping big blocks (MALLOC_MMAP_THRESHOLD_ / MALLOC_TRIM_THRESHOLD_ 1 GiB): on this VM
#   the page faults of re-mapping them cost resnet18 b8 ~25 % of a step (21k faults a step,
#   0.87 s against 0.65 s, plain PyTorch on one thread). 0: glibc's defaults.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
[ "$(id -u)" -eq 0 ] || { echo "bench-torch: needs root (namespaces)" >&2; exit 1; }
/usr/bin/python3 -c 'import torch, torchvision' || { echo "bench-torch: run make deps" >&2; exit 1; }
CL_PFX=mtb$$
. "$here/../cluster/lib.sh"
MODEL=${MODEL:-resnet18} BATCH=${BATCH:-8} IMAGE=${IMAGE:-224}
RATES=${RATES:-100 200 400 800} REPEAT=${REPEAT:-3} ITERS=${ITERS:-8} WARMUP=${WARMUP:-2}
PART_GRID=${PART_GRID:-250000:1000000 4000000:16000000}
DDP_GRID=${DDP_GRID:-5 100}
OUT=${OUT:-$CL_ROOT/build/bench-torch-$MODEL.jsonl}
SIDE=${SIDE:-}
[ -z "$SIDE" ] || [[ $SIDE =~ ^[a-z0-9-]+:.+$ ]] || { echo "bench-torch: SIDE takes LABEL:ARGS" >&2; exit 2; }
MALLOC_TUNED=${MALLOC_TUNED:-1}
[ "$MALLOC_TUNED" = 1 ] &&
	export CL_TORCH_ENV="$CL_TORCH_MALLOC_ENV" &&
	export $CL_TORCH_MALLOC_ENV # two assignments, split on purpose: the profile too
work=$(mktemp -d)
trap 'rm -rf "$work"; cluster_down' EXIT
trainer=$here/torch_train.py
: >"$OUT"

prof=$work/$MODEL.prof
OPENBLAS_NUM_THREADS=1 /usr/bin/python3 "$trainer" --model "$MODEL" --batch "$BATCH" \
	--image "$IMAGE" --profile "$prof" || exit 1
compute=$(awk '/^layer/ { t += $4 + $5 } END { printf "%.3f", t }' "$prof")
params=$(awk '/^layer/ { p += $3 } END { print p }' "$prof")
echo "bench-torch: $MODEL ${IMAGE}x$IMAGE batch $BATCH: $params parameters ($((params * 4 / 1000000)) MB of gradients), compute $compute s a step on one thread here"
# mercury.torch's placement (every PS mode alike), for the ideal bound of the same layout
PLACEMENT=$(/usr/bin/python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import mercury.torch as mt; print(mt.DEFAULT_PLACEMENT)' "$CL_ROOT/python")
ideal_of() { # MBIT [ideal's options...]: mercury-ps ideal's JSON for this model on 2 nodes
	local rate=$1
	shift
	"$CL_ROOT/build/mercury-ps" ideal --profile "$prof" --nodes 2 --rate "${rate}mbit" \
		--placement "$PLACEMENT" "$@"
}
comm_1g=$(ideal_of 1000 | jq .comm_only_s)
RATES=$(for r in $RATES; do
	if [ "$r" = equal ]; then awk -v c="$comm_1g" -v t="$compute" 'BEGIN { printf "%d ", 1000 * c / t + 0.5 }'; else printf '%s ' "$r"; fi
done)
echo "bench-torch: rates $RATES(Mbit/s; communication alone at 1 Gbit/s: $comm_1g s)"

# one RATE LABEL MODE [trainer args...]: one run, one JSON line (the slower rank's time).
one() {
	local rate=$1 label=$2 mode=$3 d=$work/run
	shift 3
	rm -rf "$d"
	mkdir -p "$d"
	if ! run_torch "$d" "$trainer" --model "$MODEL" --batch "$BATCH" --image "$IMAGE" \
		--mode "$mode" --iters "$ITERS" --warmup "$WARMUP" --out "$d" "$@"; then
		echo "bench-torch: $label at $rate Mbit/s failed:" >&2
		tail -n 5 "$d"/node*.log >&2
		return 1
	fi
	jq -sc --arg lbl "$label" --argjson rate "$rate" \
		'(max_by(.iter_s)) + {"label": $lbl, "rate_mbit": $rate, "compute_s": '"$compute"',
		  "malloc_tuned": '"$MALLOC_TUNED"'}' \
		"$d"/rank*.json | tee -a "$OUT"
}

best_of() { # FILE: label of the fastest line
	jq -rs 'min_by(.iter_s) | .label' "$1"
}

for rate in $RATES; do
	cluster_up 2 "$rate" mercuryd || exit 1
	serve_start || exit 1
	ideal=$(ideal_of "$rate" | jq .iter_s)
	echo "{\"label\":\"ideal\",\"rate_mbit\":$rate,\"iter_s\":$ideal,\"mode\":\"ideal\"}" | tee -a "$OUT"
	link_reference "$rate" | tee -a "$OUT"
	if [ -n "$SIDE" ]; then
		for ((rep = 0; rep < REPEAT; rep++)); do
			one "$rate" mercury mercury
			# shellcheck disable=SC2086 # the variant's trainer arguments, split
			one "$rate" "${SIDE%%:*}" mercury ${SIDE#*:}
		done
		cluster_down
		continue
	fi
	: >"$work/tune_p" && : >"$work/tune_d"
	for cell in $PART_GRID; do
		one "$rate" "partition-${cell%%:*}-${cell##*:}" partition --part "${cell%%:*}" \
			--credit "${cell##*:}" >>"$work/tune_p"
	done
	for b in $DDP_GRID; do one "$rate" "ddp-$b" ddp --bucket-mb "$b" >>"$work/tune_d"; done
	bp=$(best_of "$work/tune_p") bd=$(best_of "$work/tune_d")
	for ((rep = 0; rep < REPEAT; rep++)); do
		one "$rate" fifo fifo
		one "$rate" partition partition
		p=${bp#partition-}
		one "$rate" "$bp" partition --part "${p%%-*}" --credit "${p##*-}"
		one "$rate" mercury mercury
		one "$rate" ddp-25 ddp --bucket-mb 25
		one "$rate" "$bd" ddp --bucket-mb "${bd#ddp-}"
	done
	# The bound again at the compute the trainers had in this rate's mercury runs (their
	# median compute_median_s over the profile's): on 2 shared cores the other trainer, the
	# PS threads and the network stack take from it, and the updates run inside it.
	scale=$(jq -rs --argjson rate "$rate" --argjson c "$compute" '[.[] |
		select(.label == "mercury" and .rate_mbit == $rate and .compute_median_s != null) |
		.compute_median_s] | sort | select(length > 0) |
		(if length % 2 == 1 then .[length / 2 | floor] else (.[length / 2 - 1] + .[length / 2]) / 2 end) / $c' "$OUT")
	if [ -n "$scale" ]; then
		bound=$(ideal_of "$rate" --time-scale "$scale" | jq .iter_s)
		echo "{\"label\":\"ideal-run\",\"rate_mbit\":$rate,\"iter_s\":$bound,\"mode\":\"ideal\",\"time_scale\":$scale}" | tee -a "$OUT"
	fi
	cluster_down
	trap 'rm -rf "$work"; cluster_down' EXIT
done
if [ -n "$SIDE" ]; then
	jq -rs 'group_by([.rate_mbit, .label])[] | select(.[0].label != "bulk") |
		(map(.iter_s) | sort) as $t | "\(.[0].rate_mbit) Mbit/s \(.[0].label): median " +
		"\($t[($t | length - 1) / 2 | floor]) s an iteration over \($t | length) (\($t | map(tostring) | join(" ")))"' "$OUT"
else
	/usr/bin/python3 "$here/torch_report.py" "$OUT"
fi
