#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# Runs inside the systemd guest of tests/vm/systemd-e2e.sh as a oneshot unit once the system is
# up: mercuryd's unit as an operator uses it. Every check prints "E2E ok|FAIL: ..." to the second
# serial port; the last line is "E2E-DONE <failures>"; then the guest powers off.
set -u
exec 3>/dev/ttyS1
fails=0
say() { echo "E2E $*" >&3; }
check() { # description, command...
	local what=$1
	shift
	if "$@" >/dev/null 2>&1; then say "ok: $what"; else say "FAIL: $what"; fails=$((fails + 1)); fi
}
status_json() { mercuryd -j status va; }
health() { status_json | jq -r '.interfaces[0].health'; }
band0_packets() { status_json | jq '.interfaces[0].per_band[0].packets'; }

say "booted: $(uname -r), systemd $(systemctl --version | awk 'NR == 1 {print $2}')"
# A veth into a peer namespace, as a node's NIC; the interface the config names.
ip netns add peer && ip link add va type veth peer name vb netns peer &&
	ip addr add 10.9.0.1/24 dev va && ip link set va up &&
	ip -n peer addr add 10.9.0.2/24 dev vb && ip -n peer link set vb up && ip -n peer link set lo up
check "test network up" ping -c1 -W2 10.9.0.2
mkdir -p /etc/mercury
echo "va --qdisc htb --rate 100mbit  # attached as the service starts" >/etc/mercury/interfaces

# The package enabled the unit, so it started at boot, before va and this configuration
# existed: a restart reads them, as after an operator's edit.
check "systemctl restart mercuryd (enabled by the package: started at boot)" systemctl restart mercuryd
check "it reached READY under its hardening (active, Type=notify)" \
	test "$(systemctl show -p ActiveState --value mercuryd)" = active
check "the unit's sandbox is in force (NoNewPrivileges, no CAP_SYS_ADMIN)" sh -c \
	"grep -q '^NoNewPrivs:[[:space:]]*1' /proc/\$(systemctl show -p MainPID --value mercuryd)/status &&
	 ! systemctl show -p CapabilityBoundingSet --value mercuryd | grep -q cap_sys_admin"
check "va attached at start from /etc/mercury/interfaces" test "$(health)" = ok
check "the event socket is there, group mercury" test "$(stat -c '%a %G' /run/mercury/mercuryd.sock)" = "660 mercury"

# A client through the hardened service: the example tags one connection per layer.
ip netns exec peer socat -u TCP-LISTEN:7000,fork,reuseaddr OPEN:/dev/null &
sink=$!
sleep 0.5
out=$(/usr/local/bin/tag_tensor 10.9.0.2 7000 4 2000000 2>&1)
check "a libmercury client tags through the service (layer 1 in band 0)" sh -c "echo '$out' | grep -q 'layer 1: .*band0=[0-9]\{7\}'"
say "client said: $(echo "$out" | tr '\n' ';')"

# A long flow whose socket an admin tags: its tags must outlive a restart of the service.
ip netns exec peer iperf3 -s -D -1 >/dev/null 2>&1
sleep 0.5
iperf3 -c 10.9.0.2 -t 30 -b 20M >/dev/null 2>&1 &
flow=$!
# iperf3 opens a control connection, then the data one (the higher fd): wait for both.
owner=
for _ in $(seq 1 100); do
	owner=$(ss -Htnp state established '( dport = :5201 )' |
		sed -n 's/.*pid=\([0-9]*\),fd=\([0-9]*\).*/\1 \2/p' | sort -k2,2n | awk 'END { if (NR >= 2) print }')
	[ -n "$owner" ] && break
	sleep 0.1
done
set -- $owner
check "tag the flow's socket (admin)" mercuryd tag --pid "${1:-0}" --fd "${2:-0}" --offset 0 --len 1000000000000 --level 0
ranges() { mercuryd -j tag --pid "${1:-0}" --fd "${2:-0}" --show | jq -c '.ranges'; }
before=$(ranges "$@")

check "systemctl restart mercuryd" systemctl restart mercuryd
check "active again after the restart" test "$(systemctl show -p ActiveState --value mercuryd)" = active
check "the tags outlived the restart ($before)" test "$(ranges "$@")" = "$before"
check "still attached after the restart" test "$(health)" = ok

check "systemctl stop mercuryd" systemctl stop mercuryd
check "inactive after stop" test "$(systemctl show -p ActiveState --value mercuryd)" = inactive
p1=$(band0_packets)
sleep 2
p2=$(band0_packets)
check "stopped: the data path keeps classifying the tagged flow (band 0: $p1 -> $p2 packets)" test "$p2" -gt "$p1"
check "stopped: the service removed its socket" test ! -e /run/mercury/mercuryd.sock

journal=$(journalctl -u mercuryd --no-pager -o cat 2>&1)
check "journalctl -u mercuryd: the attach at start" grep -q "attached va: htb" <<<"$journal"
check "journalctl -u mercuryd: serving events" grep -q "serving events on /run/mercury/mercuryd.sock" <<<"$journal"
check "journalctl -u mercuryd: the clean exit on SIGTERM" grep -q "signal 15, exiting" <<<"$journal"
say "journal: $(tr '\n' ';' <<<"$journal" | cut -c1-900)"

# Metrics under the unit: the shipped drop-in, read by Debian's node_exporter (user
# prometheus) despite the unit's UMask=0077 and ProtectSystem=strict.
mkdir -p /etc/systemd/system/mercuryd.service.d
check "install the node_exporter drop-in" cp /usr/share/mercury/node-exporter.conf /etc/systemd/system/mercuryd.service.d/
systemctl daemon-reload
check "systemctl start mercuryd with the drop-in" systemctl start mercuryd
prom=/var/lib/prometheus/node-exporter/mercury.prom
for _ in $(seq 1 40); do [ -f "$prom" ] && break; sleep 0.5; done
check "serve writes $prom mode 0644 ($(stat -c %a "$prom" 2>&1))" test "$(stat -c %a "$prom" 2>/dev/null)" = 644
check "user prometheus can read it" setpriv --reuid=prometheus --regid=prometheus --clear-groups cat "$prom"
systemctl start prometheus-node-exporter
for _ in $(seq 1 40); do page=$(curl -s http://127.0.0.1:9100/metrics) && [ -n "$page" ] && break; sleep 0.5; done
scraped() { grep -q '^mercury_' <<<"$page" && grep -q '^node_textfile_scrape_error 0' <<<"$page"; }
check "node_exporter serves mercury's metrics ($(grep -c '^mercury_' <<<"$page") series, scrape error $(awk '/^node_textfile_scrape_error / { print $2 }' <<<"$page"))" scraped
check "systemctl stop mercuryd" systemctl stop mercuryd
rm -r /etc/systemd/system/mercuryd.service.d
systemctl daemon-reload

kill "$flow" "$sink" 2>/dev/null
# Removal takes the data path off every interface; purge leaves nothing of Mercury behind.
check "systemctl start mercuryd again (va attached)" systemctl start mercuryd
check "dpkg --purge python3-mercury libmercury-dev mercury" dpkg --purge python3-mercury libmercury-dev mercury
check "purged: no Mercury qdisc on va (root is the default again)" sh -c "! tc qdisc show dev va root | grep -q '^qdisc htb'"
check "purged: no filter on va's egress (the 6.1 guest hooks with clsact)" sh -c "[ -z \"\$(tc filter show dev va egress 2>/dev/null)\" ]"
check "purged: no pin under /sys/fs/bpf/mercury" test ! -e /sys/fs/bpf/mercury
check "purged: no group mercury" sh -c "! getent group mercury"
check "purged: no unit, no socket, no /etc/mercury" sh -c "! systemctl cat mercuryd >/dev/null 2>&1 && [ ! -e /run/mercury/mercuryd.sock ] && [ ! -e /etc/mercury ]"
echo "E2E-DONE $fails" >&3
systemctl poweroff --no-block
