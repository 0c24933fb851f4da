#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# docs/pytorch.md, run as written on two network namespaces standing in for its two machines
# (a veth pair named eth0 on both sides, 10.0.0.1 and 10.0.0.2): every fenced block marked
# `sh node0`, `sh node1` or `sh both`, in order, each with bash -e in its node's namespace from
# the repository root (a node0 block and the node1 block right after it run at the same time:
# the two launchers). Per node, outside the text (one per machine on real machines, shared by
# two namespaces here): mercuryd is build/mercuryd with the node's own --pin-root and serve
# --socket, MERCURY_SOCKET points the trainers there, /tmp/mt-logs is the node's directory,
# python3 is /usr/bin/python3. Then: the training finished on both nodes with its loss
# printed, both trainers tagged, and each node's link carried the trainers' bytes in several
# bands; detach restored the interface (no clsact, no htb left).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
guide=$root/docs/pytorch.md
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 77; }
/usr/bin/python3 -c 'import torch, torchvision' 2>/dev/null || { echo "SKIP: no python3-torch/torchvision (make deps)"; exit 77; }
[ -x "$root/build/mercuryd" ] && [ -f "$root/build/libmercury-ps.so" ] || { echo "SKIP: not built"; exit 77; }
getent group mercury >/dev/null || { echo "SKIP: no group mercury (the guide's step 1)"; exit 77; }
command -v jq >/dev/null || { echo "SKIP: no jq"; exit 77; }

pfx=mqpg$$
work=$(mktemp -d)
pids=$work/pids
: >"$pids"
cleanup() {
	local p
	# only what this test started: the launchers (by PID) and mercuryd serve (PIDs recorded
	# by the wrapper below)
	for p in ${bg_pids:-} $(cat "$pids" 2>/dev/null); do kill "$p" 2>/dev/null; done
	sleep 0.5
	for p in ${bg_pids:-} $(cat "$pids" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
	for n in 0 1; do
		[ -e /var/run/netns/${pfx}n$n ] && nsenter --net=/var/run/netns/${pfx}n$n \
			"$root/build/mercuryd" --pin-root "/sys/fs/bpf/$pfx/n$n" detach eth0 >/dev/null 2>&1
		ip netns del ${pfx}n$n 2>/dev/null
	done
	rm -rf /sys/fs/bpf/"$pfx"
	rm -rf "$work"
}
trap cleanup EXIT
fails=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fails=$((fails + 1)); fi; }

# Pins go under /sys/fs/bpf (bpffs), one tree per node.
mkdir -p /sys/fs/bpf/"$pfx"
for n in 0 1; do ip netns add ${pfx}n$n || exit 1; done
ip link add ${pfx}a netns ${pfx}n0 type veth peer name ${pfx}b netns ${pfx}n1 || exit 1
for n in 0 1; do
	dev=$([ $n = 0 ] && echo ${pfx}a || echo ${pfx}b)
	nsenter --net=/var/run/netns/${pfx}n$n sh -e -c "
		ip link set lo up
		ip link set $dev name eth0
		ip addr add 10.0.0.$((n + 1))/24 dev eth0
		ip link set eth0 up"
	mkdir -p "$work/logs$n"
done
# a closed port answers with a reset: the link and both addresses are up
reach() { [[ $(nsenter --net=/var/run/netns/${pfx}n0 timeout 2 bash -c 'exec 3<>/dev/tcp/10.0.0.2/9' 2>&1) == *refused* ]]; }
for ((t = 0; t < 50; t++)); do reach && break; sleep 0.1; done
reach || { echo "FAIL: the two namespaces do not reach each other"; exit 1; }

# The blocks, in order: "TAG<TAB>base64 of the text" per line.
mapfile -t blocks < <(/usr/bin/python3 - "$guide" <<'EOF'
import base64, re, sys
text = open(sys.argv[1]).read()
for m in re.finditer(r"^```sh (node0|node1|both)\n(.*?)^```$", text, re.S | re.M):
    print("%s\t%s" % (m.group(1), base64.b64encode(m.group(2).encode()).decode()))
EOF
)
check "the guide has blocks for both nodes (${#blocks[@]})" "[ ${#blocks[@]} -ge 5 ]"

# run_block NODE TEXT: the text in the node's namespace, with the node's own paths.
run_block() {
	local n=$1 text=$2
	text=${text//\/tmp\/mt-logs/$work/logs$n}
	nsenter --net=/var/run/netns/${pfx}n$n env MERCURY_SOCKET="$work/n$n.sock" \
		PIDS="$pids" PIN="/sys/fs/bpf/$pfx/n$n" SOCK="$work/n$n.sock" M="$root/build/mercuryd" \
		timeout 240 bash -e -c '
mercuryd() {
	if [ "$1" = serve ]; then
		shift
		echo $BASHPID >>"$PIDS"
		exec "$M" --pin-root "$PIN" serve --socket "$SOCK" "$@"
	fi
	"$M" --pin-root "$PIN" "$@"
}
python3() { /usr/bin/python3 "$@"; }
cd "$0"
'"$text" "$root" >>"$work/node$n.out" 2>&1
}

i=0
while [ $i -lt ${#blocks[@]} ]; do
	tag=${blocks[$i]%%$'\t'*}
	text=$(echo "${blocks[$i]#*$'\t'}" | base64 -d)
	echo "== block $i ($tag)"
	sed 's/^/   | /' <<<"$text"
	if [ "$tag" = node0 ] && [ $((i + 1)) -lt ${#blocks[@]} ] && [ "${blocks[$((i + 1))]%%$'\t'*}" = node1 ]; then
		text1=$(echo "${blocks[$((i + 1))]#*$'\t'}" | base64 -d)
		echo "== block $((i + 1)) (node1, with block $i)"
		sed 's/^/   | /' <<<"$text1"
		run_block 0 "$text" &
		p0=$!
		run_block 1 "$text1" &
		p1=$!
		bg_pids="$p0 $p1"
		wait $p0; r0=$?
		wait $p1; r1=$?
		bg_pids=
		check "blocks $i and $((i + 1)) ran on node 0 and node 1" "[ $r0 -eq 0 ] && [ $r1 -eq 0 ]"
		i=$((i + 2))
		continue
	fi
	for n in 0 1; do
		[ "$tag" = both ] || [ "$tag" = node$n ] || continue
		run_block $n "$text"
		rc=$?
		check "block $i ran on node $n" "[ $rc -eq 0 ]"
	done
	# mercuryd serve was started in the background: wait for its socket
	if grep -q 'mercuryd serve' <<<"$text"; then
		for ((t = 0; t < 50; t++)); do
			[ -S "$work/n0.sock" ] && [ -S "$work/n1.sock" ] && break
			sleep 0.1
		done
	fi
	i=$((i + 1))
done

for n in 0 1; do
	echo "== node $n output (tail)"
	tail -n 12 "$work/node$n.out" | sed 's/^/   | /'
done
steps=$(grep -rho 'step [0-9]* loss [0-9.]*' "$work/logs0" | wc -l)
check "rank 0 printed a loss for each of the 6 steps ($steps)" "[ $steps -eq 6 ]"
check "both trainers tagged through their node's mercuryd" \
	"[ \$(grep -rh 'tagged True' '$work/logs0' '$work/logs1' | wc -l) -eq 2 ]"
# the per-band lines the guide's check printed, one per node: several bands carried bytes
for n in 0 1; do
	bands=$(grep -h '^\[{"band"' "$work/node$n.out" | tail -n 1 | jq '[.[] | select(.bytes > 100000)] | length')
	check "node $n: the trainers' bytes went out in several bands (${bands:-none})" "[ '${bands:-0}' -ge 2 ]"
	left=$(nsenter --net=/var/run/netns/${pfx}n$n tc qdisc show dev eth0 | grep -c 'htb\|clsact')
	check "node $n: detach left no htb or clsact on eth0" "[ '$left' -eq 0 ]"
done
[ $fails -eq 0 ] && { echo "all checks passed"; exit 0; }
echo "$fails check(s) failed"
exit 1
