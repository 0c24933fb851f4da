#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The bench-torch report (bench/torch_report.py): cells are medians of the repeated runs (the
# tuning pass only picks the best cell); a run's link use is its bytes against the bulk
# reference of its rate's link, which is no configuration of its own; the steady-state line
# compares median step-to-step periods.
. "$(dirname "$0")/checks.sh"

run() { # label mode iter_s step_s [egress_mbit]
	printf '{"label":"%s","mode":"%s","rate_mbit":400,"iter_s":%s,"step_median_s":%s,' \
		"$1" "$2" "$3" "$4"
	printf '"compute_s":0.6,"cpu_s_per_iter":0.8,"egress_mbit":%s,' "${5:-null}"
	printf '"forward_median_s":0.5,"backward_median_s":0.4,"compute_median_s":0.7,'
	printf '"cpu_by_thread":{"python3":0.7}}\n'
}
{
	echo '{"label":"ideal","rate_mbit":400,"iter_s":1.0,"mode":"ideal"}'
	echo '{"label":"bulk","mode":"bulk","rate_mbit":400,"egress_mbit":380,"conns":8}'
	run ddp-5 ddp 1.5 1.5  # tuning pass: one run per cell, before the first fifo
	run ddp-100 ddp 1.9 1.9
	for rep in 0 1 2; do
		run fifo fifo 1.4$rep 1.4$rep 270
		run mercury mercury 1.1$rep 1.0$rep 3${rep}0
		run ddp-25 ddp 1.35 1.35 280
		run ddp-5 ddp 1.3$rep 1.3$rep 285
	done
	echo '{"label":"ideal-run","rate_mbit":400,"iter_s":1.05,"mode":"ideal","time_scale":1.1667}'
} >"$dir/r.jsonl"

out=$(python3 "$root/bench/torch_report.py" "$dir/r.jsonl") ||
	{ echo "FAIL: torch_report.py exited $?"; exit 1; }
echo "$out"
row=$(grep '^| 400 | 0.60 |' <<<"$out")
col() { awk -F' [|] ' -v c="$1" '{ print $c }' <<<"$row"; }
check "mercury: the median of its three runs, with their spread" "[ '$(col 7)' = '1.11 (1.10-1.12)' ]"
check "DDP's best bucket from the repeated runs (5 MB), not the tuning pass" \
	"[ '$(col 9)' = '1.31 (1.30-1.32) (ddp-5)' ]"
check "share of the ideal gain over the window: (1.41-1.11)/(1.41-1.0) = 73 %" "[ '$(col 10)' = '73 %' ]"
check "the bound at the run's compute, with its scale" "[ '$(col 12)' = '1.05 (compute x1.17)' ]"
check "the most any schedule could gain over DDP's best there: 1.31/1.05" \
	"[ '$(col 13 | tr -d ' |')' = '1.25x' ]"
check "share of that bound's gain: (1.41-1.11)/(1.41-1.05) = 83 %" \
	"[ '$(col 14 | tr -d ' |')' = '83%' ]"
check "of the gain the bound leaves over DDP's best: (1.31-1.11)/(1.31-1.05) = 77 % in s, log(1.31/1.11)/log(1.31/1.05) = 75 % in speedup" \
	"[ '$(col 15 | tr -d ' |')' = '77%;75%' ]"
check "the bound at the run's compute is no configuration" "! grep -q '| ideal-run |' <<<\"\$out\""
check "the bulk reference is no configuration" "! grep -q '| bulk |' <<<\"\$out\""
check "the bulk reference is named" "grep -q '400 Mbit/s shaped: 380 Mbit/s counted' <<<\"\$out\""
merc=$(grep '^| 400 | mercury |' <<<"$out")
check "link use: mercury's median bytes against the bulk reference (310/380 = 82 %)" \
	"[ '$(awk -F' [|] ' '{ print $11 }' <<<"$merc" | tr -d ' |')' = '82%' ]"
check "steady state: step-to-step medians, mercury 1.01 against DDP 5 MB's 1.31" \
	"grep -q 'Steady state at 400 Mbit/s (median step-to-step s): fifo 1.41, mercury 1.01, DDP best 1.31 (ddp-5): mercury 1.30x DDP, 98 % of the ideal gain' <<<\"\$out\""
checks_done
