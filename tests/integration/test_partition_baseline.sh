#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The ByteScheduler baseline is a fair one: on a communication-bound model (VGG16 on a
# 4-node emulated cluster at 400 Mbit/s, the bench's scaling at twice the shrink) partition
# mode with a credit large enough for its task round trip is not slower than fifo — a
# baseline slower than the vanilla PS it schedules would flatter Mercury.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 77; }
[ -x /usr/bin/python3 ] || { echo "SKIP: needs python3 (the cluster's run summary)"; exit 77; }
CL_PFX=mqpb$$
. "$here/../../cluster/lib.sh"
[ -x "$PS_BIN" ] || { echo "SKIP: $PS_BIN not built"; exit 77; }
shaper=tc
[ -x "$MERCURYD" ] && "$MERCURYD" serve --help >/dev/null 2>&1 && shaper=mercuryd
fails=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fails=$((fails + 1)); fi; }

cluster_up 4 400 "$shaper" || { echo "FAIL: cluster setup"; exit 1; }
out=$(mktemp)
trap 'rm -f "$out"; cluster_down' EXIT
k=16 # VGG16: 138M parameters / 16; compute x 25 / 16, RTO floor alike
cluster_rto_min 313 || { echo "FAIL: rto_min"; exit 1; }
args=(--iters 3 --warmup 1 --shrink $k --time-scale 1.5625 --timeout 60)
run_ps "$out" fifo vgg16 fifo "${args[@]}"
# Two cells of the tuning grid (cluster/tune.sh): the fastest of them is "the tuned one".
run_ps "$out" p4m vgg16 partition "${args[@]}" --part $((4000000 / k)) --credit $((16000000 / k))
run_ps "$out" p1m vgg16 partition "${args[@]}" --part $((1000000 / k)) --credit $((8000000 / k))
check "all three runs finished" "jq -es 'length == 3 and all(.[]; .ok)' '$out' >/dev/null"
fifo=$(jq -r 'select(.label == "fifo") | .iter_s' "$out")
best=$(jq -rs '[.[] | select(.mode == "partition" and .ok) | .iter_s] | min' "$out")
echo "VGG16: fifo $fifo s/iter, tuned partition $best s/iter"
check "tuned partition is not slower than fifo (5 % allowance for noise)" \
	"[ \"\$(echo \"$best <= $fifo * 1.05\" | bc -l)\" = 1 ]"
[ $fails -eq 0 ] && { echo "all checks passed"; exit 0; }
echo "$fails check(s) failed"
exit 1
