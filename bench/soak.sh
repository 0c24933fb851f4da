#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Soak: a long job of a small model on the emulated 2-node cluster (cluster/lib.sh, mercuryd
# shaper: `mercuryd attach e0 --qdisc htb`, a `mercuryd serve` and a tag fast path per node),
# with the node's `mercury-ps serve` servers and `mercury-ps run --external-servers` workers
# (the trainers) tagging every push and pull through libmercury, while around it:
#   - the tags alternate between the fast path and the service: every sample interval the
#     fast path is detached from both nodes' cgroups (libmercury falls back to the service)
#     or attached again;
#   - node 1's `mercuryd serve` is restarted every --restart-every intervals, by SIGTERM and
#     by SIGKILL in turn (its clients reconnect; tags go untagged meanwhile);
#   - node 1's interface is detached and attached again every --reattach-every intervals
#     (the job goes on untagged and unshaped for that second).
# Node 0's daemon and interface stay up for the whole run: their series show growth within
# one process and one set of pins; node 1's maps show it across restarts and re-attachments,
# and its restarted serve's memory, descriptors and threads are judged within each life
# (each sample names the PIDs it saw: a new life starts from its own level).
# At the end of every interval (before the next interval's events) one JSON line goes to
# OUT/samples.jsonl: RSS, descriptors and threads of each mercuryd serve, mercury-ps serve
# and trainer; entries of every pinned map (hash: keys; array: non-zero values; the
# per-socket storage maps cannot be walked by key: tagged sockets and their tag ranges from
# `mercuryd status -j` stand for sock_tags); TCP sockets of each node. OUT/errors.json counts
# what went wrong (exit codes, failed events, error lines in the logs, trainer results), and
# bench/soak_report.py fits the series after the warm-up into OUT/summary.json. Exit status 0
# when every metric is flat within its threshold and nothing went wrong, 1 otherwise, 77
# where it cannot run (no root, no cgroup v2 for the fast path).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)

ITERS=100000 DURATION=0 INTERVAL=60 WARMUP=300 RESTART_EVERY=3 REATTACH_EVERY=5
MODEL=tiny SHRINK=10 TSCALE=0.3 RATE=800 OUT="" CANARY=0 MAX_S=7200 REPORT_ARGS=()
usage() {
	cat <<EOF
Usage: bench/soak.sh [options] [-- soak_report.py options]
  --iters N           iterations of the job (100000)
  --duration S        run jobs of --iters iterations one after another until S seconds
                      have passed (default: one job)
  --interval S        seconds between samples and between events (60)
  --warmup S          seconds left out of the fits (300)
  --restart-every K   restart node 1's mercuryd serve every K intervals (3; 0: never)
  --reattach-every K  detach and attach node 1's interface every K intervals (5; 0: never)
  --model M           models/M.prof (tiny); --shrink K (10), --time-scale S (0.3)
  --rate MBIT         link rate (800)
  --out DIR           samples, logs and summary (default: a new folder in /tmp)
  --max-seconds S     fail when the soak has not ended by then (7200)
  --canary            also sample a process that leaks (memory and a descriptor a
                      second): the verdict fails unless its growth is seen
EOF
}
while [ $# -gt 0 ]; do
	case $1 in
	--iters) ITERS=$2; shift ;;
	--duration) DURATION=$2; shift ;;
	--interval) INTERVAL=$2; shift ;;
	--warmup) WARMUP=$2; shift ;;
	--restart-every) RESTART_EVERY=$2; shift ;;
	--reattach-every) REATTACH_EVERY=$2; shift ;;
	--model) MODEL=$2; shift ;;
	--shrink) SHRINK=$2; shift ;;
	--time-scale) TSCALE=$2; shift ;;
	--rate) RATE=$2; shift ;;
	--out) OUT=$2; shift ;;
	--max-seconds) MAX_S=$2; shift ;;
	--canary) CANARY=1 ;;
	--) shift; REPORT_ARGS=("$@"); break ;;
	-h | --help) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
	shift
done
[ "$(id -u)" -eq 0 ] || { echo "SKIP: the soak needs root (namespaces, BPF)"; exit 77; }
for tool in ip tc jq bpftool nsenter ss; do
	command -v "$tool" >/dev/null || { echo "SKIP: $tool missing (make deps)"; exit 77; }
done
OUT=${OUT:-$(mktemp -d /tmp/mercury-soak.XXXXXX)}
mkdir -p "$OUT/logs" || exit 1
: >"$OUT/samples.jsonl"
: >"$OUT/events.log"
CL_PFX=${CL_PFX:-sk$$}
CL_FASTPATH=1
. "$root/cluster/lib.sh"

declare -A ERR=()
SERVE_PID=() PSS_PID=() TR_PID=() CANARY_PID="" MODE=fastpath JOBS=0 RESTARTS=0 REATTACHES=0
err() { # NAME MESSAGE: counts one error
	ERR[$1]=$((${ERR[$1]:-0} + 1))
	echo "$(elapsed) ERROR $1: $2" | tee -a "$OUT/events.log" >&2
}
note() { echo "$(elapsed) $*" >>"$OUT/events.log"; }
T0=$(date +%s.%N)
elapsed() { printf '%.1f' "$(echo "$(date +%s.%N) - $T0" | bc)"; }
mercuryd_n() { local i=$1; shift; cl_in "$i" "$MERCURYD" --pin-root "$CL_PIN/n$i" "$@"; }
forget_pid() { # drops PID $1 from cluster/lib.sh's list (it has ended)
	local p keep=()
	for p in "${CL_PIDS[@]}"; do [ "$p" = "$1" ] || keep+=("$p"); done
	CL_PIDS=("${keep[@]}")
}

# serve_up I LOG: node I's `mercuryd serve` (nsenter execs it: SERVE_PID[I] is the daemon).
serve_up() {
	local i=$1
	mkdir -p "$CL_RUN"
	nsenter --net=/var/run/netns/"$(cl_ns "$i")" "$MERCURYD" --pin-root "$CL_PIN/n$i" serve \
		--socket "$CL_RUN/n$i.sock" >>"$2" 2>&1 &
	SERVE_PID[i]=$!
	CL_PIDS+=($!)
	for _ in $(seq 50); do
		cl_in "$i" "$MERCURYD" --pin-root "$CL_PIN/n$i" -j status >/dev/null 2>&1 &&
			[ -S "$CL_RUN/n$i.sock" ] && return 0
		sleep 0.1
	done
	return 1
}

# node_cmd I: NODE_CMD, the prefix that runs a command in node I's namespace and cgroup with
# node I's daemon socket; an exec chain, so that $! of `"${NODE_CMD[@]}" cmd &` is cmd itself
# (a backgrounded function would make $! a subshell).
PS_ARGS=() NODE_CMD=()
node_cmd() {
	local cg
	mapfile -t cg < <(cl_exec_cg "$1")
	NODE_CMD=(nsenter --net=/var/run/netns/"$(cl_ns "$1")" "${cg[@]}"
		env MERCURY_SOCKET="$CL_RUN/n$1.sock" MERCURY_BANDS="$CL_BANDS")
}
ps_serve_up() {
	local i
	for i in 0 1; do
		node_cmd "$i"
		"${NODE_CMD[@]}" "$PS_BIN" serve "${PS_ARGS[@]}" --rank "$i" \
			>"$OUT/logs/ps-serve$i.out" 2>"$OUT/logs/ps-serve$i.err" &
		PSS_PID[i]=$!
		CL_PIDS+=($!)
	done
}
trainers_up() {
	local i
	JOBS=$((JOBS + 1))
	for i in 0 1; do
		node_cmd "$i"
		"${NODE_CMD[@]}" "$PS_BIN" run --external-servers "${PS_ARGS[@]}" --rank "$i" \
			--iters "$ITERS" --verify --timeout 60 \
			>"$OUT/logs/trainer$i.job$JOBS.out" 2>"$OUT/logs/trainer$i.job$JOBS.err" &
		TR_PID[i]=$!
		CL_PIDS+=($!)
	done
	note "job $JOBS: trainers ${TR_PID[*]}, $ITERS iterations"
}
# trainers_done: waits for both trainers of the job and checks their results. Tags refused
# count as errors on node 0, whose daemon never goes away; on node 1 a tag through the
# service fails at once while its daemon restarts (designed: the bytes go out untagged), and
# those are reported, not failed.
TAG_ERRORS_N1=0
trainers_done() {
	local i rc f
	for i in 0 1; do
		wait "${TR_PID[i]}"
		rc=$?
		forget_pid "${TR_PID[i]}"
		f=$OUT/logs/trainer$i.job$JOBS.out
		[ "$rc" = 0 ] || err trainer_exit "job $JOBS trainer $i exited $rc: $(tail -n 3 "${f%.out}.err")"
		jq -e '.ok == true and .mismatches == 0' "$f" >/dev/null 2>&1 ||
			err trainer_result "job $JOBS trainer $i: not ok or pulls not exact ($(head -c 300 "$f"))"
		jq -e '.tags_fastpath > 0 and .tags_service > 0' "$f" >/dev/null 2>&1 ||
			err trainer_paths "job $JOBS trainer $i: tags did not take both paths ($(jq -c \
				'{tags_fastpath, tags_service}' "$f" 2>/dev/null))"
		tag_errors "$i" "$f" "job $JOBS trainer $i"
	done
	note "job $JOBS ended: $(jq -sc 'map({ok, iters: (.fp_end // [] | length), tags_fastpath, tags_service, tag_errors, split_sockets})' \
		"$OUT"/logs/trainer*.job$JOBS.out 2>/dev/null)"
}
tag_errors() { # NODE JSON_FILE WHAT
	local n
	n=$(jq -s '[.[].tag_errors // 0] | add // 0' "$2" 2>/dev/null)
	if [ "$1" = 1 ]; then
		TAG_ERRORS_N1=$((TAG_ERRORS_N1 + ${n:-0}))
	elif [ "${n:-0}" != 0 ]; then
		err tags_refused "$3: $n tags refused on node 0"
	fi
}
trainers_running() { kill -0 "${TR_PID[0]}" 2>/dev/null || kill -0 "${TR_PID[1]}" 2>/dev/null; }

# A process that leaks 64 KiB and one descriptor a second (--canary).
canary_up() {
	/usr/bin/python3 -c '
import os, time
keep = []
while True:
    keep.append((bytearray(os.urandom(65536)), open("/dev/null")))
    time.sleep(1)' &
	CANARY_PID=$!
	CL_PIDS+=($!)
}

# set_mode fastpath|service: the tag fast path attached to (or detached from) both nodes'
# cgroups; libmercury notices within a second (it looks again after ENOPROTOOPT).
set_mode() {
	local i out
	MODE=$1
	for i in 0 1; do
		if [ "$MODE" = fastpath ]; then
			out=$(mercuryd_n "$i" fastpath attach --cgroup "$(cl_cg "$i")" 2>&1)
		else
			out=$(mercuryd_n "$i" fastpath detach 2>&1)
		fi || err event_failed "node $i: fastpath ${MODE/service/detach}: $out"
	done
	note "mode $MODE"
}
# restart_serve: node 1's mercuryd serve ended by SIGTERM (odd restarts) or SIGKILL (even).
restart_serve() {
	local pid=${SERVE_PID[1]} sig=TERM want=0 rc
	RESTARTS=$((RESTARTS + 1))
	[ $((RESTARTS % 2)) = 0 ] && sig=KILL want=137
	kill -"$sig" "$pid"
	wait "$pid" 2>/dev/null
	rc=$?
	forget_pid "$pid"
	[ "$rc" = "$want" ] || err serve_exit "node 1's mercuryd serve exited $rc on SIG$sig (wanted $want)"
	serve_up 1 "$OUT/logs/serve1.log" || err event_failed "node 1's mercuryd serve did not come back"
	note "restart $RESTARTS of node 1's mercuryd serve (SIG$sig, exit $rc): pid ${SERVE_PID[1]}"
}
# reattach: node 1's interface detached (its last: the fast path goes too) and attached again.
reattach() {
	local out
	REATTACHES=$((REATTACHES + 1))
	out=$(mercuryd_n 1 detach e0 2>&1) || err event_failed "node 1: detach e0: $out"
	sleep 1
	out=$(shaper_attach 1 "$RATE" 2>&1) || err event_failed "node 1: attach e0: $out"
	[ "$MODE" = fastpath ] && { out=$(mercuryd_n 1 fastpath attach --cgroup "$(cl_cg 1)" 2>&1) ||
		err event_failed "node 1: fastpath attach after attach: $out"; }
	note "re-attachment $REATTACHES of node 1's e0"
}
# events CYCLE: what happens at the start of interval CYCLE (1, 2, ...).
events() {
	local k=$1
	[ "$REATTACH_EVERY" -gt 0 ] && [ $((k % REATTACH_EVERY)) = 0 ] && reattach
	[ "$RESTART_EVERY" -gt 0 ] && [ $((k % RESTART_EVERY)) = 0 ] && restart_serve
	if [ $((k % 2)) = 0 ]; then set_mode fastpath; else set_mode service; fi
}

# proc NAME PID: "NAME.rss_kb N", "NAME.fds N", "NAME.threads N" (nothing for a process gone)
proc() {
	local name=$1 pid=$2 rss thr fds
	[ -n "$pid" ] && [ -r "/proc/$pid/status" ] || return 0
	read -r rss thr < <(awk '/^VmRSS:/ { r = $2 } /^Threads:/ { t = $2 } END { print r, t }' \
		"/proc/$pid/status" 2>/dev/null)
	fds=$(ls "/proc/$pid/fd" 2>/dev/null | wc -l)
	[ -n "$rss" ] || return 0
	echo "$name.rss_kb $rss"
	echo "$name.fds $fds"
	[ "$name" = canary ] || echo "$name.threads $thr"
}
# map_entries PIN: a hash map's keys, an array's non-zero values; nothing for other objects
# (programs, links) and for per-socket storage (no keys to walk).
map_entries() {
	local type
	type=$(bpftool -j map show pinned "$1" 2>/dev/null | jq -r '.type // empty')
	case $type in
	hash | lru_hash | percpu_hash) bpftool -j map dump pinned "$1" | jq length ;;
	array | percpu_array)
		bpftool -j map dump pinned "$1" |
			jq '[.[] | select((.value // ([.values[].value] | add)) | any(. != "0x00"))] | length' ;;
	esac
}
# node_metrics I: node I's pinned maps, jobs, tagged sockets and their ranges, TCP sockets.
node_metrics() {
	local i=$1 f n st
	while read -r f; do
		n=$(map_entries "$f")
		[ -n "$n" ] && echo "n$i.maps.$(echo "${f#"$CL_PIN/n$i/"}" | tr / .) $n"
	done < <(find "$CL_PIN/n$i" -type f | sort)
	[ -e "$CL_PIN/n$i/jobs" ] && echo "n$i.maps.jobs_active $(bpftool -j map dump pinned \
		"$CL_PIN/n$i/jobs" | jq '[.[] | select(.value[4:8] | any(. != "0x00"))] | length')"
	st=$(mercuryd_n "$i" -j status 2>/dev/null)
	echo "n$i.tagged_sockets $(jq '.tagged_sockets // "null"' <<<"$st")"
	echo "n$i.tag_ranges $(jq '[.tagged[]?.ranges] | add // 0' <<<"$st")"
	echo "n$i.tcp_sockets $(cl_in "$i" ss -Htan | wc -l)"
}
# {"n0": bytes node 0's e0 has sent (/proc/net/dev: sysfs would show the host's links), "n1": ...}: the job's progress between samples.
tx_bytes() {
	local i
	for i in 0 1; do
		echo "n$i $(cl_in "$i" awk -F'[: ]+' '$2 == "e0" { print $11 }' /proc/net/dev)"
	done | jq -nRc '[inputs | split(" ") | {(.[0]): (.[1] | tonumber)}] | add'
}
# {"n0.mercuryd_serve": PID, ...}: which life of each process a sample saw (node 1's serve is
# restarted; soak_report.py judges growth within each life).
pids() {
	local i
	for i in 0 1; do
		echo "n$i.mercuryd_serve ${SERVE_PID[i]:-null}"
		echo "n$i.ps_serve ${PSS_PID[i]:-null}"
		echo "n$i.trainer ${TR_PID[i]:-null}"
	done | jq -nRc '[inputs | split(" ") | {(.[0]): (.[1] | fromjson)}] | add'
}
# sample CYCLE: one line of OUT/samples.jsonl; none when a trainer ended meanwhile (a job
# that ends is not in its steady state).
both_trainers() { kill -0 "${TR_PID[0]}" 2>/dev/null && kill -0 "${TR_PID[1]}" 2>/dev/null; }
sample() {
	local i t line
	t=$(elapsed)
	both_trainers || return 0
	line=$({
		for i in 0 1; do
			proc "n$i.mercuryd_serve" "${SERVE_PID[i]}"
			proc "n$i.ps_serve" "${PSS_PID[i]}"
			proc "n$i.trainer" "${TR_PID[i]}"
			node_metrics "$i"
		done
		proc canary "$CANARY_PID"
	} | jq -nRc --argjson t "$t" --argjson c "$1" --arg m "$MODE" --argjson j "$JOBS" \
		--argjson tx "$(tx_bytes)" --argjson pids "$(pids)" \
		'[inputs | split(" ") | {(.[0]): (.[1] | fromjson)}] | add |
		 {t: $t, cycle: $c, mode: $m, job: $j, tx_bytes: $tx, pids: $pids, metrics: .}')
	both_trainers && echo "$line" >>"$OUT/samples.jsonl"
}

# Stops what ran for the whole soak and checks how it ended.
wind_down() {
	local i rc
	for i in 0 1; do
		kill -0 "${PSS_PID[i]}" 2>/dev/null || err ps_serve_exit "node $i's mercury-ps serve died"
		kill -TERM "${PSS_PID[i]}" 2>/dev/null
		wait "${PSS_PID[i]}"
		rc=$?
		forget_pid "${PSS_PID[i]}"
		[ "$rc" = 0 ] || err ps_serve_exit "node $i's mercury-ps serve exited $rc on SIGTERM"
		[ "$(jq -s '[.[] | select(.ok == true)] | length' "$OUT/logs/ps-serve$i.out" 2>/dev/null)" = "$JOBS" ] ||
			err ps_serve_result "node $i's mercury-ps serve: not every one of $JOBS jobs ok"
		tag_errors "$i" "$OUT/logs/ps-serve$i.out" "node $i's mercury-ps serve"
		kill -0 "${SERVE_PID[i]}" 2>/dev/null || err serve_exit "node $i's mercuryd serve died"
		kill -TERM "${SERVE_PID[i]}" 2>/dev/null
		wait "${SERVE_PID[i]}"
		rc=$?
		forget_pid "${SERVE_PID[i]}"
		[ "$rc" = 0 ] || err serve_exit "node $i's mercuryd serve exited $rc on SIGTERM"
	done
	[ -n "$CANARY_PID" ] && { kill "$CANARY_PID"; wait "$CANARY_PID" 2>/dev/null; forget_pid "$CANARY_PID"; }
}
# Lines in the processes' logs that report an error (warnings are counted, not failed: a
# daemon away is designed to cost priority and say so).
scan_logs() {
	local f n
	for f in "$OUT"/logs/*.log "$OUT"/logs/*.err; do
		[ -f "$f" ] || continue
		n=$(grep -Eci 'error|fail|cannot|abort|assert|sanitizer|segfault' "$f")
		[ "$n" -gt 0 ] && { ERR[log_errors]=$((${ERR[log_errors]:-0} + n)); note "$n error line(s) in $f"; }
		n=$(grep -ci 'warn' "$f")
		WARNINGS=$((WARNINGS + n))
	done
}
WARNINGS=0
errors_json() {
	local k
	for k in "${!ERR[@]}"; do echo "$k ${ERR[$k]}"; done |
		jq -nRc '[inputs | split(" ") | {(.[0]): (.[1] | tonumber)}] | add // {}'
}

cluster_up 2 "$RATE" mercuryd >"$OUT/logs/cluster.log" 2>&1 || { cat "$OUT/logs/cluster.log"; exit 1; }
for i in 0 1; do
	serve_up "$i" "$OUT/logs/serve$i.log" || { echo "soak: mercuryd serve did not start" >&2; exit 1; }
done
fastpath_start 2>>"$OUT/logs/cluster.log"
[ -n "$CL_CG" ] || { echo "SKIP: no tag fast path here ($(cat "$OUT/logs/cluster.log"))"; exit 77; }
PS_ARGS=(--profile "$root/models/$MODEL.prof" --mode mercury --nodes 2 --bands "$CL_BANDS"
	--hosts "$(cl_ip 0):9555,$(cl_ip 1):9555" --shrink "$SHRINK" --time-scale "$TSCALE")
ps_serve_up
sleep 0.5
[ "$CANARY" = 1 ] && canary_up
echo "soak: $MODEL (shrink $SHRINK, time scale $TSCALE) on 2 nodes at $RATE Mbit/s, $ITERS iterations a job, a sample every $INTERVAL s, warm-up $WARMUP s; output in $OUT"
T0=$(date +%s.%N)
trainers_up
cycle=0
while :; do
	while trainers_running && [ "$(echo "$(elapsed) < ($cycle + 1) * $INTERVAL" | bc)" = 1 ]; do
		sleep 0.5
	done
	if ! trainers_running; then
		trainers_done
		[ "$DURATION" != 0 ] && [ "$(echo "$(elapsed) < $DURATION" | bc)" = 1 ] && { trainers_up; continue; }
		break
	fi
	if [ "$(echo "$(elapsed) > $MAX_S" | bc)" = 1 ]; then
		err timeout "the soak has run past --max-seconds $MAX_S"
		break
	fi
	sample "$cycle"
	cycle=$((cycle + 1))
	events "$cycle"
done
wind_down
scan_logs
errors_json >"$OUT/errors.json"
/usr/bin/python3 "$here/soak_report.py" "$OUT/samples.jsonl" --errors "$OUT/errors.json" \
	--warmup "$WARMUP" "${REPORT_ARGS[@]}" >"$OUT/report.json"
rc=$?
jq --argjson jobs "$JOBS" --argjson iters "$ITERS" --argjson r "$RESTARTS" --argjson a "$REATTACHES" \
	--argjson w "$WARNINGS" --argjson t1 "$TAG_ERRORS_N1" --argjson s "$(elapsed)" --arg model "$MODEL" --argjson k "$SHRINK" \
	--argjson ts "$TSCALE" --argjson rate "$RATE" --argjson iv "$INTERVAL" \
	'{model: $model, shrink: $k, time_scale: $ts, rate_mbit: $rate, interval_s: $iv,
	  jobs: $jobs, iterations: ($jobs * $iters), seconds: $s, serve_restarts: $r,
	  reattaches: $a, log_warnings: $w, tag_errors_node1: $t1} + .' "$OUT/report.json" >"$OUT/summary.json"
jq -r '"soak: \(.verdict): \(.iterations) iterations in \(.seconds) s, \(.serve_restarts) serve restarts, \(.reattaches) re-attachments, \(.samples) samples (\(.samples_after_warmup) after the warm-up), \(.errors) errors \(.error_counts), growing: \(.growing + .unknown), canary missed: \(.canary_missed)"' \
	"$OUT/summary.json"
jq -r '.metrics | to_entries[] | "  \(.key): \(.value.first) -> \(.value.last)\(if (.value.lives // 1) > 1 then " (\(.value.lives) lives)" else "" end), \(.value.slope_per_min)/min, growth \(.value.growth) (limit \(.value.threshold)): \(.value.verdict)"' \
	"$OUT/summary.json"
exit $rc
