#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# sim/fabric_sim.py, the flow model of the PS iteration: its ideal is mercury-ps ideal's number
# for number, a 2-node case computed by hand, more bandwidth never slower, and calibrate.py
# reads collect.py-style lines.
. "$(dirname "$0")/checks.sh"
py=/usr/bin/python3
sim="$py $root/sim/fabric_sim.py"
[ -x "$py" ] || { echo "SKIP: no /usr/bin/python3"; exit 77; }

# 1. ideal == build/mercury-ps ideal (egress only), two profiles, cluster scaling included
if [ -x "$root/build/mercury-ps" ]; then
	for args in "resnet50 4 400mbit 2 12.5" "vgg16 8 1gbit 8 3.125" "inception3 4 400mbit 2 12.5 --split-all"; do
		set -- $args
		c=$("$root/build/mercury-ps" ideal --profile "$root/models/$1.prof" --nodes "$2" --rate "$3" \
			--shrink "$4" --time-scale "$5" ${6:-})
		p=$($sim --profile "$1" --mode ideal --nodes "$2" --rate "$3" --shrink "$4" --time-scale "$5" ${6:-} -j)
		same=$($py -c 'import json,sys; a=json.loads(sys.argv[1]); b=json.loads(sys.argv[2]); print(all(a[k]==b[k] for k in ("iter_s","comm_only_s","compute_only_s")))' "$c" "$p")
		check "ideal $args: simulator equals mercury-ps ideal ($(jq -r .iter_s <<<"$c" 2>/dev/null || echo "$c"))" "[ '$same' = True ]"
	done
else
	echo "SKIP part: build/mercury-ps not built (make), ideal not compared"
fi

# 2. by hand: 2 nodes, one layer of P = 262144 parameters (4 chunks of 65536), on server 0
# ((0 * 9973) % 2). Node 1 pushes B = 4P bytes, node 0 pulls them back; R = rate x wire
# efficiency. Per iteration: fifo f + b + 2B/R (push, then the whole pull), mercury
# f + b + (B + C)/R (the pull follows the push chunk by chunk, C = one chunk's bytes),
# ideal f + b + B/R.
printf 'model hand\nlayer only 262144 0.010000 0.020000\n' >"$dir/hand.prof"
for fab in egress fifo prio; do
	for m in fifo mercury ideal partition; do
		t=$($sim --profile "$dir/hand.prof" --mode $m --nodes 2 --rate 100mbit --fabric $fab -j |
			$py -c 'import json,sys; print(json.load(sys.stdin)["iter_s"])')
		want=$($py -c "
import sys; sys.path.insert(0, '$root/sim'); import fabric_sim as fs
R = 12.5e6 * fs.WIRE_EFFICIENCY; B = 262144 * 4.0; C = 65536 * 4.0
print({'fifo': 0.03 + 2 * B / R, 'partition': 0.03 + 2 * B / R,
       'mercury': 0.03 + (B + C) / R, 'ideal': 0.03 + B / R}['$m'])")
		check "2 nodes by hand, $m on the $fab fabric: $t s = $want s" \
			"$py -c 'import sys; sys.exit(abs($t - $want) > 1e-6 * $want)'"
	done
done

# 3. more bandwidth is never slower (every mode, both kinds of switch port)
for m in fifo partition mercury; do
	for fab in fifo prio egress; do
		ts=""
		for r in 200mbit 400mbit 800mbit 1600mbit; do
			ts+="$($sim --profile resnet50 --mode $m --nodes 4 --rate $r --shrink 2 --time-scale 12.5 \
				--fabric $fab -j | $py -c 'import json,sys; print(json.load(sys.stdin)["iter_s"])') "
		done
		check "resnet50 $m, $fab fabric, 200-1600 Mbit/s never slower: $ts" \
			"$py -c 'import sys; t=[float(x) for x in \"$ts\".split()]; sys.exit(any(b > a * (1 + 1e-9) for a, b in zip(t, t[1:])))'"
	done
done

# 4. calibrate.py reads collect.py lines: a run 10 % above the simulation is reported as +-9 %
# and fails --check; the hand-copied egress-only fixture is read whole.
line=$($sim --profile resnet50 --mode mercury --nodes 4 --rate 400mbit --shrink 2 --time-scale 12.5 \
	--fabric egress -j)
emu=$($py -c "import json; print(json.loads('$line')['iter_s'] * 1.1)")
printf '{"label":"mercury","model":"resnet50","mode":"mercury","ok":true,"nodes":4,"rate_mbit":400,"shrink":2,"time_scale":12.5,"split_all":false,"part":null,"credit":null,"iter_s":%s,"fabric":"egress"}\n' \
	"$emu" >"$dir/r.jsonl"
out=$($py "$root/sim/calibrate.py" --check "$dir/r.jsonl" 2>&1)
rc=$?
echo "$out"
check "calibrate: the cell's error is -9.1 %" "grep -q -- '| -9.1 \*\* |' <<<\"\$out\""
check "calibrate --check fails a cell off by more than 5 %" "[ $rc = 1 ]"
n=$($py "$root/sim/calibrate.py" "$root/sim/fixtures/egress_only_RESULTS_md.FIXTURE.jsonl" 2>/dev/null |
	grep -c ' | egress | ')
check "calibrate reads the whole fixture (22 cells)" "[ '$n' = 22 ]"

# 5. a flow group whose inputs have all finished finishes: BERT-base's partition cell at
# (125K, 2M) stalled on 6e-5 bytes of rounding before 8c0286b
out=$($sim --profile bert_base --mode partition --nodes 4 --rate 400mbit --cluster-scale 25 \
	--part 15625 --credit 250000 -j 2>&1)
check "BERT-base partition (125K, 2M) completes: $out" "grep -q '\"iter_s\"' <<<\"\$out\""

# 6. project.py tunes ByteScheduler: the cell's figure is its grid's fastest (P, C), and a
# bad grid is refused with a reason
out=$($py "$root/sim/project.py" --models resnet50 --nodes 16 --rates 10gbit --modes partition \
	--grid "125000:500000 4000000:all" -j 2>/dev/null)
check "project.py picks the grid's fastest cell: $out" "$py -c '
import json, sys
r = json.loads(sys.argv[1]); g = r[\"grid\"]
sys.exit(not (len(g) == 2 and r[\"iter_s\"] == min(g.values())))' '$out'"
err=$($py "$root/sim/project.py" --grid "1000000" 2>&1)
rc=$?
check "project.py refuses a grid cell without its credit (exit $rc: $err)" \
	"[ $rc = 2 ] && grep -q 'bad --grid cell' <<<\"\$err\""
checks_done
