#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# `mercury-ps serve`, the server role of a node alone, with workers in other processes
# (`run --external-servers`, the emulated worker; libmercury-ps's external_servers is the
# same role): every mode sums exactly, one server process serves job after job, a peer that
# breaks the protocol is dropped or fails only its job, SIGTERM ends it promptly and cleanly,
# and a server killed mid-job gives every worker a clear error in bounded time.
# Loopback only, no namespaces: ports from this run's PID.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
PS=${PS_BIN:-${MERCURY_BUILD:-$root/build}/mercury-ps}
[ -x "$PS" ] || { echo "SKIP: $PS not built"; exit 77; }
PROF=$root/models/tiny.prof
base=$((20000 + ($$ % 2000) * 10))
H=127.0.0.1:$base,127.0.0.1:$((base + 1))
tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
export MERCURY_SOCKET=$tmp/no-mercuryd.sock # mercury mode runs untagged here
fails=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fails=$((fails + 1)); fi; }

# serve_up MODE [args]: both nodes' servers, long-running; $srv0 $srv1 their PIDs
serve_up() {
	local mode=$1 r
	shift
	for r in 0 1; do
		"$PS" serve --profile "$PROF" --mode "$mode" --nodes 2 --rank $r --hosts "$H" \
			--timeout 10 "$@" >"$tmp/serve$r.out" 2>"$tmp/serve$r.err" &
		pids+=($!)
		eval "srv$r=$!"
	done
}
# job OUT MODE [args]: both workers, to the end (bounded by the workers' own timeout)
job() {
	local out=$1 mode=$2 r
	shift 2
	: >"$out"
	for r in 0 1; do
		timeout 60 "$PS" run --external-servers --profile "$PROF" --mode "$mode" --nodes 2 \
			--rank $r --hosts "$H" --iters 3 --verify --timeout 10 "$@" \
			>>"$out" 2>>"$out.err" &
	done
	wait_jobs
}
wait_jobs() { # the workers started last, not the servers
	local j
	for j in $(jobs -p); do
		case " ${pids[*]} " in *" $j "*) ;; *) wait "$j" ;; esac
	done
}
stop_servers() {
	kill -TERM "$srv0" "$srv1" 2>/dev/null
	wait "$srv0" "$srv1" 2>/dev/null
}
lines() { grep -c "$2" "$1" 2>/dev/null || true; }
reports_ok() { cat "$tmp/serve0.out" "$tmp/serve1.out" | grep -c '"ok":true'; }

for mode in fifo partition mercury; do
	serve_up $mode --part 50000 --credit 200000
	job "$tmp/a" $mode --part 50000 --credit 200000
	job "$tmp/b" $mode --part 50000 --credit 200000
	check "$mode: both jobs' workers end ok, every pull exact" \
		"[ \$(cat '$tmp/a' '$tmp/b' | grep '\"ok\":true' | grep -c '\"mismatches\":0,') = 4 ]"
	# A server writes its job report after the workers have gone: give it up to 5 s.
	for _ in $(seq 50); do [ "$(reports_ok)" -ge 4 ] && break; sleep 0.1; done
	check "$mode: each server reports two jobs ok" "[ \$(reports_ok) = 4 ]"
	[ $mode = mercury ] || stop_servers
done

# Still the mercury servers: a peer that sends garbage instead of a HELLO is dropped.
exec 3<>"/dev/tcp/127.0.0.1/$base" && printf '%064d' 7 >&3 && exec 3>&-
sleep 0.3
check "garbage instead of a HELLO: dropped with a message" \
	"grep -q 'without a valid HELLO' '$tmp/serve0.err'"
# A worker of another model (other partition layout) is refused: its job fails, clearly.
job "$tmp/c" mercury --conns 2
check "another layout: the workers fail naming the layout" \
	"[ \$(lines '$tmp/c' 'model layout') -ge 1 ] && [ \$(lines '$tmp/c' '\"ok\":true') = 0 ]"
sleep 0.5
job "$tmp/d" mercury
check "the servers serve the next job after both" \
	"[ \$(grep '\"ok\":true' '$tmp/d' | grep -c '\"mismatches\":0,') = 2 ]"
check "the servers are still running" "kill -0 $srv0 && kill -0 $srv1"

# SIGTERM with a silent peer connected: the server exits at once, status 0.
exec 3<>"/dev/tcp/127.0.0.1/$base"
t0=$(date +%s%N)
kill -TERM "$srv0"
wait "$srv0"
rc=$?
t1=$(date +%s%N)
exec 3>&-
check "SIGTERM: exit status 0 (was $rc)" "[ $rc = 0 ]"
check "SIGTERM: ended within 2 s with a silent peer connected ($(((t1 - t0) / 1000000)) ms)" \
	"[ $(((t1 - t0) / 1000000)) -lt 2000 ]"
kill -TERM "$srv1" 2>/dev/null
wait "$srv1" 2>/dev/null

# --exit-with-parent (what mercury.torch's servers="process" uses): a trainer killed
# without a word does not leave its server behind.
bash -c '"$1" serve --profile "$2" --mode fifo --nodes 1 --rank 0 --hosts 127.0.0.1:$3 \
	--exit-with-parent 2>/dev/null & echo $! >"$4"; wait' _ "$PS" "$PROF" $((base + 5)) \
	"$tmp/child" &
parent=$!
for _ in $(seq 50); do [ -s "$tmp/child" ] && break; sleep 0.1; done
child=$(cat "$tmp/child")
pids+=("$child")
{ kill -KILL "$parent" && wait "$parent"; } 2>/dev/null # (no "Killed" line from bash)
for _ in $(seq 30); do kill -0 "$child" 2>/dev/null || break; sleep 0.1; done
check "--exit-with-parent: the server ends with its parent" "! kill -0 $child 2>/dev/null"

# A server killed mid-job: every worker fails with a clear error, no hang.
serve_up fifo
for r in 0 1; do
	timeout 60 "$PS" run --external-servers --profile "$PROF" --mode fifo --nodes 2 --rank $r \
		--hosts "$H" --iters 200 --timeout 10 >>"$tmp/e" 2>&1 &
done
sleep 1.5
t0=$(date +%s)
{ kill -KILL "$srv1" && wait "$srv1"; } 2>/dev/null
wait_jobs
t1=$(date +%s)
check "server killed: both workers fail naming the server" \
	"[ \$(lines '$tmp/e' 'went away mid-iteration\|disconnected mid-iteration') -ge 2 ]"
check "server killed: the workers ended within 15 s ($((t1 - t0)) s)" "[ $((t1 - t0)) -le 15 ]"

[ $fails -eq 0 ] || { for f in "$tmp"/*; do echo "--- $f"; head -c 1500 "$f"; done; }
[ $fails -eq 0 ] && { echo "all checks passed"; exit 0; }
echo "$fails check(s) failed"
exit 1
