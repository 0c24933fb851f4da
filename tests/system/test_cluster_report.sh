#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The bench-cluster table (cluster/report.py) reads a cell run several times as the median of
# its successful runs: a failed run is listed, not counted; the share of the ideal gain comes
# from the medians and, per repetition, from the fifo and mercury runs of the same turn.
. "$(dirname "$0")/checks.sh"

run() { # label mode rep iter_s [ok]
	printf '{"label":"%s","model":"resnet50","mode":"%s","rep":%s,"ok":%s,"iter_s":%s,' \
		"$1" "$2" "$3" "${5:-true}" "$4"
	printf '"nodes":4,"rate_mbit":400,"shaper":"mercuryd","congestion_control":"reno",'
	printf '"retrans_pct":0.01,"link_util":0.7,"host_cpu_busy":0.1,"tagged":true,'
	printf '"part":%s,"credit":%s,"shrink":2,"host_steal":0.01,"runs":1}\n' \
		"${PART:-500000}" "${CREDIT:-2000000}"
}
{
	echo '{"label":"ideal","model":"resnet50","mode":"ideal","ok":true,"iter_s":1.7}'
	run fifo fifo 0 2.0
	run mercury mercury 0 1.8
	run partition partition 0 2.3
	run fifo fifo 1 2.2
	run mercury mercury 1 null false
	run partition partition 1 2.1
	run fifo fifo 2 2.1
	run mercury mercury 2 1.9
	run partition partition 2 2.4
} >"$dir/results.jsonl"

out=$(python3 "$root/cluster/report.py" "$dir" 0.05) || { echo "FAIL: report.py exited $?"; exit 1; }
row=$(grep '^| resnet50 |' <<<"$out")
echo "$row"
col() { awk -F' [|] ' -v c="$1" '{ print $c }' <<<"$row"; }
check "runs counts the successful runs of both modes (2)" "[ '$(col 2)' = 2 ]"
check "fifo: median of three runs, with its spread" "[ '$(col 3)' = '2.100 (2.000-2.200)' ]"
check "partition: the median (2.3), not the last run (2.4)" "[ '$(col 4)' = 2.300 ]"
check "mercury: median of the two runs that succeeded" "[ '$(col 5)' = '1.850 (1.800-1.900)' ]"
check "share of the ideal gain from the medians: (2.1/1.85-1)/(2.1/1.7-1) = 57 %" "[ '$(col 9)' = 57% ]"
check "per repetition: turns 0 and 2 (turn 1's mercury failed)" "[ '$(col 10)' = '63%/45%' ]"
check "the failed run is named" "grep -q '^Failed runs: mercury resnet50' <<<\"\$out\""
checks_done
