#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The reference PS on a 2-node emulated cluster (namespaces, bridge, 200 Mbit htb egress per
# node), tiny profile, each mode with --verify (every pull checked bitwise against the local
# sum): every node succeeds, mercury's bytes are tagged and land in more than one band, and a
# worker that drops out mid-iteration makes every node fail within a bounded time.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 77; }
CL_PFX=mqps$$
. "$here/../../cluster/lib.sh"
[ -x "$PS_BIN" ] || { echo "SKIP: $PS_BIN not built"; exit 77; }
shaper=tc
[ -x "$MERCURYD" ] && "$MERCURYD" serve --help >/dev/null 2>&1 && shaper=mercuryd
fails=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fails=$((fails + 1)); fi; }

cluster_up 2 200 "$shaper" || { echo "FAIL: cluster setup"; exit 1; }
[ "$shaper" = mercuryd ] && { serve_start || { echo "FAIL: mercuryd serve"; exit 1; }; }
out=$(mktemp)
trap 'rm -f "$out"; cluster_down' EXIT
for m in fifo partition mercury; do
	run_ps "$out" "$m" tiny "$m" --iters 2 --part 100000 --credit 400000 --chunk 10000 --verify --timeout 20
	check "$m: every node finished and every pull matched the local sum" \
		"tail -n1 '$out' | jq -e '.ok' >/dev/null"
done
if [ "$shaper" = mercuryd ]; then
	check "mercury: the count of sockets split over two bands is reported" \
		"grep '\"label\": \"mercury\"' '$out' | jq -e '(.split_sockets | type) == \"number\"' >/dev/null"
	check "mercury: every node tagged through mercuryd" \
		"grep '\"label\": \"mercury\"' '$out' | jq -e '.tagged and .tag_errors == 0' >/dev/null"
	if [ -n "$CL_CG" ]; then
		check "mercury: with the fast path attached to the nodes' cgroups, every tag took it" \
			"grep '\"label\": \"mercury\"' '$out' | jq -e '.tags_fastpath > 0 and .tags_service == 0' >/dev/null"
	fi
	bands=$(cl_in 0 "$MERCURYD" --pin-root "$CL_PIN/n0" -j status e0 |
		jq '[.interfaces[0].per_band[] | select(.bytes > 100000)] | length')
	check "mercury: data spread over several bands ($bands)" "[ '${bands:-0}' -ge 2 ]"
	# Pulls one group below (the default; --pulls-alike the order before): node 0 serves
	# half of layer 3 (1.2M parameters, split over both servers), whose pulls move from
	# layer 3's band to the next group's, layer 4's (tiny's 5 layers in CL_BANDS - 2
	# groups: layer l in band l * groups / 5); its pushes stay. Bytes per band on node 0's
	# egress over one run of each.
	per_band() { cl_in 0 "$MERCURYD" --pin-root "$CL_PIN/n0" -j status e0 | jq -c '[.interfaces[0].per_band[].bytes]'; }
	l4=$((4 * (CL_BANDS - 2) / 5))
	for v in alike below; do
		b0=$(per_band)
		run_ps "$out" "mercury-$v" tiny mercury --iters 3 --chunk 10000 --verify --timeout 20 \
			$([ $v = alike ] && echo --pulls-alike)
		b1=$(per_band)
		delta=$(jq -nc --argjson a "$b0" --argjson b "$b1" '[range($a | length) | $b[.] - $a[.]]')
		echo "bytes per band on node 0 ($v): $delta"
		eval "l4_$v=\$(jq '.[$l4]' <<<\"\$delta\")"
		check "mercury, pulls $v: every pull matched" "tail -n1 '$out' | jq -e '.ok' >/dev/null"
		check "mercury, pulls $v: the result says so" \
			"tail -n1 '$out' | jq -e '.pulls_below == (\"$v\" == \"below\")' >/dev/null"
	done
	check "by default layer 3's pulls go to layer 4's band $l4 ($l4_alike bytes alike, $l4_below below)" \
		"[ '${l4_alike:-0}' -lt 1000000 ] && [ '${l4_below:-0}' -gt 4000000 ]"
	# The window bound on the wire: with --rcvbuf 8192 the peers advertise a window the
	# kernel derives from 16 KiB of buffer (at most 16384 bytes), where the default at 2 nodes
	# (autotuning) grows far past it
	auto=$(tail -n1 "$out" | jq '.peer_window')
	run_ps "$out" mercury-rcvbuf tiny mercury --iters 2 --chunk 10000 --verify --timeout 20 --rcvbuf 8192
	bound=$(tail -n1 "$out" | jq '.peer_window')
	check "mercury --rcvbuf 8192: every pull matched, peers advertised $bound bytes at most (autotuned: $auto)" \
		"tail -n1 '$out' | jq -e '.ok and .rcvbuf == 8192' >/dev/null && [ '${bound:-0}' -gt 0 ] && [ '$bound' -le 16384 ] && [ '${auto:-0}' -gt \$((4 * bound)) ]"
else
	echo "note: mercuryd unavailable, mercury mode ran with per-socket priority (tc shaper)"
fi
check "every run reports the hypervisor's share of the CPU time (steal, 0..1)" \
	"jq -es 'all(.[]; (.host_steal | type) == \"number\" and .host_steal >= 0 and .host_steal <= 1)' '$out' >/dev/null"
retr_f=$(grep '"label": "fifo"' "$out" | jq .retrans_pct)
retr_m=$(grep '"label": "mercury"' "$out" | jq .retrans_pct)
echo "retransmitted segments: fifo ${retr_f}%, mercury ${retr_m}% ($(jq -r .congestion_control <"$out" | head -n1))"

start=$(date +%s)
run_ps "$out" die tiny mercury --iters 4 --die-rank 1 --timeout 30 2>/dev/null
took=$(($(date +%s) - start))
check "disconnect: every node reports an error" \
	"tail -n1 '$out' | jq -e '.ok == false and (.errors | length) == 2' >/dev/null"
check "disconnect: the surviving node names the lost peer" \
	"tail -n1 '$out' | jq -e '.errors[0] | test(\"worker 1 disconnected|server 1 went away\")' >/dev/null"
check "disconnect: detected in ${took}s (< 10 s, far below the 30 s stall timeout)" "[ $took -lt 10 ]"
[ $fails -eq 0 ] && { echo "all checks passed"; exit 0; }
echo "$fails check(s) failed"
exit 1
