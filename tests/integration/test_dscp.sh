#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# DSCP export on real traffic: `mercuryd attach --dscp` in the sender namespace, three TCP
# flows to the receiver, a packet capture on the receiver's veth (before its tc ingress, where
# a test program drops 1 in 32 of each flow's data packets so that the senders retransmit),
# ECN on.
# Checks: each tagged flow's segments, retransmissions included, arrive with its band's DSCP
# and the ECN codepoint TCP gave them kept (ECT(0) on first transmissions, not-ECT on
# retransmissions, RFC 3168 6.1.5), IPv4 header checksums verify, IPv6 too;
# an untagged flow keeps the DSCP its application set; status, metrics and bpftool show the
# map; detach and re-attach with another map are exact. The fabric order guard (on by
# default): a fourth flow whose level rises mid-stream (3 -> 0, sent back to back, then more
# once all is acknowledged) keeps band 3's DSCP while bytes before are unacknowledged (status counts
# them) and carries band 0's once they are acknowledged, never before (the capture compares
# each rise with the receiver's ACKs).
. "$(dirname "$0")/lib.sh"
need_python
tmp=$(mktemp -d)
trap 'cleanup; rm -rf "$tmp"' EXIT
MB=${MB:-8}
MAP=ef,af41,af21,cs1 # bands 0..3: 46 34 18 8

setup_pair || { fail "namespace setup"; finish; }
for ns in "$NS_S" "$NS_R"; do
	nsenter --net=/var/run/netns/"$ns" sysctl -qw net.ipv4.tcp_ecn=1
done
check "attach --qdisc htb --bands 4 --dscp $MAP" \
	mercuryd_s attach va --qdisc htb --bands 4 --rate "${RATE_MBIT}mbit" --dscp "$MAP"

# Receiver: a dual-stack sink on 7000..7002; the capture; the dropper behind it.
nsenter --net=/var/run/netns/"$NS_R" python3 -c '
import socket, threading
def serve(port):
    s = socket.socket(socket.AF_INET6); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0); s.bind(("::", port)); s.listen(8)
    while True:
        c, _ = s.accept()
        threading.Thread(target=lambda c=c: [None for _ in iter(lambda: c.recv(1 << 16), b"")], daemon=True).start()
for p in (7000, 7001, 7002, 7003):
    threading.Thread(target=serve, args=(p,), daemon=True).start()
threading.Event().wait()
' &
PIDS+=($!)
nsenter --net=/var/run/netns/"$NS_R" python3 "$ROOT/tests/integration/dscp_capture.py" vb 12 \
	46,34,18,8 7003:$(((2 << 20) + 1)) >"$tmp/cap" &
cap_pid=$!
PIDS+=($cap_pid)
in_r tc qdisc add dev vb clsact &&
	in_r tc filter add dev vb ingress bpf da obj "$ROOT/build/test_drop.bpf.o" sec tc ||
	fail "receiver's dropper"
sleep 0.5

# Sender: v4 :7000 (tagged level 1), v6 :7001 (tagged level 0), v4 :7002 untagged with its
# own TOS 0x30 (DSCP 12, AF12: no band's); each sends $MB MiB once $tmp/go exists. v4 :7003:
# 2 MiB tagged level 3 and 2 MiB level 0 at once, 1 MiB more (level 0) once all of it is
# acknowledged.
nsenter --net=/var/run/netns/"$NS_S" python3 -c '
import fcntl, os, socket, sys, termios, threading, time
mb, d = int(sys.argv[1]), sys.argv[2]
a = socket.create_connection(("10.77.0.2", 7000))
b = socket.create_connection(("fd77::2", 7001))
c = socket.socket(); c.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, 0x30); c.connect(("10.77.0.2", 7002))
r = socket.create_connection(("10.77.0.2", 7003))
open(d + "/fds.tmp", "w").write("%d %d %d %d %d\n" % (os.getpid(), a.fileno(), b.fileno(), c.fileno(), r.fileno()))
os.rename(d + "/fds.tmp", d + "/fds")
for _ in range(100):
    if os.path.exists(d + "/go"):
        break
    time.sleep(0.1)
def rising():
    r.sendall(bytes(4 << 20))
    # wait (up to 8 s) until every byte so far is acknowledged, so that the next write may
    # rise: sendall returns once the bytes are queued, and under load that is long before
    for _ in range(160):
        if fcntl.ioctl(r, termios.TIOCOUTQ, b"\0\0\0\0") == b"\0\0\0\0":
            break
        time.sleep(0.05)
    time.sleep(0.2)
    r.sendall(bytes(1 << 20))
ts = [threading.Thread(target=s.sendall, args=(bytes(mb << 20),)) for s in (a, b, c)]
ts.append(threading.Thread(target=rising))
[t.start() for t in ts]; [t.join() for t in ts]
time.sleep(0.5)
' "$MB" "$tmp" &
PIDS+=($!)
snd_pid=$!
for _ in $(seq 1 50); do [ -f "$tmp/fds" ] && break; sleep 0.1; done
read -r pid fd4 fd6 fdu fdr <"$tmp/fds" || fail "sender did not start"
mercuryd_s tag --pid "$pid" --fd "$fd4" --offset 0 --len 1000000000000 --level 1 >/dev/null ||
	fail "tag the IPv4 flow"
mercuryd_s tag --pid "$pid" --fd "$fd6" --offset 0 --len 1000000000000 --level 0 >/dev/null ||
	fail "tag the IPv6 flow"
# offsets of an actively opened socket start at 1: [1, 2 MiB] level 3, the rest level 0
mercuryd_s tag --pid "$pid" --fd "$fdr" --offset 1 --len $((2 << 20)) --level 3 >/dev/null &&
	mercuryd_s tag --pid "$pid" --fd "$fdr" --offset $(((2 << 20) + 1)) --len 1000000000000 \
		--level 0 >/dev/null || fail "tag the rising flow"
retrans0=$(in_s awk '/^Tcp:/ { n++; if (n == 2) print $13 }' /proc/net/snmp)
touch "$tmp/go"
for _ in $(seq 1 100); do kill -0 "$snd_pid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$snd_pid" 2>/dev/null && fail "the senders did not finish within 10 s"
retrans1=$(in_s awk '/^Tcp:/ { n++; if (n == 2) print $13 }' /proc/net/snmp)
wait "$cap_pid"
cat "$tmp/cap"

jqc() { jq -r "$1" "$tmp/cap"; }
echo "sender retransmitted $((retrans1 - retrans0)) segments"
check "senders retransmitted (the dropper worked)" test $((retrans1 - retrans0)) -gt 0
for p in 7000:34 7001:46; do
	port=${p%:*} want=${p#*:}
	check "port $port: >= 50 (GSO) packets captured" test "$(jqc ".\"$port\".segments // 0")" -ge 50
	check "port $port: every segment carries DSCP $want" \
		test "$(jqc ".\"$port\".dscp | keys | join(\",\")")" = "$want"
	check "port $port: ECT(0) kept on every first transmission" \
		test "$(jqc ".\"$port\".ecn_new | keys | join(\",\")")" = 2
	check "port $port: not-ECT kept on every retransmission" \
		test "$(jqc ".\"$port\".ecn_retransmitted | keys | join(\",\")")" = 0
	check "port $port: retransmissions seen, all with DSCP $want" \
		test "$(jqc ".\"$port\".retransmitted_dscp | keys | join(\",\")")" = "$want"
done
check "port 7000: every IPv4 header checksum verifies" test "$(jqc '."7000".bad_ipv4_csum')" -eq 0
# attach's default --control first: the sender's segments without payload (its FIN, ACKs)
# carry band 0's DSCP where they had none, and keep an application's own
for p in 7000 7001; do
	check "port $p: the sender's segments without payload carry band 0's DSCP 46 ($(jq -c ".\"$p\".control_dscp" "$tmp/cap"))" \
		test "$(jqc ".\"$p\".control_dscp | keys | join(\",\")")" = 46
done
check "port 7002: ... and keep the application's DSCP 12 ($(jq -c '."7002".control_dscp' "$tmp/cap"))" \
	test "$(jqc '."7002".control_dscp | keys | join(",")')" = 12
check "port 7002 (untagged): the application's DSCP 12 untouched" \
	test "$(jqc '."7002".dscp | keys | join(",")')" = 12
check "port 7002: checksums verify" test "$(jqc '."7002".bad_ipv4_csum')" -eq 0

check "port 7003 (rising): both DSCPs seen (8 before, 46 after)" \
	test "$(jqc '."7003".dscp | keys | join(",")')" = 46,8
check "port 7003: its DSCP rose ($(jqc '."7003".rises') rises)" test "$(jqc '."7003".rises')" -ge 1
check "port 7003: no rise while bytes before it were unacknowledged" \
	test "$(jqc '."7003".rises_unacked')" -eq 0
for port in 7000 7001; do
	check "port $port (one level): no rise" test "$(jqc ".\"$port\".rises")" -eq 0
done

mercuryd_s -j status va >"$tmp/status"
check "status -j: fabric guard on, no bound" \
	test "$(jq -c '.interfaces[0] | [.dscp_guard, .dscp_guard_us]' "$tmp/status")" = "[true,0]"
# Whether a packet had to be kept depends on the window: with nothing in flight at the rise
# (BBR on a 50 us veth keeps about one GSO packet out) there is none to keep.
holdable=$(jqc '."7003".holdable // 0')
kept=$(jq '.interfaces[0] | .dscp_kept.packets + .order_kept.packets' "$tmp/status")
dkept=$(jq '.interfaces[0].dscp_kept.packets' "$tmp/status")
kept_if_needed() { [ "$holdable" -eq 0 ] || [ "$kept" -gt 0 ]; }
check "status -j counts the packets its guards kept ($kept) whenever one had to be ($holdable seen)" \
	kept_if_needed
check "metrics count the packets kept at their previous DSCP as status does ($dkept)" \
	grep -qE "^mercury_dscp_kept_packets_total\\{iface=\"va\"\\} $dkept\$" <(mercuryd_s metrics)
check "status -j shows the map" \
	test "$(jq -c '[.interfaces[0].dscp[].dscp]' "$tmp/status")" = "[46,34,18,8]"
check "status -j counts marked packets" \
	test "$(jq '.interfaces[0].dscp_marked.packets' "$tmp/status")" -gt 100
check "metrics show band 1's DSCP" \
	grep -q 'mercury_band_dscp{iface="va",band="1"} 34' <(mercuryd_s metrics)
check "bpftool shows the map in cfg" \
	grep -q '"dscp": \[46,34,18,8' <(bpftool map dump pinned "$PIN_ROOT/va/cfg" | tr -d ' \n' |
		sed 's/,/, /g; s/"dscp":\[/"dscp": [/' | sed 's/, /,/g')
check "same --dscp again: already attached" \
	grep -q "already attached" <(mercuryd_s attach va --qdisc htb --bands 4 --dscp "$MAP" 2>&1)
refused() { ! mercuryd_s "$@" >/dev/null 2>&1; }
check "another --dscp without --force is refused" refused attach va --dscp default
check "another --dscp-guard without --force is refused" refused attach va --dscp "$MAP" \
	--dscp-guard off
check "--force --dscp-guard 20ms re-attaches with the bound" mercuryd_s attach va --force \
	--qdisc htb --bands 4 --rate "${RATE_MBIT}mbit" --dscp "$MAP" --dscp-guard 20ms
check "status -j: the bound" \
	test "$(mercuryd_s -j status va | jq -c '.interfaces[0] | [.dscp_guard, .dscp_guard_us]')" = "[true,20000]"
check "--force --dscp off re-attaches without export" mercuryd_s attach va --force --qdisc htb \
	--bands 4 --rate "${RATE_MBIT}mbit" --dscp off
check "status -j: dscp null" test "$(mercuryd_s -j status va | jq '.interfaces[0].dscp')" = null
check "detach" mercuryd_s detach va
check "nothing left on va" test "$(in_s tc -j qdisc show dev va root | jq -r '.[0].kind')" = noqueue
finish
