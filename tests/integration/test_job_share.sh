#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The job policy share (issue 35): weighted sharing between jobs, layer priority inside each.
# `mercuryd attach va --qdisc htb --rate 200mbit` (share is htb's default), `mercuryd serve`,
# and jobs whose bulk connections are tagged through it (share_sender.py), all backlogged:
#  1. weights 2 and 1, job A with two layer-1 connections and a layer-6 one, job B two
#     layer-1 connections: A:B within 10 % of 2:1, and A's layer 1 leads A's layer 6;
#  2. the same under --job-policy priority (the rule before): printed beside it, and B gets
#     under 10 % (it yields a band and starves: what share fixes);
#  3. weights 1 and 1: within 10 % of 1:1;
#  4. one job alone: >= 85 % of the link in goodput (headers are ~4 % of the wire).
# Tags go through the service (MERCURY_FASTPATH=0: a fast path another test attached to a
# cgroup above this one must not answer them). Rates are bytes acked (TCP_INFO) over each
# run's last seconds, after the weights' rates are set. Two connections a job keep each job
# backlogged at the qdisc (one BBR or TSQ-limited flow leaves its class empty at times, and
# HTB lends what a class does not use to the other).
. "$(dirname "$0")/lib.sh"
need_python
SECS=${SHARE_SECS:-8}
FROM=${SHARE_FROM:-3} # seconds into a run where the measurement starts
tmp=$(mktemp -d)
trap 'cleanup; rm -rf "$tmp"' EXIT

# run_jobs NAME "JOB WEIGHT LAYER..." ...: the jobs at once for $SECS s; NAME.<job> files.
run_jobs() {
	local name=$1 spec pids=() start
	shift
	start=$(echo "$(date +%s.%N) + 2" | bc -l) # after every sender's start-up
	for spec in "$@"; do
		# shellcheck disable=SC2086
		set -- $spec
		MERCURY_FASTPATH=0 MERCURY_SOCKET=$tmp/sock PYTHONPATH=$ROOT/python in_s python3 \
			"$ROOT/tests/integration/share_sender.py" 10.77.0.2 7000 "$1" "$2" "$start" "$SECS" "${@:3}" \
			>"$tmp/$name.$1" 2>&1 &
		pids+=($!)
	done
	for p in "${pids[@]}"; do wait "$p" || fail "$name: a sender failed: $(tail -n 2 "$tmp"/$name.*)"; done
}
# rate NAME JOB [CONN,...]: Mbit/s acked from $FROM s to 1 s before the end (a window every
# job of the run shares), all connections or these.
rate() {
	python3 - "$tmp/$1.$2" "$FROM" "${3:-}" "$((SECS - 1))" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
a = next(r for r in rows if r["t"] >= float(sys.argv[2]))
b = [r for r in rows if r["t"] <= float(sys.argv[4])][-1]
conns = [int(c) for c in sys.argv[3].split(",")] if sys.argv[3] else range(len(b["acked"]))
print("%.1f" % (sum(b["acked"][i] - a["acked"][i] for i in conns) * 8 / 1e6 / (b["t"] - a["t"])))
PY
}
ratio_near() { # A B TARGET: A/B within 10 % of TARGET
	[ "$(echo "$2 > 0 && $1 / $2 >= $3 * 0.9 && $1 / $2 <= $3 * 1.1" | bc -l)" -eq 1 ]
}
attach_policy() {
	mercuryd_s attach va --qdisc htb --rate "${RATE_MBIT}mbit" --force "$@" >/dev/null
}

setup_pair || { fail "namespace setup"; finish; }
start_sink 7000
check "attach htb at ${RATE_MBIT} Mbit/s" attach_policy
check "the default job policy is priority" \
	test "$(mercuryd_s -j status va | jq -r '.interfaces[0].job_policy')" = priority
check "attach htb with --job-policy share" attach_policy --job-policy share
check "status shows job policy share" \
	test "$(mercuryd_s -j status va | jq -r '.interfaces[0].job_policy')" = share
start_serve "$tmp/sock" "$tmp/serve.log" || { fail "mercuryd serve"; finish; }

# 1. weights 2:1 under share; the job classes' rates sampled while the jobs run
(sleep "$((FROM + 2))"; in_s tc class show dev va | grep -E "htb 4d45:[23] ") >"$tmp/classes" &
run_jobs w21 "1 2 1 1 6" "2 1 1 1"
wait $!
a=$(rate w21 1) a1=$(rate w21 1 0,1) a6=$(rate w21 1 2) b=$(rate w21 2)
echo "share, weights 2:1: A $a Mbit/s (layer 1 $a1, layer 6 $a6), B $b Mbit/s"
check "share 2:1: A/B = $(echo "$a / $b" | bc -l | cut -c1-4) within 10 % of 2" ratio_near "$a" "$b" 2
check "share 2:1: A's layer 1 leads its layer 6 ($a1 vs $a6 Mbit/s)" \
	test "$(echo "$a1 > 4 * $a6" | bc -l)" -eq 1
check "share 2:1: the link is used (A + B >= 85 % of ${RATE_MBIT})" \
	test "$(echo "$a + $b >= 0.85 * $RATE_MBIT" | bc -l)" -eq 1
grep -Eq "weights (2 1|1 2) 0 0 on 1 interface" "$tmp/serve.log" ||
	fail "serve did not log the 2:1 rates: $(grep share "$tmp/serve.log")"
cat "$tmp/classes"
check "while both ran, the job classes' assured rates were 2:1" \
	grep -Eq "rate 13[0-9]{4}Kbit" "$tmp/classes" && grep -Eq "rate 6[0-9]{4}Kbit" "$tmp/classes"

# 2. the rule before, same jobs
check "re-attach with --job-policy priority" attach_policy --job-policy priority
run_jobs prio "1 2 1 1 6" "2 1 1 1"
pa=$(rate prio 1) pb=$(rate prio 2)
echo "priority, weights 2:1: A $pa Mbit/s, B $pb Mbit/s"
check "priority 2:1: B yields a band and gets < 10 % ($pb Mbit/s)" \
	test "$(echo "$pb < 0.1 * $RATE_MBIT" | bc -l)" -eq 1

# 3. equal weights, 4. alone
check "re-attach with --job-policy share" attach_policy --job-policy share
run_jobs w11 "1 1 1 1" "2 1 1 1"
a=$(rate w11 1) b=$(rate w11 2)
echo "share, weights 1:1: A $a Mbit/s, B $b Mbit/s"
check "share 1:1: A/B = $(echo "$a / $b" | bc -l | cut -c1-4) within 10 % of 1" ratio_near "$a" "$b" 1
run_jobs alone "1 1 3 3"
a=$(rate alone 1)
echo "share, one job alone: $a Mbit/s"
check "share: a job alone gets >= 85 % of ${RATE_MBIT} Mbit/s in goodput ($a)" \
	test "$(echo "$a >= 0.85 * $RATE_MBIT" | bc -l)" -eq 1
check "detach" mercuryd_s detach va
finish
