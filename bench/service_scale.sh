#!/usr/bin/env bash
# The event service under many clients: 1, 4, 16 and 100 clients tagging at once, one tensor
# per call, p50/p99/p99.9 round trip and tags/s in all. With MERCURYD_BASELINE=<an older
# mercuryd binary> the same runs alternate between that serve and this one, side by side in
# one run (the wire protocol is the same). Medians of REPS runs (default 3) per cell.
. "$(dirname "$0")/../tests/integration/lib.sh"
tmp=$(mktemp -d)
trap 'cleanup; rm -rf "$tmp"' EXIT
bench=$ROOT/build/bench/tag_bench
reps=${REPS:-3}
calls=${SCALE_N:-100000}

setup_pair >/dev/null || exit 1
mercuryd_s attach va --qdisc htb --rate 1gbit >/dev/null || exit 1
run_serve() { # binary: serve on $tmp/<n>.sock; prints the pid
	local sock=$tmp/s$RANDOM.sock
	nsenter --net=/var/run/netns/"$NS_S" "$1" --pin-root "$PIN_ROOT" serve --socket "$sock" 2>>"$tmp/serve.log" &
	echo "$! $sock"
}
median() { sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
builds=("this:$MERCURYD")
[ -n "${MERCURYD_BASELINE:-}" ] && builds=("baseline:$MERCURYD_BASELINE" "${builds[@]}")
printf '%-9s %7s %10s %10s %10s %10s\n' serve clients p50_us p99_us p999_us tags_per_s
for c in 1 4 16 100; do
	for b in "${builds[@]}"; do : >"$tmp/${b%%:*}.$c"; done
	for ((r = 0; r < reps; r++)); do
		for b in "${builds[@]}"; do # alternate: the two see the same machine
			read -r pid sock < <(run_serve "${b#*:}")
			for _ in $(seq 1 50); do [ -S "$sock" ] && break; sleep 0.1; done
			MERCURY_SOCKET=$sock in_s "$bench" scale -j -c "$c" -n "$calls" >>"$tmp/${b%%:*}.$c"
			kill "$pid"
			wait "$pid" 2>/dev/null
		done
	done
	for b in "${builds[@]}"; do
		f=$tmp/${b%%:*}.$c
		printf '%-9s %7d %10s %10s %10s %10s\n' "${b%%:*}" "$c" \
			"$(jq .p50_us "$f" | median)" "$(jq .p99_us "$f" | median)" \
			"$(jq .p999_us "$f" | median)" "$(jq .tags_per_s "$f" | median)"
	done
done
