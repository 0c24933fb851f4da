#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Quick manual check: 2 nodes, tiny profile, each mode once (SHAPER=tc|mercuryd).
. "$(dirname "$0")/lib.sh"
cluster_up 2 200 "${SHAPER:-tc}" || exit 1
[ "$CL_SHAPER" = mercuryd ] && { serve_start || exit 1; }
out=$(mktemp)
for m in ${MODES:-fifo partition mercury}; do
	run_ps "$out" "$m" tiny "$m" --iters 3 --part 100000 --credit 400000 --verify
done
cat "$out"
rm -f "$out"
[ "$CL_SHAPER" = mercuryd ] && { cl_in 0 "$MERCURYD" --pin-root "$CL_PIN/n0" -j status e0 | head -c 1500; echo; cat "$CL_RUN"/serve0.log; }
