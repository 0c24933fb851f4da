#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The compute comparison of bench/torch_compute.sh (bench/torch_compute_report.py): medians per
# layout and mode, mercury over fifo paired by round (not by sorted value), and the sign test's
# count and two-sided p.
. "$(dirname "$0")/checks.sh"

# shared: mercury's compute 10 % over fifo's in rounds 0-3, 5 % under in round 4; pinned: the
# same in every round but round 2 (2 % over). Round 1's fifo is slow (1.5 s): paired by round,
# its ratio is 1.1 x 1.0 / 1.5; sorted, it would pair with another round's mercury.
{
	for r in 0 1 2 3 4; do
		f=1.0
		[ "$r" = 1 ] && f=1.5
		m=$(awk -v f="$f" -v r="$r" 'BEGIN { print (r == 4 ? 0.95 : (r == 1 ? 1.1 : 1.1 * f)) }')
		printf '{"round":%d,"layout":"shared","mode":"fifo","compute_median_s":%s,"main_thread_cpu_s_per_iter":%s,"iter_s":2.0}\n' "$r" "$f" "$f"
		printf '{"round":%d,"layout":"shared","mode":"mercury","compute_median_s":%s,"main_thread_cpu_s_per_iter":%s,"iter_s":1.5}\n' "$r" "$m" "$f"
		p=0.8
		[ "$r" = 2 ] && p=0.816
		printf '{"round":%d,"layout":"pinned","mode":"fifo","compute_median_s":0.8,"main_thread_cpu_s_per_iter":0.8,"iter_s":2.5}\n' "$r"
		printf '{"round":%d,"layout":"pinned","mode":"mercury","compute_median_s":%s,"main_thread_cpu_s_per_iter":0.8,"iter_s":1.2}\n' "$r" "$p"
	done
} >"$dir/runs.jsonl"
out=$(python3 "$root/bench/torch_compute_report.py" "$dir/runs.jsonl") ||
	{ echo "FAIL: torch_compute_report.py exited $?"; exit 1; }
echo "$out"
check "the table: shared fifo's median compute 1.000 over 5 runs" \
	"grep -q '^| shared | fifo | 1.000 | 1.000 | 2.000 | 5 |' <<<\"\$out\""
check "paired by round: shared mercury / fifo median 1.100, rounds 0.733-1.100" \
	"grep -q '^shared, compute s: mercury / fifo 1.100 (median of 5 rounds; 0.733-1.100)' <<<\"\$out\""
check "sign test: mercury's larger in 3 of 5 (round 1's 0.733 and round 4's 0.95 below), p = 1.000" \
	"grep -q 'shared, compute s: .*larger in 3 of 5 (sign test p = 1.000)' <<<\"\$out\""
check "ties are dropped from the sign test: pinned compute larger in 1 of 1, p = 1.000" \
	"grep -q 'pinned, compute s: mercury / fifo 1.000 .*larger in 1 of 1 (sign test p = 1.000)' <<<\"\$out\""
check "equal main-thread CPU: 0 of 0 rounds differ" \
	"grep -q 'pinned, main-thread CPU s: mercury / fifo 1.000 .*larger in 0 of 0' <<<\"\$out\""
check "an empty file is refused" "! python3 '$root/bench/torch_compute_report.py' /dev/null 2>/dev/null"
checks_done
