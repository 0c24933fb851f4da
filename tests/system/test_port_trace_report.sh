#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# cluster/port_trace_report.py on a synthetic trace whose answers are known: port s0 sends at
# its full rate in the first half of every iteration and not at all in the second, u0 at a
# quarter of its rate throughout; four iterations of 1 s inside the measured window.
. "$(dirname "$0")/checks.sh"
tmp=$dir

mkdir -p "$tmp/mercury"
/usr/bin/python3 - "$tmp" <<'PY'
import json, os, sys
d = sys.argv[1]
with open(os.path.join(d, "results.jsonl"), "w") as f:
    f.write(json.dumps({"label": "ideal", "model": "m", "nodes": 2, "fabric": "fab", "iter_s": 0.8}) + "\n")
    f.write(json.dumps({"label": "mercury", "iter_s": 1.0, "window": [10.0, 14.0],
                        "iter_ends": [9.0, 10.0, 11.0, 12.0, 13.0, 14.0], "retrans_pct": 0.1,
                        "timeouts": 2}) + "\n")
json.dump({"ports": ["s0", "u0"], "rate_mbit": [8, 16], "interval": 0.01},
          open(os.path.join(d, "mercury", "ports.json"), "w"))
# 8 Mbit/s = 1e6 B/s; 16 Mbit/s = 2e6 B/s
s0 = u0 = 0.0
with open(os.path.join(d, "mercury", "ports.tsv"), "w") as f:
    f.write("# t\ts0\tu0\n")
    for k in range(0, 1601):
        t = 8.0 + k * 0.005
        f.write("%.3f\t%d\t%d\n" % (t, s0, u0))
        if (t % 1.0) < 0.5 - 1e-9:
            s0 += 1e6 * 0.005
        u0 += 0.25 * 2e6 * 0.005
PY
out=$(/usr/bin/python3 "$root/cluster/port_trace_report.py" "$tmp" 2>&1)
echo "$out" | sed 's/^/  | /'
check "the iteration time against the ideal's (80 %)" "[[ \$out == *'1.000 s an iteration (ideal 0.800 s, 80 % of it)'* ]]"
check "s0 busy half the window, under half its rate in half the samples" "[[ \$out == *'| s0 | 8 | 50 % | 50 % |'* ]]"
check "u0 at a quarter of its rate, always under half" "[[ \$out == *'| u0 | 16 | 25 % | 100 % |'* ]]"
check "s0 by tenths of an iteration: full in the first five, idle in the last five" \
	"[[ \$out == *'| s0 | 100 % | 100 % | 100 % | 100 % | 100 % | 0 % | 0 % | 0 % | 0 % | 0 % |'* ]]"
check "retransmissions and timeouts carried" "[[ \$out == *'0.10 % retransmitted, 2 timeouts'* ]]"
checks_done
