#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Written ahead against written in order (issue 18): the PS's mercury mode holds a node's
# next-iteration pushes until its own iteration ends (the default, "in order"); with
# --write-ahead it writes them as autograd would hand them over. Levels are now decided per
# packet from the job state, so bytes written ahead should move up when the older iteration
# ends and the two should tie. fifo runs alongside as the reference; the three modes
# alternate run by run. Usage: cluster/write_ahead.sh [--models "vgg16 alexnet"] [--repeat N]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"

MODELS="vgg16 alexnet" NODES=4 SCALE=25 ITERS=4 REPEAT=${REPEAT:-3}
while [ $# -gt 0 ]; do
	case $1 in
	--models) MODELS=$2; shift ;;
	--repeat) REPEAT=$2; shift ;;
	--iters) ITERS=$2; shift ;;
	*) echo "write_ahead: unknown option $1" >&2; exit 2 ;;
	esac
	shift
done
[ "$(id -u)" -eq 0 ] || { echo "write_ahead: needs root (namespaces)" >&2; exit 77; }
[ -x "$PS_BIN" ] && [ -x "$MERCURYD" ] || { echo "write_ahead: run make first" >&2; exit 1; }
RATE=$((10000 / SCALE))
out=$(mktemp)
trap 'rm -f "$out"; cluster_down' EXIT

cluster_up "$NODES" "$RATE" mercuryd 2> >(grep -v quantum >&2) || exit 1
serve_start || exit 1
for model in $MODELS; do
	model_setup "$model" "$SCALE" "$ITERS" "$out" || exit 1
	args=("${MODEL_ARGS[@]}")
	for ((r = 0; r < REPEAT; r++)); do
		run_ps "$out" in-order "$model" mercury "${args[@]}" || exit 1
		run_ps "$out" written-ahead "$model" mercury "${args[@]}" --write-ahead || exit 1
		run_ps "$out" fifo "$model" fifo "${args[@]}" || exit 1
	done
done
[ -n "${KEEP:-}" ] && cp "$out" "$KEEP"
printf '%-8s %-14s %s\n' model mode "iteration s: median (min-max) of $REPEAT; retransmitted %; sockets in two bands"
jq -rs '
	group_by(.model)[] | . as $m |
	(map(select(.label == "ideal"))[0].iter_s) as $ideal |
	(map(select(.label != "ideal")) | group_by(.label)[] |
	 (map(.iter_s) | sort) as $t |
	 "\($m[0].model)\t\(.[0].label)\t\($t[(($t | length) - 1) / 2 | floor] * 1000 | round / 1000) (\($t[0] * 1000 | round / 1000)-\($t[-1] * 1000 | round / 1000)); \(map(.retrans_pct) | sort | .[(length - 1) / 2 | floor]) %; \(map(.split_sockets) | sort | .[(length - 1) / 2 | floor])"),
	"\($m[0].model)\tideal\t\($ideal * 1000 | round / 1000)"' "$out" |
	awk -F'\t' '{ printf "%-8s %-14s %s\n", $1, $2, $3 }'
