#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Two PS jobs at once on a 2-node emulated cluster (cluster/lib.sh run_jobs; the smoke of
# cluster/multijob.sh): different job ids and weights (--job 7 --weight 2, --job 9 --weight 1)
# in mercury mode, both on every node, tagging through each node's one mercuryd. Both finish,
# both tag, and mercuryd publishes both jobs with their weights while they run (the lighter
# one shifted one band). Then per-job priority (--job-band 0 and 1, fifo) beside a fixed-size
# bulk transfer: both finish tagged, the classifier puts bytes in band 1, the transfer
# completes. Out-of-range ids, weights and bands are refused with a clear error.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 77; }
[ -x /usr/bin/python3 ] || { echo "SKIP: needs /usr/bin/python3 (cluster/collect.py, mercury.ps)"; exit 77; }
CL_PFX=mqmj$$
. "$here/../../cluster/lib.sh"
[ -x "$PS_BIN" ] && [ -x "$MERCURYD" ] || { echo "SKIP: build first"; exit 77; }
"$MERCURYD" serve --help >/dev/null 2>&1 || { echo "SKIP: mercuryd cannot serve"; exit 77; }
fails=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fails=$((fails + 1)); fi; }
out=$(mktemp) jobs_seen=$(mktemp)
trap 'rm -f "$out" "$jobs_seen"; cluster_down' EXIT

said=$("$PS_BIN" run --profile "$CL_ROOT/models/tiny.prof" --weight 0 2>&1)
check "--weight 0 is refused naming the range" "[[ \$said == *'give 1 to 1000'* ]]"
said=$("$PS_BIN" run --profile "$CL_ROOT/models/tiny.prof" --mode mercury --job-band 1 2>&1)
check "--job-band in mercury mode is refused" "[[ \$said == *'per-job priority'* ]]"
check "mercury.ps refuses job 0 before opening anything" \
	"PYTHONPATH='$CL_ROOT/python' MERCURY_PS_LIB='$CL_ROOT/build/libmercury-ps.so' $CL_PY -c \
	'from mercury import ps
try:
    ps.ParameterServer(0, 1, [\"127.0.0.1:1\"], [10], job=0)
except ValueError as e:
    assert \"job must be\" in str(e)
else:
    raise SystemExit(1)' 2>&1"

said=$("$CL_ROOT/cluster/multijob.sh" --win-split 10000 2>&1; echo "rc=$?")
check "multijob.sh: --win-split wants two byte counts" \
	"[[ \$said == *'two byte counts'* && \$said == *rc=2 ]]"
said=$("$CL_ROOT/cluster/multijob.sh" --settings "mercury-2to1-win nosuch" 2>&1; echo "rc=$?")
check "multijob.sh: an unknown setting is named, the -win one known" \
	"[[ \$said == *\"unknown setting 'nosuch'\"* && \$said == *rc=2 ]]"
for f in 0 .05 x; do
	said=$("$CL_ROOT/cluster/multijob.sh" --compute "$f" 2>&1; echo "rc=$?")
	check "multijob.sh: --compute $f is refused (a factor > 0, JSON's spelling)" \
		"[[ \$said == *'--compute takes a factor > 0'* && \$said == *rc=2 ]]"
done

cluster_up 2 200 mercuryd || { echo "FAIL: cluster setup"; exit 1; }
serve_start || { echo "FAIL: mercuryd serve"; exit 1; }

# 1. two mercury jobs, weights 2 and 1; node 0's published jobs sampled while they run
common="--iters 6 --chunk 10000 --verify --timeout 30 --time-scale 4"
MJ_MODEL=(tiny tiny) MJ_MODE=(mercury mercury)
MJ_ARGS=("$common --job 7 --weight 2" "$common --job 9 --weight 1")
run_jobs "$out" weighted &
runner=$!
for ((k = 0; k < 200; k++)); do
	cl_in 0 "$MERCURYD" --pin-root "$CL_PIN/n0" -j status e0 2>/dev/null |
		jq -c '[.jobs[] | {job, weight, shift}] | sort_by(.job)' >>"$jobs_seen"
	kill -0 "$runner" 2>/dev/null || break
	sleep 0.1
done
wait "$runner"
check "both jobs finished on every node, every pull exact" \
	"jq -es '[.[] | select(.label == \"weighted\")] | length == 2 and all(.[]; .ok)' '$out' >/dev/null"
check "both jobs tagged through mercuryd, no tag errors" \
	"jq -es '[.[] | select(.label == \"weighted\")] | all(.[]; .tagged and .tag_errors == 0)' '$out' >/dev/null"
check "the results name each job's id and weight" \
	"jq -es '[.[] | select(.label == \"weighted\") | [.job, .weight]] == [[7, 2], [9, 1]]' '$out' >/dev/null"
check "mercuryd published both jobs at once: job 7 weight 2 shift 0, job 9 weight 1 shift 1" \
	"grep -qF '[{\"job\":7,\"weight\":2,\"shift\":0},{\"job\":9,\"weight\":1,\"shift\":1}]' '$jobs_seen'"

# 2. per-job priority (fifo, every byte of job 1 in band 0, of job 2 in band 1) beside a
# 4 MB bulk transfer from node 0 to node 1
band1() { cl_in 0 "$MERCURYD" --pin-root "$CL_PIN/n0" -j status e0 | jq '.interfaces[0].per_band[1].bytes'; }
b0=$(band1)
MJ_MODE=(fifo fifo) MJ_ARGS=("$common --job 1 --job-band 0" "$common --job 2 --job-band 1")
MJ_BULK="0 1 4000000 0.5" run_jobs "$out" jobband
b1=$(band1)
check "per-job priority: both jobs finished, tagged, every pull exact" \
	"jq -es '[.[] | select(.label == \"jobband\" and .mode == \"fifo\")] | length == 2 and all(.[]; .ok and .tagged and .tag_errors == 0)' '$out' >/dev/null"
check "per-job priority: node 0 sent the second job's bytes in band 1 ($((b1 - b0)) bytes)" \
	"[ $((b1 - b0)) -gt 200000 ]"
check "the bulk transfer beside them completed, with its time and goodput" \
	"jq -es '[.[] | select(.label == \"jobband\" and .mode == \"bulk\")] | length == 1 and .[0].ok and .[0].bytes == 4000000 and .[0].completion_s > 0' '$out' >/dev/null"
[ $fails -eq 0 ] && { echo "all checks passed"; exit 0; }
jq -c . "$out" >&2
tail -n 3 "$jobs_seen" >&2
echo "$fails check(s) failed"
exit 1
