#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# cluster/multijob_report.py, the two-job tables, on synthetic runs whose answers are known:
# each job measured only over the overlap of the two runs, its share of the bytes sent in
# it, that share against what its weight entitles it to (2:1 settings only), time against
# alone and against the fair share, and the fabric the runs name.
set -uo pipefail
root=${MERCURY_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/multijob_report.$$.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fails=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fails=$((fails + 1)); fi; }

# Job a: 10 iterations of 1 s from t = 0; job b: 10 of 2 s. Overlap: t = 2 (b's warm-up
# done) to 10 (a's end): a makes 8 iterations in it, b 4; each sends 200 bytes an iteration,
# so a's share is 1600 / 2400 = 0.667. Alone a 0.5 s, b 1.0 s; at half the rate 0.8 and 1.6.
/usr/bin/python3 - "$tmp/r.jsonl" <<'PY'
import json, sys
fab = "full duplex, FIFO ports of 262144 bytes"
rows = [{"pair": "a+b", "case": "plain", "setting": "ideal-half", "model": m, "iter_s": t}
        for m, t in (("a", 0.8), ("b", 1.6))]
rows += [{"pair": "a+b", "case": "plain", "setting": "mercury", "alone": True, "ok": True,
          "model": m, "iter_s": t, "rep": 0, "fabric": fab} for m, t in (("a", 0.5), ("b", 1.0))]
for setting in ("mercury", "mercury-2to1"):
    for k, (m, step, w) in enumerate((("a", 1.0, 2), ("b", 2.0, 1))):
        rows.append({"pair": "a+b", "case": "plain", "setting": setting, "rep": 0,
                     "alone": False, "ok": True, "model": m, "mode": "mercury",
                     "job_index": k, "weight": w, "bytes_sent": 2000,
                     "iter_ends": [step * i for i in range(11)], "timeouts": 3,
                     "retrans_pct": 0.1, "host_cpu_busy": 0.5, "fabric": fab})
with open(sys.argv[1], "w") as f:
    f.writelines(json.dumps(r) + "\n" for r in rows)
PY
out=$(/usr/bin/python3 "$root/cluster/multijob_report.py" "$tmp/r.jsonl" 2>&1)
row() { grep "^| $1 |" <<<"$out"; }
eq=$(row mercury) w21=$(row mercury-2to1)
check "the pair's heading and its fabric are printed" \
	"[[ \$out == *'## a + b'* && \$out == *'Fabric: full duplex, FIFO ports of 262144 bytes.'* ]]"
check "equal weights: a 1 s over the overlap (2x alone, 1.25x fair), share 0.67 of an entitled 0.5 ($eq)" \
	"[[ \$eq == '| mercury | 1 | 1.000 | 2.00x | 1.25x | 0.67 (1.33) | 2.000 | 2.00x | 1.25x | 0.33 (0.67) |'* ]]"
check "2:1 weights: the same shares are what a weight-2 job is entitled to ($w21)" \
	"[[ \$w21 == *'| 0.67 (1.00) |'*'| 0.33 (1.00) |'* ]]"
check "iterations/s of both jobs over the overlap: 1 + 0.5" "[[ \$eq == *'| 1.50 |'* ]]"
check "the models' compute is not called scaled when no run says so" "[[ \$out != *'Compute:'* ]]"
# runs with the compute scaled down (multijob.sh --compute 0.05) say so above the table
sed 's/"pair": "a+b"/"compute": 0.05, "pair": "a+b"/' "$tmp/r.jsonl" >"$tmp/c.jsonl"
cout=$(/usr/bin/python3 "$root/cluster/multijob_report.py" "$tmp/c.jsonl" 2>&1)
check "--compute 0.05: the report says the shares are those while both are backlogged" \
	"[[ \$cout == *'Compute: the models'\\'' times x 0.05 (--compute)'*'backlogged'* ]]"
# a's run goes on past b's end (a last iteration of 20 s): the overlap ends with b's run, a's
# time counts its whole iterations inside it (still 1 s), b's share now 9 iterations' bytes
sed -i 's/"iter_ends": \[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0\]/"iter_ends": [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 30.0]/' "$tmp/r.jsonl"
out=$(/usr/bin/python3 "$root/cluster/multijob_report.py" "$tmp/r.jsonl" 2>&1)
check "the overlap ends with the shorter run: a 1 s, shares 0.46 / 0.54 ($(row mercury))" \
	"[[ \$(row mercury) == '| mercury | 1 | 1.000 | 2.00x | 1.25x | 0.46 (0.92) | 2.000 '* ]]"

[ "$fails" = 0 ] && echo "all checks passed" || { echo "$fails check(s) failed"; exit 1; }
