#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# One emulated-cluster run's summary (cluster/collect.py): the iteration time is the cluster's,
# from the last node's end of the warm-up to the last node's end of the measured iterations,
# so a stagger between the nodes at the start does not count as iteration time; failed nodes
# make the run fail with their errors named.
. "$(dirname "$0")/checks.sh"

node() { # rank t_start t_end
	printf '{"ok":true,"rank":%s,"t_start":%s,"t_end":%s,"iters":4,"iter_s":%s,"cpu_s":1}\n' \
		"$1" "$2" "$3" "$(echo "($3 - $2) / 4" | bc -l)"
}
# Node 1 ends the warm-up 0.2 s after node 0 and both end together: 4 iterations of 2 s.
node 0 10.0 18.2 >"$dir/out.0"
node 1 10.2 18.2 >"$dir/out.1"
for i in 0 1; do
	echo "100 1 1000" >"$dir/c0.$i" # OutSegs RetransSegs tx_bytes
	echo "1100 3 51000" >"$dir/c1.$i"
done
collect() { python3 "$root/cluster/collect.py" "$dir" 2 l m mercury 0 10 "0 0 0" "5 10 0" 400 \
	mercuryd reno; }
r=$(collect)
val() { echo "$r" | python3 -c "import json,sys; print(json.load(sys.stdin)$1)"; }
check "run ok" "[ '$(val '["ok"]')' = True ]"
check "iteration: (max end - max start) / iters = 2.0 s" "[ '$(val '["iter_s"]')' = 2.0 ]"
check "span from the first start kept apart: 2.05 s" "[ '$(val '["iter_s_span"]')' = 2.05 ]"
check "window from the first start to the last end" "[ '$(val '["window"]')' = '[10.0, 18.2]' ]"
check "retransmits over both nodes: 4 of 2000 segments = 0.2 %" \
	"[ '$(val '["retrans_pct"]')' = 0.2 ]"

echo '{"ok":false,"error":"worker 1 disconnected"}' >"$dir/out.1"
r=$(collect)
check "a failed node fails the run" "[ '$(val '["ok"]')' = False ]"
check "and has no iteration time" "[ '$(val '["iter_s"]')' = None ]"
check "its error is named" "[ '$(val '["errors"][0]')' = 'node 1: worker 1 disconnected' ]"

checks_done
