# SPDX-License-Identifier: BSD-2-Clause
# Shared helpers for Mercury's namespace tests. Source it; it installs a cleanup trap.
# Every test gets its own namespaces and pin root (prefix unique to the run), and the trap
# removes processes it started (by PID), pins and namespaces even when the test fails.
set -uo pipefail

ROOT=${MERCURY_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
MERCURYD=${MERCURYD:-$ROOT/build/mercuryd}
PFX=${PFX:-mq$$}
PIN_ROOT=${PIN_ROOT:-/sys/fs/bpf/$PFX}
NS_S=${PFX}s # sender: egress of its veth is the bottleneck
NS_R=${PFX}r # receiver
# Under QEMU TCG (the kernel matrix) a veth carries ~1-2 Gbit/s and the guest CPU stalls at
# times: keep the bottleneck well below so the winning flow stays backlogged.
if [ -n "${MERCURY_VM:-}" ]; then RATE_MBIT=${RATE_MBIT:-50}; else RATE_MBIT=${RATE_MBIT:-200}; fi
TCP_CC=${TCP_CC:-bbr}
# Share of the bottleneck the winning flow must get. Under TCG a guest CPU cannot always keep
# even 100 Mbit/s full, so the matrix accepts 80 %.
if [ -n "${MERCURY_VM:-}" ]; then WIN_SHARE=${WIN_SHARE:-0.8}; else WIN_SHARE=${WIN_SHARE:-0.9}; fi
PIDS=()
FAILS=0

[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 77; }
for tool in ip tc jq iperf3 nsenter; do
	command -v "$tool" >/dev/null || { echo "SKIP: $tool missing (make deps)"; exit 77; }
done

in_s() { nsenter --net=/var/run/netns/"$NS_S" "$@"; }
in_r() { nsenter --net=/var/run/netns/"$NS_R" "$@"; }
mercuryd_s() { in_s "$MERCURYD" --pin-root "$PIN_ROOT" "$@"; }

cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
	if [ -d "$PIN_ROOT" ]; then
		for d in "$PIN_ROOT"/*/; do
			[ -d "$d" ] && in_s "$MERCURYD" --pin-root "$PIN_ROOT" detach "$(basename "$d")" >/dev/null 2>&1
		done
		rm -rf "$PIN_ROOT" 2>/dev/null
	fi
	ip netns del "$NS_S" 2>/dev/null
	ip netns del "$NS_R" 2>/dev/null
	true
}
trap cleanup EXIT INT TERM

# TCX exists from Linux 6.6; older kernels get the clsact fallback.
kernel_has_tcx() {
	local v
	v=$(uname -r | awk -F. '{print $1 * 100 + $2}')
	[ "$v" -ge 606 ]
}
default_hook() { if kernel_has_tcx; then echo tcx; else echo clsact; fi; }

fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }
pass() { echo "ok: $*"; }
check() { # description, command...
	local what=$1
	shift
	if "$@"; then pass "$what"; else fail "$what"; fi
}
finish() { [ "$FAILS" -eq 0 ] && { echo "all checks passed"; exit 0; }; echo "$FAILS check(s) failed"; exit 1; }

# Two namespaces joined by veth: va (sender side, 10.77.0.1) <-> vb (10.77.0.2).
# Congestion control is set explicitly ($TCP_CC): results must not depend on the host default.
setup_pair() {
	local txq=${1:-1}
	ip netns add "$NS_S" && ip netns add "$NS_R" || return 1
	ip link add va netns "$NS_S" numtxqueues "$txq" numrxqueues "$txq" type veth \
		peer name vb netns "$NS_R" numtxqueues "$txq" numrxqueues "$txq" || return 1
	in_s ip addr add 10.77.0.1/24 dev va && in_s ip link set va up && in_s ip link set lo up
	in_r ip addr add 10.77.0.2/24 dev vb && in_r ip link set vb up && in_r ip link set lo up
	in_s ip addr add fd77::1/64 dev va nodad && in_r ip addr add fd77::2/64 dev vb nodad
	# Only algorithms in tcp_allowed_congestion_control can be a netns default (here: reno bbr).
	in_s sysctl -qw net.ipv4.tcp_congestion_control="$TCP_CC" &&
		in_r sysctl -qw net.ipv4.tcp_congestion_control="$TCP_CC" || return 1
	echo "namespaces $NS_S/$NS_R, congestion control $TCP_CC"
}

# A TCP sink in the receiver namespace on port $1: accepts and discards, until cleanup.
start_sink() {
	nsenter --net=/var/run/netns/"$NS_R" python3 -c '
import socket, sys, threading
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", int(sys.argv[1]))); s.listen(128)
def sink(c):
    while c.recv(1 << 16):
        pass
while True:
    c, _ = s.accept()
    threading.Thread(target=sink, args=(c,), daemon=True).start()
' "$1" &
	PIDS+=($!)
}

# Skips the test where python3 is missing (the kernel matrix's guest has none).
need_python() {
	command -v python3 >/dev/null || { echo "SKIP: needs python3 (a libmercury client in Python)"; exit 77; }
}

# Client NAME: tests/integration/tag_driver.py for job $2 (6 layers, sink 10.77.0.2:7000) in
# the sender namespace, talked to over two FIFOs; extra args are VAR=value for its
# environment. `ask NAME COMMAND` sends a line and puts the one-line answer in $reply.
start_driver() {
	local name=$1 job=$2 dir fd_in fd_out
	shift 2
	dir=$(mktemp -d)
	mkfifo "$dir/in" "$dir/out"
	env "$@" nsenter --net=/var/run/netns/"$NS_S" python3 "$ROOT/tests/integration/tag_driver.py" \
		10.77.0.2 7000 "$job" 6 <"$dir/in" >"$dir/out" 2>&1 &
	PIDS+=($!)
	exec {fd_in}>"$dir/in" {fd_out}<"$dir/out"
	rm -rf "$dir" # the FIFOs stay open through the fds
	eval "DRIVER_IN_$name=$fd_in DRIVER_OUT_$name=$fd_out"
	read -r -t 20 reply <&"$fd_out" || reply="err no answer"
}
ask() {
	local in out
	eval "in=\$DRIVER_IN_$1 out=\$DRIVER_OUT_$1"
	echo "$2" >&"$in"
	read -r -t 20 reply <&"$out" || reply="err no answer"
}

# With a driver: does the last `bands` reply show >= 1 MB in band $1?
in_band() { echo "$reply" | grep -Eq "band$1=(10[0-9]{5}|[2-9][0-9]{6})"; }
# tag_lands CLIENT LABEL LAYER ITERATION BAND: a new connection, 1 MB tagged as (LAYER,
# ITERATION) and sent; checks the tag was taken and the bytes went to BAND.
tag_lands() {
	ask "$1" connect
	ask "$1" "tag $3 $4"
	check "$2: tag acknowledged ($reply)" test "$reply" = ok
	ask "$1" bands
	check "$2: layer $3 of iteration $4 went to band $5 ($reply)" in_band "$5"
}

# The cgroup v2 mount point ($MERCURY_CGROUP2 in the VM), empty when there is none.
cgroup2_mount() {
	echo "${MERCURY_CGROUP2:-$(awk '$3 == "cgroup2" { print $2; exit }' /proc/self/mounts)}"
}

# Starts `mercuryd serve` in the sender namespace on socket $1, log $2; waits (bounded) for
# its socket. SERVE_PID is the daemon itself (nsenter execs it).
start_serve() {
	nsenter --net=/var/run/netns/"$NS_S" "$MERCURYD" --pin-root "$PIN_ROOT" serve --socket "$1" >"$2" 2>&1 &
	SERVE_PID=$!
	PIDS+=($SERVE_PID)
	for _ in $(seq 1 50); do [ -S "$1" ] && return 0; sleep 0.1; done
	return 1
}

# pid and fd of the established TCP socket with local port $1 in the sender namespace.
socket_owner() {
	in_s ss -Htnp state established "( sport = :$1 )" |
		sed -n 's/.*pid=\([0-9]*\),fd=\([0-9]*\).*/\1 \2/p' | head -n1
}

# Starts two iperf3 flows (client ports 40001, 40002) for $1 seconds; JSON into $2.1 / $2.2.
start_two_flows() {
	local secs=$1 out=$2 i
	# nsenter directly, not through in_s/in_r: a backgrounded function makes $! a subshell,
	# and killing that would leave iperf3 running.
	for i in 1 2; do
		# The receiver's JSON ($out.$i.rx): what was delivered, not what was written into a
		# socket buffer (a starved sender's writes still fill its buffer for a while).
		nsenter --net=/var/run/netns/"$NS_R" iperf3 -s -1 -J -p $((5200 + i)) \
			>"$out.$i.rx" 2>/dev/null &
		PIDS+=($!)
	done
	sleep 0.5
	for i in 1 2; do
		nsenter --net=/var/run/netns/"$NS_S" iperf3 -c 10.77.0.2 -p $((5200 + i)) \
			--cport $((40000 + i)) -t "$secs" -i 1 -J >"$out.$i" 2>&1 &
		PIDS+=($!)
	done
}

# Waits (bounded) until the socket with local port $1 exists; prints "pid fd".
wait_socket() {
	local i owner
	for i in $(seq 1 50); do
		owner=$(socket_owner "$1")
		[ -n "$owner" ] && { echo "$owner"; return 0; }
		sleep 0.1
	done
	return 1
}

# Tags the whole send stream of the flow with local port $1 at level $2.
tag_flow() {
	local owner
	owner=$(wait_socket "$1") || { echo "no socket on port $1"; return 1; }
	set -- "$1" "$2" $owner
	mercuryd_s tag --pid "$3" --fd "$4" --offset 0 --len 1000000000000000 --level "$2" >/dev/null
}

# Mean throughput (Mbit/s) of iperf3 JSON $1 over intervals starting at >= $2 seconds (and
# ending by $3 seconds, if given).
mean_mbit() {
	jq --argjson t0 "$2" --argjson t1 "${3:-1e9}" '[.intervals[]
		| select(.sum.start >= $t0 and .sum.end <= $t1 + 0.01) | .sum.bits_per_second]
		| if length == 0 then 0 else (add / length / 1e6) end' "$1" 2>/dev/null || echo 0
}

# Waits for every started iperf3 (bounded by their own -t) and forgets their PIDs.
wait_flows() {
	local p
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
	PIDS=()
}

# Float comparison: ge A B
ge() { [ "$(echo "$1 >= $2" | bc -l)" -eq 1 ]; }
