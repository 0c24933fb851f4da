#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Tags under many clients: 1, 4, 16 and 100 clients tagging at once, one tensor per call,
# p50/p99/p99.9 per call and tags/s in all, through the service (`mercuryd serve`, a Unix
# socket round trip) and through the tag fast path (one setsockopt on the socket, the client
# in the cgroup `mercuryd fastpath attach` names), side by side: the modes alternate run by
# run. Quiet, and under load (LOAD=1, the default: a bulk iperf3 flow over the shaped veth for
# the whole run, the "other work" of a training node). With MERCURYD_BASELINE=<an older
# mercuryd binary> its serve runs too (the wire protocol is the same). Medians of REPS runs.
# Then one client on one core back to back (tag_bench core), next to the syscall floor.
. "$(dirname "$0")/../tests/integration/lib.sh"
tmp=$(mktemp -d)
cg_mount=$(cgroup2_mount)
cg=${cg_mount:+$cg_mount/${PFX}bench}
trap 'cleanup; [ -n "$cg" ] && rmdir "$cg" 2>/dev/null; rm -rf "$tmp"' EXIT
bench=$ROOT/build/bench/tag_bench
reps=${REPS:-3}
calls=${SCALE_N:-100000}
loads=${LOADS:-"quiet load"}

setup_pair >/dev/null || exit 1
mercuryd_s attach va --qdisc htb --rate 1gbit >/dev/null || exit 1
modes=("service:$MERCURYD")
if [ -n "$cg" ] && mkdir -p "$cg" && mercuryd_s fastpath attach --cgroup "$cg" >/dev/null; then
	modes+=("fastpath:$MERCURYD")
else
	echo "(no cgroup v2 hierarchy: the fast path is not measured)"
fi
[ -n "${MERCURYD_BASELINE:-}" ] && modes=("baseline:$MERCURYD_BASELINE" "${modes[@]}")

run_serve() { # binary: serve on a fresh socket; prints "pid socket"
	local sock=$tmp/s$RANDOM.sock
	nsenter --net=/var/run/netns/"$NS_S" "$1" --pin-root "$PIN_ROOT" serve --socket "$sock" 2>>"$tmp/serve.log" &
	echo "$! $sock"
}
run_bench() { # mode socket tag_bench-args...: one run, JSON line
	local mode=$1 sock=$2
	shift 2
	if [ "$mode" = fastpath ]; then
		# Into the cgroup before any socket exists: a socket belongs to its creator's cgroup.
		MERCURY_SOCKET=$sock in_s sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$cg" \
			"$bench" "$@"
	else
		MERCURY_SOCKET=$sock MERCURY_FASTPATH=0 in_s "$bench" "$@"
	fi
}
start_load() { # a bulk flow over the 1 Gbit/s htb root until stopped
	nsenter --net=/var/run/netns/"$NS_R" iperf3 -s -p 5299 >/dev/null 2>&1 &
	LOAD_PIDS=($!)
	sleep 0.3
	nsenter --net=/var/run/netns/"$NS_S" iperf3 -c 10.77.0.2 -p 5299 -t 3600 >/dev/null 2>&1 &
	LOAD_PIDS+=($!)
	PIDS+=("${LOAD_PIDS[@]}")
	sleep 1
}
stop_load() {
	kill "${LOAD_PIDS[@]}" 2>/dev/null
	wait "${LOAD_PIDS[@]}" 2>/dev/null
}
median() { sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }

printf '%-6s %-9s %7s %10s %10s %10s %10s\n' load mode clients p50_us p99_us p999_us tags_per_s
for load in $loads; do
	[ "$load" = load ] && start_load
	for c in 1 4 16 100; do
		for m in "${modes[@]}"; do : >"$tmp/$load.${m%%:*}.$c"; done
		for ((r = 0; r < reps; r++)); do
			for m in "${modes[@]}"; do # alternate: every mode sees the same machine
				read -r pid sock < <(run_serve "${m#*:}")
				for _ in $(seq 1 50); do [ -S "$sock" ] && break; sleep 0.1; done
				run_bench "${m%%:*}" "$sock" scale -j -c "$c" -n "$calls" >>"$tmp/$load.${m%%:*}.$c"
				kill "$pid"
				wait "$pid" 2>/dev/null
			done
		done
		for m in "${modes[@]}"; do
			f=$tmp/$load.${m%%:*}.$c
			printf '%-6s %-9s %7d %10s %10s %10s %10s\n' "$load" "${m%%:*}" "$c" \
				"$(jq .p50_us "$f" | median)" "$(jq .p99_us "$f" | median)" \
				"$(jq .p999_us "$f" | median)" "$(jq .tags_per_s "$f" | median)"
		done
	done
	# One client on one core, back to back (tag_bench core: medians of 5 rounds).
	for m in "${modes[@]}"; do
		read -r pid sock < <(run_serve "${m#*:}")
		for _ in $(seq 1 50); do [ -S "$sock" ] && break; sleep 0.1; done
		run_bench "${m%%:*}" "$sock" core -n "${CORE_N:-100000}" | sed "s/^/$load ${m%%:*}: /"
		kill "$pid"
		wait "$pid" 2>/dev/null
	done
	[ "$load" = load ] && stop_load
done
