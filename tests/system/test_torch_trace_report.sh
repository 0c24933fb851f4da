#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The link timeline of a traced run (bench/torch_trace_report.py): a rank's link use in its
# forward and backward passes comes from its own node's byte counts over exactly those
# intervals, against the bulk reference; warm-up iterations are left out.
. "$(dirname "$0")/checks.sh"

# Two nodes sampled every 10 ms for 4 s. Node 0 sends at 400 Mbit/s (500 kB per 10 ms)
# except in [1.0, 1.5) and [2.0, 2.5), where it sends at 100 Mbit/s; node 1 always at 240.
awk 'BEGIN {
	print "# t\ttx0\ttx1"
	a = 0; b = 0
	for (i = 0; i <= 400; i++) {
		t = i / 100
		printf "%.2f\t%d\t%d\n", t, a, b
		a += ((t >= 1.0 && t < 1.5) || (t >= 2.0 && t < 2.5)) ? 125000 : 500000
		b += 300000
	}
}' >"$dir/link.tsv"
# Iteration 0 is warm-up; iterations 1 and 2: forward [1.0, 1.5) and [2.0, 2.5) (node 0's slow
# spans), backward [1.5, 1.9) and [2.5, 2.9), step() 0.1 s.
printf '# iter\tstart\tforward_end\tbackward_end\tstep_end\n0\t0.0\t0.5\t0.9\t1.0\n1\t1.0\t1.5\t1.9\t2.0\n2\t2.0\t2.5\t2.9\t3.0\n' \
	>"$dir/phases.0"
printf '# iter\tstart\tforward_end\tbackward_end\tstep_end\n0\t0.0\t0.4\t0.8\t1.0\n1\t1.0\t1.4\t1.8\t2.0\n2\t2.0\t2.4\t2.8\t3.0\n' \
	>"$dir/phases.1"

out=$(python3 "$root/bench/torch_trace_report.py" "$dir" 400 --skip 1 --json) ||
	{ echo "FAIL: torch_trace_report.py exited $?"; exit 1; }
echo "$out"
get() { jq -r ".ranks[$1].$2" <<<"$out"; }
check "rank 0: two measured iterations (the warm-up left out)" "[ '$(get 0 iterations)' = 2 ]"
check "rank 0: median forward 0.5 s, backward 0.4 s, step() 0.1 s" \
	"[ '$(get 0 forward_median_s) $(get 0 backward_median_s) $(get 0 step_median_s)' = '0.5 0.4 0.1' ]"
check "rank 0's link in its forward passes: 100 of 400 Mbit/s = 25 %" "[ '$(get 0 link_use_forward_pct)' = 25 ]"
check "rank 0's link in its backward passes: 100 %" "[ '$(get 0 link_use_backward_pct)' = 100 ]"
check "rank 0 over the span [1, 3): (1 x 0.25 + 1 x 1) / 2 = 62.5 %" "[ '$(get 0 link_use_pct)' = 62.5 ]"
check "rank 0's link under half the reference half the span" "[ '$(get 0 link_under_half_pct)' = 50 ]"
check "rank 1 reads its own node: 240 of 400 = 60 % in both passes, never under half" \
	"[ '$(get 1 link_use_forward_pct) $(get 1 link_use_backward_pct) $(get 1 link_under_half_pct)' = '60 60 0' ]"
text=$(python3 "$root/bench/torch_trace_report.py" "$dir" 400 --skip 1 --strip 2)
check "the strip marks rank 0's passes and shades its node's slow spans" \
	"grep -q '^rank 0  F' <<<\"\$text\" && grep -q '^node 0  :' <<<\"\$text\""
check "a reference of 0 is refused" "! python3 '$root/bench/torch_trace_report.py' '$dir' 0 2>/dev/null"
checks_done
