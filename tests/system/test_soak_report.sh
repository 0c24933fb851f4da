#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# bench/soak_report.py, the soak's verdict, on synthetic series: flat ones with noise and a
# different level per mode pass; memory, descriptors or map entries that grow after the
# warm-up fail, and so does any counted error; growth inside the warm-up does not count; a
# restarted process is judged within each life; a canary that grows is seen, one that does
# not fails the verdict (the check would be blind); an interval in which a node sends next
# to nothing (a stalled job) fails it.
set -uo pipefail
root=${MERCURY_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
report="$root/bench/soak_report.py"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/soak_report.$$.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fails=0

# gen NAME EXPR...: 40 samples a minute apart, modes alternating; each EXPR is "metric=python
# expression in t (seconds), i (sample), m (0 fastpath, 1 service), r (uniform noise -1..1)".
gen() {
	local out=$tmp/$1
	shift
	/usr/bin/python3 - "$out" "$@" <<'PY'
import json, random, sys
random.seed(7)
out, exprs = sys.argv[1], [e.split("=", 1) for e in sys.argv[2:]]
with open(out, "w") as f:
    for i in range(40):
        t, m = 60.0 * i, i % 2
        vals = {n: eval(e, {}, {"t": t, "i": i, "m": m, "r": random.uniform(-1, 1)})
                for n, e in exprs}
        tx = {n[3:]: v for n, v in vals.items() if n.startswith("tx.")}
        pids = {n[4:]: v for n, v in vals.items() if n.startswith("pid.")}
        vals = {n: v for n, v in vals.items() if not n.startswith(("tx.", "pid."))}
        f.write(json.dumps({"t": t, "mode": ["fastpath", "service"][m], "job": 1,
                            "tx_bytes": tx, "pids": pids, "metrics": vals}) + "\n")
PY
}
# (a metric named tx.NODE is that node's bytes sent so far, "tx_bytes"; pid.PROC is the
# life of process PROC that the sample saw, "pids")
# expect RC SAMPLES DESCRIPTION [jq test on the summary] [report args...]
expect() {
	local want=$1 file=$tmp/$2 what=$3 jqt=${4:-true} out rc
	shift $(($# < 4 ? $# : 4))
	out=$(/usr/bin/python3 "$report" "$file" --warmup 300 "$@")
	rc=$?
	if [ "$rc" = "$want" ] && jq -e "$jqt" <<<"$out" >/dev/null; then
		echo "ok: $what (exit $rc)"
	else
		echo "FAIL: $what (exit $rc, wanted $want)"
		echo "$out" | head -c 3000
		fails=$((fails + 1))
	fi
}

flat=("p.rss_kb=40000+300*r" "p.fds=12+m" "p.threads=5" "n0.maps.jobs=1" "n0.tag_ranges=30+5*r+20*m")
gen flat "${flat[@]}"
expect 0 flat "flat series with noise and a level per mode: pass" '.growing == [] and .errors == 0'
gen rss "${flat[@]/p.rss_kb=40000+300*r/p.rss_kb=40000+300*r+0.7*t}"
expect 1 rss "RSS growing 42 KiB a minute (1.5 MiB over 35 min): fail" '.growing == ["p.rss_kb"]'
gen fds "${flat[@]/p.fds=12+m/p.fds=12+m+i//12}"
expect 1 fds "one descriptor more every 12 minutes: fail" '.growing == ["p.fds"]'
gen ranges "${flat[@]/n0.tag_ranges=30+5*r+20*m/n0.tag_ranges=30+5*r+20*m+i//4}"
expect 1 ranges "tag ranges growing by one every 4 minutes: fail" '.growing == ["n0.tag_ranges"]'
gen warm "${flat[@]/p.rss_kb=40000+300*r/p.rss_kb=40000+300*r+20*min(t,240)}"
expect 0 warm "RSS growing only during the warm-up: pass"
# A process restarted every 8 samples, each life flat at its own level, 900 KiB apart.
gen lives "${flat[@]/p.rss_kb=40000+300*r/p.rss_kb=40000+300*r+900*(i//8)}" "pid.p=100+i//8"
expect 0 lives "a restarted process, each life flat at a higher level: pass" '.growing == []'
gen lives_unmarked "${flat[@]/p.rss_kb=40000+300*r/p.rss_kb=40000+300*r+900*(i//8)}"
expect 1 lives_unmarked "the same levels without the lives marked: fail" '.growing == ["p.rss_kb"]'
gen lives_leak "${flat[@]/p.rss_kb=40000+300*r/p.rss_kb=40000+300*r+0.7*(t-480*(i//8))}" "pid.p=100+i//8"
expect 1 lives_leak "a restarted process leaking 42 KiB a minute in every life: fail" \
	'.growing == ["p.rss_kb"]'
echo '{"trainer0_exit": 0, "log_errors": 1}' >"$tmp/errors.json"
expect 1 flat "flat but one error counted: fail" '.errors == 1' --errors "$tmp/errors.json"
gen canary "${flat[@]}" "canary.rss_kb=20000+50*t" "canary.fds=10+i"
expect 0 canary "a growing canary is seen and does not fail the verdict" \
	'.canary_missed == [] and .metrics["canary.fds"].verdict == "grows"'
gen blind "${flat[@]}" "canary.fds=10"
expect 1 blind "a canary that does not grow fails the verdict" '.canary_missed == ["canary.fds"]'

gen moving "${flat[@]}" "tx.n0=1e6*t+2e7*r" "tx.n1=2e6*t"
expect 0 moving "both nodes send every interval: pass" '.progress.n0.stalled_at == []'
gen stall "${flat[@]}" "tx.n0=1e6*t" "tx.n1=2e6*min(t,1200)+2e6*max(t-1260,0)"
expect 1 stall "node 1 sent nothing for a minute: fail" \
	'.progress.n1.stalled_at == [1260] and .error_counts.stalled_intervals == 1'

[ $fails -eq 0 ] && { echo "all checks passed"; exit 0; }
echo "$fails check(s) failed"
exit 1
