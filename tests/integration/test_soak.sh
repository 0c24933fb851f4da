#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The short soak (bench/soak.sh; `make soak` is the long one): 6000 iterations of the tiny
# model on 2 nodes (about 80 s here), the tags alternating between the fast path and the
# service every 5 s, node 1's mercuryd serve restarted every 15 s (SIGTERM and SIGKILL in
# turn) and its interface re-attached every 20 s, a sample every 5 s. Fails when any
# process's memory, descriptors or threads, any pinned map's entries, tagged sockets or tag
# ranges grow after a 20 s warm-up beyond soak_report.py's thresholds, or when anything went
# wrong (an exit status, a failed event, a stalled interval, tags refused on node 0, inexact
# pulls, error lines in the logs). A canary process that leaks runs beside it and must be
# seen growing in the same run: the check is shown able to fail under this run's noise.
set -uo pipefail
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (namespaces)"; exit 77; }
[ -x /usr/bin/python3 ] || { echo "SKIP: needs /usr/bin/python3 (soak_report.py)"; exit 77; }
root=${MERCURY_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
out=$(mktemp -d "${TMPDIR:-/tmp}/test_soak.$$.XXXXXX")
trap 'rm -rf "$out"' EXIT
bash "$root/bench/soak.sh" --iters "${SOAK_ITERS:-6000}" --shrink 10 --time-scale 0.2 \
	--interval 5 --warmup 20 --restart-every 3 --reattach-every 4 --max-seconds 300 \
	--canary --out "$out"
rc=$?
[ $rc = 77 ] && exit 77
fails=0
check() { # description, jq test on the summary
	if jq -e "$2" "$out/summary.json" >/dev/null 2>&1; then echo "ok: $1"; else
		echo "FAIL: $1"
		fails=$((fails + 1))
	fi
}
check "the soak's verdict is pass (exit $rc)" '.verdict == "pass"'
check "at least 8 samples after the warm-up" '.samples_after_warmup >= 8'
check "node 1's serve restarted at least 3 times, its interface re-attached at least twice" \
	'.serve_restarts >= 3 and .reattaches >= 2'
check "the canary's leak was seen" \
	'.metrics["canary.fds"].verdict == "grows" and .metrics["canary.rss_kb"].verdict == "grows"'
check "every process and node was sampled" \
	'[.metrics | keys[] | select(test("^n[01][.](mercuryd_serve|ps_serve|trainer)[.]rss_kb$"))] | length == 6'
if [ $fails -gt 0 ] || [ $rc != 0 ]; then
	cat "$out/events.log"
	jq -c '{errors: .error_counts, growing, unknown, canary_missed, progress}' "$out/summary.json"
	for f in "$out"/logs/*.err; do [ -s "$f" ] && { echo "--- $f"; tail -n 5 "$f"; }; done
	exit 1
fi
echo "all checks passed"
