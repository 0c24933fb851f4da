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
listening() { # port: wait (10 s at most) until the peer listens on it (slow under TCG)
	for _ in $(seq 1 100); do
		[ -n "$(ip netns exec peer ss -Hltn "( sport = :$1 )")" ] && return 0
		sleep 0.1
	done
	return 1
}

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
fresh_pins=$(find /sys/fs/bpf/mercury -mindepth 1 | sort | tr '\n' ' ')
say "pins: $fresh_pins"
check "the event socket is there, group mercury" test "$(stat -c '%a %G' /run/mercury/mercuryd.sock)" = "660 mercury"

# A client through the hardened service: the example tags one connection per layer.
ip netns exec peer socat -u TCP-LISTEN:7000,fork,reuseaddr OPEN:/dev/null &
sink=$!
listening 7000
out=$(/usr/local/bin/tag_tensor 10.9.0.2 7000 4 2000000 2>&1)
check "a libmercury client tags through the service (layer 1 in band 0)" sh -c "echo '$out' | grep -q 'layer 1: .*band0=[0-9]\{7\}'"
say "client said: $(echo "$out" | tr '\n' ';')"

# A long flow whose socket an admin tags: its tags must outlive a restart of the service.
ip netns exec peer iperf3 -s -D -1 >/dev/null 2>&1
listening 5201
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
wait "$flow" 2>/dev/null
# Removal takes the data path off every interface; purge leaves nothing of Mercury behind.
purged() { # what was purged
	check "$1: no Mercury qdisc on va (root is the default again)" sh -c "! tc qdisc show dev va root | grep -q '^qdisc htb'"
	check "$1: no filter on va's egress (the 6.1 guest hooks with clsact)" sh -c "[ -z \"\$(tc filter show dev va egress 2>/dev/null)\" ]"
	check "$1: no pin under /sys/fs/bpf/mercury" test ! -e /sys/fs/bpf/mercury
	check "$1: no group mercury" sh -c "! getent group mercury"
	check "$1: no unit, no socket, no /etc/mercury" sh -c "! systemctl cat mercuryd >/dev/null 2>&1 && [ ! -e /run/mercury/mercuryd.sock ] && [ ! -e /etc/mercury ]"
}
check "systemctl start mercuryd again (va attached)" systemctl start mercuryd
check "dpkg --purge python3-mercury libmercury-dev mercury" dpkg --purge python3-mercury libmercury-dev mercury
purged purged

# An upgrade from an older release whose pins have another layout (systemd-e2e.sh built its
# package from that commit): the operator's configuration, written for the old release, is
# kept; the new package detaches with the old binary and the service attaches va again with
# the new one; nothing of the old layout stays pinned; traffic is classified again.
U=/var/lib/mercury-e2e/upgrade
if [ -f "$U/env" ]; then
	. "$U/env" # OLD_VERSION OLD_LAYOUT NEW_VERSION NEW_LAYOUT OLD_COMMIT
	t_upgrade=$SECONDS
	say "upgrade: mercury $OLD_VERSION (layout $OLD_LAYOUT, $OLD_COMMIT) -> $NEW_VERSION (layout $NEW_LAYOUT)"
	check "install mercury $OLD_VERSION" dpkg -i "$U"/old/*.deb
	mkdir -p /etc/mercury
	conf="va --qdisc htb --rate 100mbit  # written by the operator for $OLD_VERSION"
	echo "$conf" >/etc/mercury/interfaces
	check "systemctl enable --now mercuryd ($OLD_VERSION's postinst did neither)" systemctl enable --now mercuryd
	check "the old mercuryd runs: $(mercuryd -V 2>&1)" sh -c "mercuryd -V | grep -q '(layout $OLD_LAYOUT)'"
	check "old: va attached at start from /etc/mercury/interfaces" test "$(health)" = ok
	ip netns exec peer iperf3 -s -D -1 >/dev/null 2>&1
	listening 5201
	iperf3 -c 10.9.0.2 -t 120 -b 20M >/dev/null 2>&1 &
	flow=$!
	data_socket() { # pid fd of iperf3's data connection (the higher fd)
		for _ in $(seq 1 100); do
			o=$(ss -Htnp state established '( dport = :5201 )' |
				sed -n 's/.*pid=\([0-9]*\),fd=\([0-9]*\).*/\1 \2/p' | sort -k2,2n | awk 'END { if (NR >= 2) print }')
			[ -n "$o" ] && { echo "$o"; return; }
			sleep 0.1
		done
		echo "0 0"
	}
	set -- $(data_socket)
	check "old: tag the flow's socket" mercuryd tag --pid "$1" --fd "$2" --offset 0 --len 1000000000000 --level 0
	p1=$(band0_packets)
	sleep 2
	p2=$(band0_packets)
	check "old: the tagged flow is classified (band 0: $p1 -> $p2 packets)" test "$p2" -gt "$p1"
	old_at=$(status_json | jq '.interfaces[0].attached_at_ns')
	old_pid=$(systemctl show -p MainPID --value mercuryd)
	say "old pins: $(find /sys/fs/bpf/mercury -mindepth 1 | sort | tr '\n' ' ')"

	since=$(date '+%Y-%m-%d %H:%M:%S')
	out=$(dpkg -i "$U"/new/*.deb </dev/null 2>&1)
	rc=$?
	say "dpkg -i said: $(tr '\n' ';' <<<"$out" | cut -c1-1200)"
	check "upgrade: dpkg -i of the new packages (no terminal: no conffile prompt)" test "$rc" = 0
	check "upgrade: every package installed at $NEW_VERSION" test "$(dpkg-query -W -f='${db:Status-Abbrev}${Version} ' mercury libmercury-dev python3-mercury)" = "ii $NEW_VERSION ii $NEW_VERSION ii $NEW_VERSION "
	check "upgrade: the new mercuryd: $(mercuryd -V 2>&1)" sh -c "mercuryd -V | grep -q '(layout $NEW_LAYOUT)'"
	check "upgrade: the operator's /etc/mercury/interfaces kept, now the conffile" sh -c \
		"[ \"\$(cat /etc/mercury/interfaces)\" = '$conf' ] && dpkg-query -W -f='\${Conffiles}' mercury | grep -q '^ /etc/mercury/interfaces '"
	check "upgrade: the package's example beside it (interfaces.dpkg-dist)" test -f /etc/mercury/interfaces.dpkg-dist
	new_pid=$(systemctl show -p MainPID --value mercuryd)
	check "upgrade: the unit runs again, a new process ($old_pid -> $new_pid) of the new binary" sh -c \
		"[ \"\$(systemctl show -p ActiveState --value mercuryd)\" = active ] && [ '$new_pid' != '$old_pid' ] && [ '$new_pid' != 0 ] && [ \"\$(readlink /proc/$new_pid/exe)\" = /usr/sbin/mercuryd ]"
	check "upgrade: va attached again, by the new mercuryd (its record of layout $NEW_LAYOUT reads: health $(health))" test "$(health)" = ok
	new_at=$(status_json | jq '.interfaces[0].attached_at_ns')
	check "upgrade: a new attach ($old_at -> $new_at)" sh -c "[ -n '$new_at' ] && [ '$new_at' != null ] && [ '$new_at' != '$old_at' ]"
	pins=$(find /sys/fs/bpf/mercury -mindepth 1 | sort | tr '\n' ' ')
	say "new pins: $pins"
	check "upgrade: the pins are exactly a fresh install's (none left of layout $OLD_LAYOUT)" test "$pins" = "$fresh_pins"
	check "upgrade: the tag fast path is the new one" test "$(status_json | jq -r '.fastpath.attached')" = true
	check "upgrade: no 'upgrade' state left in /run" test ! -e /run/mercury-upgrade
	set -- $(data_socket)
	check "upgrade: tag the same flow with the new mercuryd" mercuryd tag --pid "$1" --fd "$2" --offset 0 --len 1000000000000 --level 0
	p1=$(band0_packets)
	sleep 2
	p2=$(band0_packets)
	check "upgrade: the tagged flow is classified again (band 0: $p1 -> $p2 packets)" test "$p2" -gt "$p1"
	ip netns exec peer socat -u TCP-LISTEN:7000,fork,reuseaddr OPEN:/dev/null &
	sink=$!
	listening 7000
	out=$(/usr/local/bin/tag_tensor 10.9.0.2 7000 4 2000000 2>&1)
	check "upgrade: a libmercury client tags through the new service (layer 1 in band 0)" sh -c "echo '$out' | grep -q 'layer 1: .*band0=[0-9]\{7\}'"
	journal=$(journalctl -u mercuryd --no-pager -o cat --since "$since" 2>&1)
	check "upgrade: journalctl -u mercuryd since the upgrade: the new service attached va" grep -q "attached va: htb" <<<"$journal"
	say "journal since the upgrade: $(tr '\n' ';' <<<"$journal" | cut -c1-900)"
	kill "$flow" "$sink" 2>/dev/null
	wait "$flow" 2>/dev/null
	check "upgrade: dpkg --purge python3-mercury libmercury-dev mercury" dpkg --purge python3-mercury libmercury-dev mercury
	purged "upgraded, purged"
	say "the upgrade part took $((SECONDS - t_upgrade)) s in the guest"
elif [ -f "$U/skip" ]; then
	say "skip: the upgrade ($(cat "$U/skip"))"
else
	say "FAIL: no package to upgrade from (systemd-e2e.sh builds one from an older commit)"
	fails=$((fails + 1))
fi
echo "E2E-DONE $fails" >&3
systemctl poweroff --no-block
