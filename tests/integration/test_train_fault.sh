#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# What clusters do to training, on the emulated 2-node cluster (mercuryd attach --qdisc htb
# --rate 100mbit and mercuryd serve on each node, tags through the fast path where there is
# one), two ranks of a small CNN through mercury.torch under torch.distributed.run:
#   - a rank killed mid-run: the other exits non-zero within its --timeout, saying which
#     rank went away and which layer's aggregate it waited for;
#   - the same with --max_restarts 1 and a checkpoint every 15 steps: the launchers restart
#     both ranks, they resume from the checkpoint, finish with exit 0, and end with the
#     parameters of one process on the concatenated batches (the run without a failure);
#   - the link of node 1 down for 3 s mid-run (its switch port): TCP retransmits, training
#     finishes with exit 0 and the same parameters;
#   - the link down for longer than a 3 s --timeout: both ranks stop within it (+3 s),
#     non-zero, each naming the layer it waited for and the rank it waited on.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 77; }
/usr/bin/python3 -c 'import torch' 2>/dev/null || { echo "SKIP: no python3-torch (make deps)"; exit 77; }
CL_PFX=mqtf$$
. "$here/../../cluster/lib.sh"
[ -f "$CL_ROOT/build/libmercury-ps.so" ] || { echo "SKIP: build/libmercury-ps.so not built"; exit 77; }
fails=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fails=$((fails + 1)); return 1; fi; }
work=$(mktemp -d)
ref=""
trap '[ -n "$ref" ] && kill "$ref" 2>/dev/null; rm -rf "$work"; cluster_down' EXIT
train=$CL_ROOT/tests/torch/fault_train.py
py() { OPENBLAS_NUM_THREADS=1 /usr/bin/python3 "$@"; }
STEPS=120
CL_TORCH_TIMEOUT=90
sw() { nsenter --net=/var/run/netns/"${CL_PFX}sw" "$@"; }

py "$train" --reference --out "$work" --steps "$STEPS" & # meanwhile: the cluster
ref=$!
cluster_up 2 100 mercuryd || { echo "FAIL: cluster setup"; exit 1; }
serve_start || { echo "FAIL: mercuryd serve"; exit 1; }
wait "$ref" || { echo "FAIL: reference run"; exit 1; }
ref=

# start NAME ARGS...: a run in the background ($launch), its directory $d.
start() {
	d=$work/$1
	shift
	mkdir -p "$d"
	run_torch "$d" "$train" --out "$d" --steps "$STEPS" "$@" &
	launch=$!
}
# until_step R N: waits (bounded) until rank R has done N steps.
until_step() {
	for ((i = 0; i < 900; i++)); do
		[ "$(cat "$d/progress$1" 2>/dev/null)" -ge "$2" ] 2>/dev/null && return 0
		sleep 0.05
	done
	return 1
}
since() { echo "$(date +%s.%N) - $1" | bc; }
lt() { [ "$(echo "$1 < $2" | bc)" = 1 ]; }
# gone PID: the process has exited (gone, or a zombie its launcher has not reaped yet: the
# launcher looks at its workers every 5 s).
gone() { ! kill -0 "$1" 2>/dev/null || [ "$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null)" = Z ]; }
# params_ok: both workers' parameters against the reference (max abs difference; "ok" last).
params_ok() {
	py - "$d" "$work/reference.pt" <<'EOF'
import sys, torch
d, ref = sys.argv[1], torch.load(sys.argv[2])
worst = 0.0
for r in (0, 1):
    got = torch.load("%s/worker%d.pt" % (d, r))
    worst = max(worst, max((got[k] - ref[k]).abs().max().item() for k in ref))
print("max abs difference from the reference %.3g: %s" % (worst, "ok" if worst <= 1e-4 else "too far"))
EOF
}

# 1. A rank killed mid-run.
start killed --timeout 10
until_step 1 30 || echo "note: rank 1 never reached step 30"
survivor=$(cat "$d/pid0")
t0=$(date +%s.%N)
kill -9 "$(cat "$d/pid1")"
for ((i = 0; i < 200; i++)); do gone "$survivor" && break; sleep 0.05; done
took=$(since "$t0")
wait "$launch"
rc=$?
check "rank 1 killed: rank 0 stopped ${took} s later (< 10 s, its timeout)" "lt $took 10"
check "rank 1 killed: the run failed (exit $rc)" "[ $rc -ne 0 ]"
# rank 0's message: in the launcher's copy of its output (node0.log) or the per-rank logs,
# which can land after the launcher exits, a line half written at first: every copy is read,
# for up to 2 s, for one whole line. (A message cut for good, "...: worker " and no more, seen
# twice in CI on 2026-12-07, was mercury-ps handing out its error while the failing thread
# still wrote it; fixed in ps/core.c, and this check is what catches it coming back.)
lost='(worker|server|node) 1 '
said() { # where rank 0 was when it noticed: waiting for an aggregate, or pushing the next layer
	grep -hoE "(waiting for|asking for|pushing) layer [0-9]+'s (aggregate|gradient) of iteration [0-9]+: .*" \
		-r "$d" --include='*.log'
}
for ((i = 0; i < 40; i++)); do
	msg=$(said | grep -E "$lost" | head -n 1)
	[ -n "$msg" ] && break
	sleep 0.05
done
[ -n "$msg" ] || msg=$(said | head -n 1)
check "rank 1 killed: rank 0 names the layer and the lost rank ($msg)" \
	"[[ \"\$msg\" =~ \$lost ]]" || { said; tail -n 20 "$d"/node*.log; }

# 2. The same under --max_restarts 1, with a checkpoint every 15 steps.
CL_TORCH_ENV="PET_MAX_RESTARTS=1" start restarted --timeout 10 --ckpt-every 15
until_step 1 40 || echo "note: rank 1 never reached step 40"
kill -9 "$(cat "$d/pid1")"
wait "$launch"
rc=$?
check "rank 1 killed under --max_restarts 1: the job restarted and finished (exit $rc)" "[ $rc -eq 0 ]" ||
	tail -n 5 "$d"/node*.log
first=$(jq -c '[.[0][0]]' "$d/steps0.json" "$d/steps1.json" 2>/dev/null | tr -d '\n')
check "... both ranks resumed from the checkpoint at step 30 or 45 (first steps $first)" \
	"[[ '$first' =~ ^\[(30|45)\]\[(30|45)\]$ ]] && [ \"\$(jq '.[0][0]' '$d/steps0.json')\" = \"\$(jq '.[0][0]' '$d/steps1.json')\" ]"
same=$(params_ok 2>&1)
check "... parameters equal the run without a failure ($same)" "[[ '$same' == *ok ]]"

# 3. Node 1's link down for 3 s.
timeouts() {
	cl_in 1 awk '/^TcpExt:/ { if (!h) { for (k = 1; k <= NF; k++) col[$k] = k; h = 1 }
				  else print $col["TCPTimeouts"] }' /proc/net/netstat
}
to0=$(timeouts)
start flap --timeout 20
until_step 1 30 || echo "note: rank 1 never reached step 30"
sw ip link set s1 down
sleep 3
sw ip link set s1 up
wait "$launch"
rc=$?
to=$(($(timeouts) - ${to0:-0}))
check "link down 3 s: training finished (exit $rc; node 1 retransmission timeouts: $to)" "[ $rc -eq 0 ]" ||
	grep -h mercury-ps "$d"/node*.log
same=$(params_ok 2>&1)
check "link down 3 s: parameters equal the reference ($same)" "[[ '$same' == *ok ]]"

# 4. Down for longer than a 3 s timeout (until both ranks stopped, and 1 s more).
start outage --timeout 3
until_step 1 30 || echo "note: rank 1 never reached step 30"
p0=$(cat "$d/pid0") p1=$(cat "$d/pid1")
t0=$(date +%s.%N)
sw ip link set s1 down
for ((i = 0; i < 200; i++)); do gone "$p0" && gone "$p1" && break; sleep 0.05; done
took=$(since "$t0")
sleep 1
sw ip link set s1 up
wait "$launch"
rc=$?
check "link down past the timeout, timeout 3 s: both ranks stopped ${took} s after the link went (< 6 s: the timeout, and Python's exit)" "lt $took 6"
check "link down past the timeout: the run failed (exit $rc)" "[ $rc -ne 0 ]"
for r in 0 1; do
	msg=$(grep -ho "no progress for 3 s waiting for layer [0-9]*'s aggregate of iteration [0-9]* .*" "$d/node$r.log" | head -n 1)
	check "link down past the timeout: rank $r names the layer and the rank it waited on ($msg)" \
		"[[ \"\$msg\" =~ (server|worker)\ $((1 - r)) ]]"
done

[ $fails -eq 0 ] && { echo "all checks passed"; exit 0; }
echo "$fails check(s) failed"
exit 1
