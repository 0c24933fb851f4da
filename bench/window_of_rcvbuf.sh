#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The window a receiver advertises for a given SO_RCVBUF on this kernel (mercury-ps --rcvbuf),
# measured: a bulk TCP flow over a veth pair between two fresh namespaces (MTU 1500, the
# receiver's side shaped so the window binds), the sender's snd_wnd read with ss after a
# second of traffic. The kernel sizes the window from the buffer by the ratio of payload to
# memory it has seen, in whole segments, so windows are not in proportion to buffers
# (cluster/multijob.sh --win-split is chosen with this).
#
# Usage: bench/window_of_rcvbuf.sh [BYTES ...]   (default: 6400 8192 10000 16384)
# One JSON line per size: {"rcvbuf": B, "window": bytes, "segments": n, "mss": m}.
set -euo pipefail
[ "$(id -u)" -eq 0 ] || { echo "window_of_rcvbuf: needs root (namespaces)" >&2; exit 77; }
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(6400 8192 10000 16384)
for b in "${sizes[@]}"; do
	[[ $b =~ ^[1-9][0-9]*$ ]] || { echo "window_of_rcvbuf: '$b' is not a byte count" >&2; exit 2; }
done
py=/usr/bin/python3
p=wr$$
rx=${p}r tx=${p}t
cleanup() {
	local pid
	for pid in $(jobs -p); do kill "$pid" 2>/dev/null || true; done
	wait 2>/dev/null || true
	ip netns del "$rx" 2>/dev/null || true
	ip netns del "$tx" 2>/dev/null || true
}
trap cleanup EXIT
ip netns add "$rx"
ip netns add "$tx"
ip link add "${p}a" netns "$rx" type veth peer name "${p}b" netns "$tx"
ip -n "$rx" addr add 10.77.0.1/24 dev "${p}a"
ip -n "$tx" addr add 10.77.0.2/24 dev "${p}b"
ip -n "$rx" link set "${p}a" up
ip -n "$tx" link set "${p}b" up
# the sender's egress at 50 Mbit/s: the flow is window-bound only if the rate does not bind
ip netns exec "$tx" tc qdisc add dev "${p}b" root tbf rate 50mbit burst 32k latency 400ms

port=5001
for b in "${sizes[@]}"; do
	# receiver: SO_RCVBUF before listen (as mercury-ps sets it), reads for at most 4 s
	ip netns exec "$rx" "$py" -c '
import socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, int(sys.argv[1]))
s.bind(("10.77.0.1", int(sys.argv[2]))); s.listen(1); s.settimeout(4)
c, _ = s.accept(); c.settimeout(4); end = time.monotonic() + 4
while time.monotonic() < end and c.recv(65536):
    pass' "$b" "$port" &
	rpid=$!
	sleep 0.3
	# sender: writes for at most 3 s
	ip netns exec "$tx" "$py" -c '
import socket, sys, time
s = socket.create_connection(("10.77.0.1", int(sys.argv[1])), timeout=3)
end = time.monotonic() + 3
try:
    while time.monotonic() < end:
        s.send(b"x" * 65536)
except OSError:
    pass' "$port" &
	spid=$!
	sleep 1.5
	info=$(ip netns exec "$tx" ss -tin dst 10.77.0.1 | tr ' ' '\n')
	wait "$spid" "$rpid" || true
	wnd=$(grep -o '^snd_wnd:[0-9]*' <<<"$info" | head -1 | cut -d: -f2)
	mss=$(grep -o '^mss:[0-9]*' <<<"$info" | head -1 | cut -d: -f2)
	[ -n "$wnd" ] && [ -n "$mss" ] || { echo "window_of_rcvbuf: no window read for $b" >&2; exit 1; }
	printf '{"rcvbuf": %d, "window": %d, "segments": %d, "mss": %d}\n' \
		"$b" "$wnd" $((wnd / mss)) "$mss"
	port=$((port + 1))
done
