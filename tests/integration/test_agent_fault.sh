#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# A dead node agent costs priority, never progress. Two ranks of a small CNN through
# mercury.torch (torch.distributed.run, one namespace per node, `mercuryd attach --qdisc htb
# --rate 100mbit` and `mercuryd serve` on each), once with tags through the tag fast path and
# once through the service (MERCURY_FASTPATH=0). A few steps in, both nodes' `mercuryd serve`
# are killed with SIGKILL; node 0's stays dead, node 1's is restarted 1 s later:
#   - both ranks finish with exit 0 and the parameters of one process on the concatenated
#     batches; each rank's steps from 0.5 s after the kill take at most 1.2x those before it
#     (medians: libmercury's data path never waits for a daemon); one warning per node;
#   - node 1: the job state its new serve publishes follows the trainer again (iteration
#     events reach it) within 1 s of the restart, through the service the trainer's tags
#     succeed again within 1 s (counted by its libmercury), and one line says it is back.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 77; }
/usr/bin/python3 -c 'import torch' 2>/dev/null || { echo "SKIP: no python3-torch (make deps)"; exit 77; }
CL_PFX=mqaf$$
. "$here/../../cluster/lib.sh"
[ -f "$CL_ROOT/build/libmercury-ps.so" ] || { echo "SKIP: build/libmercury-ps.so not built"; exit 77; }
fails=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fails=$((fails + 1)); return 1; fi; }
work=$(mktemp -d)
ref=""
trap '[ -n "$ref" ] && kill "$ref" 2>/dev/null; rm -rf "$work"; cluster_down' EXIT
train=$CL_ROOT/tests/torch/fault_train.py
py() { OPENBLAS_NUM_THREADS=1 /usr/bin/python3 "$@"; }
STEPS=${AGENT_STEPS:-120}
KILL_AT=${AGENT_KILL_AT:-30}
CL_TORCH_TIMEOUT=90

py "$train" --reference --out "$work" --steps "$STEPS" & # meanwhile: the cluster
ref=$!
cluster_up 2 100 mercuryd || { echo "FAIL: cluster setup"; exit 1; }
serve_start || { echo "FAIL: mercuryd serve"; exit 1; }
wait "$ref" || { echo "FAIL: reference run"; exit 1; }
ref=
serves=("${CL_PIDS[0]}" "${CL_PIDS[1]}")
[ -n "$CL_CG" ] || echo "note: no tag fast path here (no cgroup v2): both runs go through the service"

# restart_serve I: node I's serve anew (the killed one's socket file removed first, so that
# the wait below is for the new one's); T_BACK: when it listens.
restart_serve() {
	rm -f "$CL_RUN/n$1.sock"
	nsenter --net=/var/run/netns/"$(cl_ns "$1")" "$MERCURYD" --pin-root "$CL_PIN/n$1" serve \
		--socket "$CL_RUN/n$1.sock" >>"$CL_RUN/serve$1.log" 2>&1 &
	serves[$1]=$!
	CL_PIDS+=("$!")
	for ((i = 0; i < 100; i++)); do
		[ -S "$CL_RUN/n$1.sock" ] && break
		sleep 0.01
	done
	T_BACK=$(date +%s.%N)
}
# published I: the oldest open iteration of node I's job as its mercuryd published it.
published() {
	cl_in "$1" "$MERCURYD" --pin-root "$CL_PIN/n$1" -j status e0 2>/dev/null |
		jq '[.jobs[]?.oldest_open_iteration // -1] | max // -1'
}
# params_ok DIR: both workers' parameters against the reference (max abs difference; "ok" last).
params_ok() {
	py - "$1" "$work/reference.pt" <<'EOF'
import sys, torch
d, ref = sys.argv[1], torch.load(sys.argv[2])
worst = 0.0
for r in (0, 1):
    got = torch.load("%s/worker%d.pt" % (d, r))
    worst = max(worst, max((got[k] - ref[k]).abs().max().item() for k in ref))
print("max abs difference from the reference %.3g: %s" % (worst, "ok" if worst <= 1e-4 else "too far"))
EOF
}

for path in fastpath service; do
	[ "$path" = fastpath ] && [ -z "$CL_CG" ] && continue
	fp=$([ "$path" = fastpath ] && echo 1 || echo 0)
	d=$work/$path
	mkdir -p "$d"
	CL_TORCH_ENV="MERCURY_FASTPATH=$fp" run_torch "$d" "$train" --out "$d" \
		--steps "$STEPS" --timeout 30 &
	launch=$!
	for ((i = 0; i < 600; i++)); do
		[ "$(cat "$d/progress0" 2>/dev/null)" -ge "$KILL_AT" ] 2>/dev/null && break
		sleep 0.05
	done
	t_kill=$(date +%s.%N)
	kill -9 "${serves[0]}" "${serves[1]}"
	wait "${serves[0]}" "${serves[1]}" 2>/dev/null
	sleep 1
	before=$(published 1)
	restart_serve 1
	t_back=$T_BACK
	for ((i = 0; i < 60; i++)); do # the job state node 1's new serve publishes moves on
		[ "$(published 1)" -gt $((before + 2)) ] 2>/dev/null && break
		sleep 0.05
	done
	lag=$(echo "$(date +%s.%N) - $t_back" | bc)
	wait "$launch"
	rc=$?
	check "$path: both ranks finished (exit $rc)" "[ $rc -eq 0 ]" || tail -n 5 "$d"/node*.log
	same=$(params_ok "$d" 2>&1)
	check "$path: parameters equal the reference ($same)" "[[ '$same' == *ok ]]"
	for r in 0 1; do
		warns=$(grep -c 'mercuryd went away' "$d/node$r.log")
		backs=$(grep -c 'mercuryd is back' "$d/node$r.log")
		check "$path: node $r: one warning ($warns), $r 'is back' line(s) ($backs)" \
			"[ '$warns' -eq 1 ] && [ '$backs' -eq $r ]" || grep mercury-ps "$d/node$r.log"
		ratio=$(py - "$d/steps$r.json" "$t_kill" <<'EOF'
import json, statistics, sys
steps, t_kill = json.load(open(sys.argv[1])), float(sys.argv[2])
dt = [(b[1], b[1] - a[1]) for a, b in zip(steps[5:], steps[6:])]
before = statistics.median(t for end, t in dt if end < t_kill)
after = [t for end, t in dt if end > t_kill + 0.5]
print("%.3f %.1f %.1f %d" % (statistics.median(after) / before, before * 1e3,
                             statistics.median(after) * 1e3, len(after)))
EOF
		)
		read -r q before_ms after_ms n_after <<<"$ratio"
		check "$path: rank $r's steps after the kill ${after_ms:-?} ms (median of ${n_after:-0}) against ${before_ms:-?} ms before: ratio ${q:-?} <= 1.2" \
			"[ '${n_after:-0}' -ge 20 ] && [ \"\$(echo '${q:-9} <= 1.2' | bc)\" = 1 ]"
	done
	check "$path: node 1's published job state follows its trainer ${lag} s after the restart (< 1 s)" \
		"[ \"\$(echo '$lag < 1' | bc)\" = 1 ]"
	if [ "$path" = service ]; then
		resumed=$(py - "$d/steps1.json" "$t_back" <<'EOF'
import json, sys
steps, t_back = json.load(open(sys.argv[1])), float(sys.argv[2])
at = max((s[3] for s in steps if s[1] <= t_back), default=0)
later = [s[1] - t_back for s in steps if s[1] > t_back and s[3] > at]
print("%.3f" % later[0] if later else "never")
EOF
		)
		check "$path: node 1's tags through the service succeed again ${resumed} s after the restart (< 1 s)" \
			"[ '$resumed' != never ] && [ \"\$(echo '$resumed < 1' | bc)\" = 1 ]"
	fi
	restart_serve 0 # for the next run
done

[ $fails -eq 0 ] && { echo "all checks passed"; exit 0; }
echo "$fails check(s) failed"
exit 1
