#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Demo: ResNet-50 data-parallel training on a 4-node emulated PS cluster (namespaces, a
# switch namespace, full-duplex 400 Mbit/s links = 10 GbE / 25 with a FIFO switch port of
# 1 MB towards each node (2 MiB real / shrink 2: cluster/lib.sh), compute x 25 / shrink),
# Mercury against vanilla FIFO and ByteScheduler (tensor partitioning with the (P, C) tuned for
# the model on this fabric: cluster/lib.sh's TUNED), next to the ideal bound.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
MODEL=${MODEL:-resnet50} NODES=${NODES:-4} ITERS=${ITERS:-4} SHRINK=${SHRINK:-2}
. "$here/lib.sh"
[ "$(id -u)" -eq 0 ] || { echo "demo: needs root (network namespaces)" >&2; exit 1; }
[ -x "$PS_BIN" ] || { echo "demo: $PS_BIN missing: run make" >&2; exit 1; }
shaper=tc
[ -x "$MERCURYD" ] && "$MERCURYD" serve --help >/dev/null 2>&1 && shaper=mercuryd
ts=$(echo "25 / $SHRINK" | bc -l)
out=$(mktemp)
trap 'rm -f "$out"; cluster_down' EXIT
cluster_up "$NODES" 400 "$shaper" 2> >(grep -v quantum >&2) || exit 1
[ "$shaper" = mercuryd ] && { serve_start || exit 1; }
cluster_rto_scaled "$ts" || exit 1
args=(--iters "$ITERS" --warmup 1 --shrink "$SHRINK" --time-scale "$ts")
# shellcheck disable=SC2046 # tuned_of prints option words
for m in fifo partition mercury; do
	printf 'running %-9s ...\n' "$m"
	run_ps "$out" "$m" "$MODEL" "$m" "${args[@]}" $(tuned_of "$MODEL" "$SHRINK") || exit 1
done
ideal=$("$PS_BIN" ideal --profile "$CL_ROOT/models/$MODEL.prof" --nodes "$NODES" --rate 400mbit \
	--shrink "$SHRINK" --time-scale "$ts" | jq .iter_s)
jq -rs --argjson ideal "$ideal" --arg ts "$ts" --argjson steal_max "$CL_STEAL_MAX" '
	(map(select(.mode == "fifo"))[0].iter_s) as $fifo |
	"\n'"$MODEL"', \(.[0].nodes) nodes, \(.[0].rate_mbit) Mbit/s per node (10 GbE / 25), \(.[0].shaper), \(.[0].congestion_control)",
	"mode        iteration(s)  speedup vs fifo  vs ideal  retrans %  tagged",
	(.[] | "\(.mode | . + " " * (10 - length))  \(.iter_s * 1000 | round / 1000 | tostring | . + " " * (12 - length))  \($fifo / .iter_s * 100 | round / 100 | tostring | . + "x" + " " * (15 - length))  \(.iter_s / $ideal * 1000 | round / 1000 | tostring | . + " " * (8 - length))  \(.retrans_pct | tostring | . + " " * (9 - length))  \(.tagged)"),
	"ideal       \($ideal * 1000 | round / 1000 | tostring | . + " " * (12 - length))  \($fifo / $ideal * 100 | round / 100)x",
	"(emulated seconds; one real 10 GbE second = \($ts | tonumber * 100 | round / 100) emulated seconds;",
	" partition: ByteScheduler with P \(map(select(.mode == "partition"))[0].part) and C \(map(select(.mode == "partition"))[0].credit) bytes, tuned for the model on this fabric, shrunk)",
	(map(select((.host_steal // 0) > $steal_max)) | if length > 0 then
	  "warning: the hypervisor took \(map(.host_steal * 100 | round) | max) % of this VM'"'"'s CPU time during \(map(.mode) | join(", ")): those times are suspect; run again" else empty end)' "$out"
