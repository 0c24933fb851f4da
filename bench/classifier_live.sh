#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Per-packet cost of the *production* classifier on live TCP traffic, from the kernel's BPF
# run-time statistics (kernel.bpf_stats_enabled: run_time_ns and run_cnt per program).
# BPF_PROG_TEST_RUN (bench/classifier_cost.c) cannot hand the program a real socket, so
# bpf_tcp_sock() and the two bpf_sk_storage_get() calls are only measured here.
#
# In a private netns pair, `mercuryd attach va --qdisc htb --rate 100gbit` (never the
# bottleneck: a veth here moves far less, so no shaping, no backlog, the GSO sizes of an
# unshaped path) puts the classifier on va's egress; build/noop.bpf.o sits on clsact egress
# of the same device and runs right after it for every packet (the classifier returns
# TC_ACT_UNSPEC), so each run measures both programs on the same packets. ROUNDS rounds, each
# one tagged flow (32 ranges, every measured byte in the last: the search takes all its steps)
# and one untagged flow, in alternating order; SECS seconds measured per flow. Median ns per run.
# One run handles one skb, usually a GSO super-packet: bytes and MSS-sized segments per run
# are reported alongside. `-j`: JSON.
set -uo pipefail
ROUNDS=${ROUNDS:-5}
SECS=${SECS:-3}
TAG_BUDGET=${TAG_BUDGET:-2} # seconds of stream left between the stream and the first tag
WAIT_MAX=${WAIT_MAX:-20}     # seconds a flow may take to reach its tagged ranges
json=0
[ "${1:-}" = -j ] && json=1
PFX=${PFX:-mql$$}
. "$(dirname "$0")/../tests/integration/lib.sh"
for tool in bpftool sysctl; do
	command -v "$tool" >/dev/null || { echo "SKIP: $tool missing"; exit 77; }
done
[ -x "$MERCURYD" ] || { echo "SKIP: $MERCURYD missing (make)"; exit 77; }
[ -f "$ROOT/build/noop.bpf.o" ] || { echo "SKIP: build/noop.bpf.o missing (make)"; exit 77; }
tmp=$(mktemp -d)
old_stats=$(sysctl -n kernel.bpf_stats_enabled) || { echo "no kernel.bpf_stats_enabled" >&2; exit 1; }
finish_live() {
	sysctl -qw kernel.bpf_stats_enabled="$old_stats"
	cleanup
	rm -rf "$tmp"
}
trap finish_live EXIT
trap 'exit 130' INT TERM # exit runs the EXIT trap
die() { echo "classifier_live: $*" >&2; exit 1; }

setup_pair >/dev/null || die "namespace setup failed"
mercuryd_s attach va --qdisc htb --rate 100gbit >/dev/null || die "mercuryd attach failed"
hook=$(mercuryd_s -j status va | jq -r '.interfaces[0].hook')
in_s tc qdisc add dev va clsact 2>/dev/null # mercuryd's tcx hook leaves no clsact
in_s tc filter add dev va egress prio 1 handle 1 bpf da obj "$ROOT/build/noop.bpf.o" sec tc ||
	die "cannot attach the no-op program"
cls_id=$(bpftool -j prog show pinned "$PIN_ROOT/va/prog" | jq '.id')
noop_id=$(in_s tc -j filter show dev va egress | jq '[.[] | .options.prog.id // empty][0]')
if [ -z "$cls_id" ] || [ -z "$noop_id" ] || [ "$noop_id" = null ]; then
	die "program ids not found"
fi
sysctl -qw kernel.bpf_stats_enabled=1 || die "cannot enable kernel.bpf_stats_enabled"

# "run_time_ns run_cnt" of programs $1 and $2, read in one call so that they match in time.
prog_stats() {
	bpftool -j prog show | jq -r --argjson a "$1" --argjson b "$2" '
		def s(id): (map(select(.id == id))[0] // {}) | "\(.run_time_ns // 0) \(.run_cnt // 0)";
		"\(s($a)) \(s($b))"'
}
sock_show() { mercuryd_s -j tag --pid "$1" --fd "$2" --show; }
# "run_time_ns run_cnt" of both programs, the classifier's byte and tagged-packet counters,
# the socket's acked bytes, the sender's retransmitted segments: taken together so that
# they cover the same window.
snapshot() {
	local st
	st=$(mercuryd_s -j status va | jq -r '.interfaces[0].outcomes |
		"\([.[].bytes] | add) \([.[].packets] | add) \(.tagged.packets)"')
	echo "$(prog_stats "$cls_id" "$noop_id") $st $(sock_show "$1" "$2" | jq .acked)" \
		"$(in_s awk '$1 == "Tcp:" && $13 ~ /^[0-9]+$/ {print $13}' /proc/net/snmp)"
}

# Tags 32 ranges ahead of the stream: 31 one-byte ranges (levels alternate, or they would
# merge) and then one to the end of any test. They start $3 seconds ahead at the stream's
# current rate, room for the 32 tag calls (a range the peer acknowledges before the last call
# is dropped by the next one). Prints the first offset of the last range.
tag_ahead() {
	local pid=$1 fd=$2 secs=$3 base k a0 a1
	a0=$(sock_show "$pid" "$fd" | jq .acked)
	sleep 0.2
	a1=$(sock_show "$pid" "$fd" | jq .next_write)
	base=$((a1 + (a1 - a0) * 5 * secs + 1048576))
	for k in $(seq 0 30); do
		mercuryd_s tag --pid "$pid" --fd "$fd" --offset $((base + k)) --len 1 \
			--level $((1 + k % 2)) >/dev/null || return 1
	done
	mercuryd_s tag --pid "$pid" --fd "$fd" --offset $((base + 31)) --len 1000000000000000 \
		--level 0 >/dev/null || return 1
	echo $((base + 31))
}

forget_pid() {
	local p keep=()
	for p in "${PIDS[@]}"; do [ "$p" = "$1" ] || keep+=("$p"); done
	PIDS=("${keep[@]}")
}

stop_flow() { # client pid, server pid
	kill "$1" "$2" 2>/dev/null
	wait "$1" "$2" 2>/dev/null
	forget_pid "$1"
	forget_pid "$2"
}

# One flow (mode, port, tag budget in seconds); prints "mode cls_ns_per_run noop_ns_per_run
# runs bytes_per_run segs_per_run tagged_fraction gbit retransmitted_segments".
run_flow() {
	local mode=$1 cport=$2 budget=$3 owner pid fd last=0 a b acked mss spid cpid
	# A server per flow (-1: one test): a client stopped mid-test leaves no busy server.
	# nsenter is started directly (not through in_r, a function): then $! is iperf3 itself
	# (nsenter execs it), and killing $! really stops the flow.
	nsenter --net=/var/run/netns/"$NS_R" iperf3 -s -1 -p "$cport" >/dev/null 2>&1 &
	spid=$!
	PIDS+=("$spid")
	sleep 0.3
	nsenter --net=/var/run/netns/"$NS_S" iperf3 -c 10.77.0.2 -p "$cport" --cport "$cport" \
		-t $((WAIT_MAX + SECS + 3)) >/dev/null 2>&1 &
	cpid=$!
	PIDS+=("$cpid")
	owner=$(wait_socket "$cport") || die "no socket on port $cport"
	read -r pid fd <<<"$owner"
	sleep 1 # past slow start, for both modes, and before tag_ahead measures the rate
	if [ "$mode" = tagged ]; then
		last=$(tag_ahead "$pid" "$fd" "$budget") || die "tagging failed"
		if [ "$(sock_show "$pid" "$fd" | jq '.ranges | length')" -ne 32 ]; then
			stop_flow "$cpid" "$spid"
			return 2 # the stream overtook the tags: the caller retries with more room
		fi
	fi
	for _ in $(seq 1 $((WAIT_MAX * 10))); do
		acked=$(sock_show "$pid" "$fd" | jq .acked)
		[ "$acked" -gt "$last" ] && break
		sleep 0.1
	done
	[ "$acked" -gt "$last" ] || die "flow did not reach its tagged ranges in ${WAIT_MAX}s"
	mss=$(in_s ss -Htni state established "( sport = :$cport )" |
		sed -n 's/.* mss:\([0-9]*\).*/\1/p' | head -n1)
	a=$(snapshot "$pid" "$fd")
	sleep "$SECS"
	b=$(snapshot "$pid" "$fd")
	if [ "$mode" = tagged ]; then
		[ "$(sock_show "$pid" "$fd" | jq '.ranges | length')" -eq 32 ] ||
			die "the socket lost ranges during the measurement"
	fi
	stop_flow "$cpid" "$spid" # -t is only an upper bound; the window is measured
	# shellcheck disable=SC2086
	set -- $a $b
	# $1..$9 before, ${10}..${18} after: cls_ns cls_cnt noop_ns noop_cnt bytes pkts tagged
	# acked retrans
	awk -v m="$mode" -v mss="${mss:-1448}" -v secs="$SECS" \
		-v c0="$1" -v n0="$2" -v o0="$3" -v p0="$4" -v y0="$5" -v k0="$6" -v t0="$7" -v a0="$8" \
		-v r0="$9" -v c1="${10}" -v n1="${11}" -v o1="${12}" -v p1="${13}" -v y1="${14}" \
		-v k1="${15}" -v t1="${16}" -v a1="${17}" -v r1="${18}" 'BEGIN {
		runs = n1 - n0; if (runs <= 0 || p1 - p0 <= 0) exit 1
		# both programs see every packet: counts that differ mean the baseline is not fair
		if ((p1 - p0) / runs < 0.98 || (p1 - p0) / runs > 1.02) {
			printf "classifier ran %d times, the no-op %d\n", runs, p1 - p0 > "/dev/stderr"
			exit 1
		}
		printf "%s %.2f %.2f %d %.0f %.2f %.4f %.2f %d\n", m, (c1 - c0) / runs,
			(o1 - o0) / (p1 - p0), runs, (y1 - y0) / runs, (a1 - a0) / mss / runs,
			(t1 - t0) / (k1 - k0), (a1 - a0) * 8 / secs / 1e9, r1 - r0 }'
}

: >"$tmp/runs"
port=41000
for r in $(seq 1 "$ROUNDS"); do
	if [ $((r % 2)) = 1 ]; then order="tagged untagged"; else order="untagged tagged"; fi
	for mode in $order; do
		budget=$TAG_BUDGET
		for attempt in 1 2 3; do
			port=$((port + 1))
			run_flow "$mode" "$port" "$budget" >>"$tmp/runs"
			rc=$?
			[ $rc = 2 ] || break
			echo "round $r: the stream overtook the tags, retrying with more room" >&2
			budget=$((budget * 2))
		done
		[ "$rc" = 0 ] || die "round $r $mode: no runs counted, tags overtaken $attempt times," \
			"or the no-op saw other packets"
	done
done

# Medians per mode: classifier, noop, their difference taken run by run, and context.
median_of() { # mode, awk expression over the fields of one line
	awk -v m="$1" "\$1 == m { print $2 }" "$tmp/runs" | sort -g |
		awk '{a[NR] = $1} END {print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2)}'
}
declare -A med
for mode in tagged untagged; do
	med[$mode.cls]=$(median_of "$mode" '$2')
	med[$mode.noop]=$(median_of "$mode" '$3')
	med[$mode.diff]=$(median_of "$mode" '$2 - $3')
	med[$mode.runs]=$(median_of "$mode" '$4')
	med[$mode.bytes]=$(median_of "$mode" '$5')
	med[$mode.segs]=$(median_of "$mode" '$6')
	med[$mode.tagfrac]=$(median_of "$mode" '$7')
	med[$mode.gbit]=$(median_of "$mode" '$8')
done
noop_all=$(awk '{print $3}' "$tmp/runs" | sort -g |
	awk '{a[NR] = $1} END {print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2)}')

if [ $json = 1 ]; then
	jq -n --rawfile runs "$tmp/runs" --arg hook "$hook" --argjson secs "$SECS" \
		--argjson noop "$noop_all" --argjson rounds "$ROUNDS" \
		--argjson tc "${med[tagged.cls]}" --argjson td "${med[tagged.diff]}" \
		--argjson tn "${med[tagged.noop]}" --argjson tb "${med[tagged.bytes]}" \
		--argjson ts "${med[tagged.segs]}" --argjson tf "${med[tagged.tagfrac]}" \
		--argjson tg "${med[tagged.gbit]}" \
		--argjson uc "${med[untagged.cls]}" --argjson ud "${med[untagged.diff]}" \
		--argjson un "${med[untagged.noop]}" --argjson ub "${med[untagged.bytes]}" \
		--argjson us "${med[untagged.segs]}" --argjson ug "${med[untagged.gbit]}" \
		'{kernel: "'"$(uname -r)"'", classifier_hook: $hook, noop_hook: "clsact",
		  rounds: $rounds, seconds_per_flow: $secs, noop_ns_per_run: $noop,
		  tagged: {ns_per_run: $tc, noop_ns_per_run: $tn, minus_noop_ns: $td,
			   bytes_per_run: $tb, segments_per_run: $ts, tagged_fraction: $tf,
			   payload_gbit: $tg},
		  untagged: {ns_per_run: $uc, noop_ns_per_run: $un, minus_noop_ns: $ud,
			     bytes_per_run: $ub, segments_per_run: $us, payload_gbit: $ug},
		  runs: ($runs | split("\n") | map(select(length > 0) | split(" ")) |
			 map({mode: .[0], ns_per_run: (.[1] | tonumber),
			      noop_ns_per_run: (.[2] | tonumber), runs: (.[3] | tonumber),
			      bytes_per_run: (.[4] | tonumber), segments_per_run: (.[5] | tonumber),
			      tagged_fraction: (.[6] | tonumber), payload_gbit: (.[7] | tonumber),
			      retransmitted_segments: (.[8] | tonumber)}))}'
else
	printf 'production classifier on live TCP (veth, %s; %d rounds x %ds per flow; median):\n' \
		"$hook" "$ROUNDS" "$SECS"
	printf '  %-9s %8s %8s %10s %10s %9s %8s %7s\n' flow ns/run noop "minus noop" bytes/run \
		segs/run tagged Gbit/s
	for mode in tagged untagged; do
		printf '  %-9s %8.1f %8.1f %10.1f %10.0f %9.2f %8.3f %7.2f\n' "$mode" \
			"${med[$mode.cls]}" "${med[$mode.noop]}" "${med[$mode.diff]}" \
			"${med[$mode.bytes]}" "${med[$mode.segs]}" "${med[$mode.tagfrac]}" \
			"${med[$mode.gbit]}"
	done
	printf '  no-op (clsact, same packets) %.1f ns/run; tagged - untagged %.1f ns/run;' \
		"$noop_all" "$(echo "${med[tagged.cls]} - ${med[untagged.cls]}" | bc -l)"
	printf ' %d segments retransmitted in all windows\n' "$(awk '{s += $9} END {print s + 0}' "$tmp/runs")"
	echo '  runs (mode ns/run noop runs bytes/run segs/run tagged Gbit/s retransmitted):'
	sed 's/^/    /' "$tmp/runs"
fi
