#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Guest smoke tests for the 6.1 kernel matrix: guest-smoke.sh <case> [backend]
# Cases: modules, qdisc, mqprio-steer, bpf-clsact <obj>, veth-iperf3, mercuryd-attach.
# Exit 0 pass, 1 fail, 77 skip. Each case builds a veth pair with 4 TX/RX queues between two
# namespaces of its own (prefix vm<pid>-) and a trap removes them.
set -uo pipefail
IP=/usr/sbin/ip TC=/usr/sbin/tc
build=${MERCURY_BUILD:-/mercury/build}
mercuryd=${MERCURYD:-$build/mercuryd}
case_name=${1:?usage: guest-smoke.sh <case> [backend]}
arg=${2:-}
pfx=vm$$
nsa=$pfx-a nsb=$pfx-b deva=$pfx-va devb=$pfx-vb
server_pid=

fail() { echo "FAIL: $*"; exit 1; }
skip() { echo "SKIP: $*"; exit 77; }
ina() { nsenter --net=/run/netns/$nsa "$@"; }
inb() { nsenter --net=/run/netns/$nsb "$@"; }

cleanup() {
	[ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null
	$IP netns del $nsa 2>/dev/null
	$IP netns del $nsb 2>/dev/null
	rm -f /tmp/tc.$$
}
trap cleanup EXIT

make_pair() { # veth with 4 queues each way, 10.77.0.1 (a) <-> 10.77.0.2 (b), no IPv6 chatter
	$IP netns add $nsa && $IP netns add $nsb || fail "ip netns add"
	$IP link add $deva numtxqueues 4 numrxqueues 4 netns $nsa type veth \
		peer name $devb numtxqueues 4 numrxqueues 4 netns $nsb || fail "veth with 4 queues"
	for ns in $nsa $nsb; do
		nsenter --net=/run/netns/$ns sysctl -qw net.ipv6.conf.all.disable_ipv6=1
		nsenter --net=/run/netns/$ns $IP link set lo up
	done
	ina $IP addr add 10.77.0.1/24 dev $deva && ina $IP link set $deva up || fail "set up $deva"
	inb $IP addr add 10.77.0.2/24 dev $devb && inb $IP link set $devb up || fail "set up $devb"
	ina ping -c 1 -W 5 10.77.0.2 >/dev/null || fail "no connectivity over the veth"
}

root_kind() { ina $TC -j qdisc show dev $deva | jq -r '.[] | select(.root == true) | .kind'; }
root_packets() { ina $TC -s -j qdisc show dev $deva | jq -r '.[] | select(.root == true) | .packets'; }

# Root qdisc for one backend, bands 0 (highest) .. 3; priority p -> band p (0..3), rest -> band 3.
add_backend() { # backend
	local map16="0 1 2 3 3 3 3 3 3 3 3 3 3 3 3 3"
	case $1 in
	mqprio) ina $TC qdisc add dev $deva root handle 1: mqprio num_tc 4 map $map16 \
		queues 1@0 1@1 1@2 1@3 hw 0 ;;
	prio) ina $TC qdisc add dev $deva root handle 1: prio bands 4 priomap $map16 ;;
	ets) ina $TC qdisc add dev $deva root handle 1: ets bands 4 strict 4 priomap $map16 ;;
	htb)
		ina $TC qdisc add dev $deva root handle 1: htb default 13 &&
			ina $TC class add dev $deva parent 1: classid 1:1 htb rate 1gbit ceil 1gbit &&
			for b in 0 1 2 3; do
				ina $TC class add dev $deva parent 1:1 classid 1:1$b htb rate 1mbit ceil 1gbit prio $b || return 1
			done
		;;
	tbf) ina $TC qdisc add dev $deva root handle 1: tbf rate 1gbit burst 64k latency 50ms &&
		ina $TC qdisc add dev $deva parent 1:1 handle 10: pfifo_fast ;;
	*) echo "unknown backend $1"; return 1 ;;
	esac
}

case_modules() {
	local m missing=
	for m in veth sch_ingress cls_bpf sch_mqprio sch_prio sch_ets sch_htb sch_tbf; do
		[ -d /sys/module/$m ] || missing="$missing $m"
	done
	[ -z "${MERCURY_VM_FAILED_MODULES// /}" ] || echo "insmod failed for:$MERCURY_VM_FAILED_MODULES"
	[ -z "$missing" ] || fail "modules not loaded:$missing"
	[ ! -e /sys/kernel/btf/vmlinux ] && fail "no BTF at /sys/kernel/btf/vmlinux"
	echo "loaded: $(cut -d' ' -f1 /proc/modules | sort | tr '\n' ' ')"
}

case_qdisc() { # backend
	make_pair
	add_backend "$1" || fail "tc qdisc add for $1"
	[ "$(root_kind)" = "$1" ] || fail "root qdisc is '$(root_kind)', wanted $1"
	ina ping -c 5 -i 0.2 -W 5 10.77.0.2 >/dev/null || fail "no traffic through $1"
	local n
	n=$(root_packets)
	[ "${n:-0}" -ge 5 ] || fail "root $1 counted ${n:-0} packets for 5 pings"
	ina $TC qdisc del dev $deva root || fail "tc qdisc del root $1"
	echo "$1 root qdisc: add, $n packets through it, delete"
}

queue_packets() { # tx queue index -> packets of mqprio's child qdisc on that queue
	ina $TC -s -j qdisc show dev $deva | jq -r --arg p "1:$(($1 + 1))" \
		'[.[] | select(.parent == $p) | .packets] | add // 0'
}

# mqprio hw 0: skb->priority (set here by act_skbedit at clsact egress, as the classifier does)
# picks the traffic class and so the TX queue; each queue's child qdisc counts its packets.
case_mqprio_steer() {
	make_pair
	add_backend mqprio || fail "mqprio hw 0 on a 4-queue veth"
	ina $TC qdisc add dev $deva clsact || fail "clsact"
	local p q before after
	for p in 3 0 2 1; do
		# matchall cannot be changed in place: delete and add
		ina $TC filter del dev $deva egress pref 1 2>/dev/null
		ina $TC filter add dev $deva egress pref 1 handle 1 matchall action skbedit priority $p ||
			fail "matchall skbedit priority $p"
		for q in 0 1 2 3; do before[$q]=$(queue_packets $q); done
		ina ping -c 4 -i 0.2 -W 5 10.77.0.2 >/dev/null || fail "ping with priority $p"
		for q in 0 1 2 3; do
			after=$(queue_packets $q)
			if [ $q = $p ]; then
				[ $((after - before[q])) -ge 4 ] || fail "priority $p: queue $q got $((after - before[q])) of 4"
			else
				[ $((after - before[q])) -eq 0 ] || fail "priority $p leaked $((after - before[q])) packets into queue $q"
			fi
		done
		echo "priority $p -> tc $p -> tx queue $p ok"
	done
}

case_bpf_clsact() { # object file name in build/
	local obj=$build/$1 sec
	[ -f "$obj" ] || skip "no $obj"
	make_pair
	[ -d /sys/fs/bpf ] && grep -q ' /sys/fs/bpf bpf ' /proc/mounts || fail "bpffs not mounted"
	ina $TC qdisc add dev $deva clsact || fail "clsact"
	local loaded=
	for sec in tc classifier tc/egress; do
		if ina $TC filter add dev $deva egress pref 1 handle 1 bpf da obj "$obj" sec $sec 2>/tmp/tc.$$; then
			loaded=$sec
			break
		fi
		# Only a missing section means "try the next name"; any other error (verifier) is the answer.
		grep -q "doesn't contain sec" /tmp/tc.$$ || break
	done
	if [ -z "$loaded" ]; then
		cat /tmp/tc.$$
		echo "verifier log (tail):"
		ina $TC filter add dev $deva egress pref 1 handle 1 bpf da obj "$obj" sec $sec verbose 2>&1 | tail -n 15
		fail "tc could not load $1 (sec $sec) on $(uname -r)"
	fi
	ina $TC -j filter show dev $deva egress | jq -e '.[] | select(.kind == "bpf") | .options.prog.jited' >/dev/null ||
		fail "no bpf filter shown at clsact egress"
	ina ping -c 3 -i 0.2 -W 5 10.77.0.2 >/dev/null || fail "traffic stopped with $1 attached"
	ina $TC filter del dev $deva egress pref 1 || fail "filter del"
	echo "$1 (sec $sec) attached at clsact egress, jited, traffic passes"
}

case_veth_iperf3() { # information for tests that need contention: TCP throughput over the veth
	make_pair
	inb iperf3 -s -1 -B 10.77.0.2 >/dev/null 2>&1 &
	server_pid=$!
	local bps
	for _ in $(seq 50); do inb ss -ltn | grep -q ':5201 ' && break; sleep 0.1; done
	bps=$(ina timeout 20 iperf3 -c 10.77.0.2 -t 3 -J | jq -r '.end.sum_received.bits_per_second // 0') ||
		fail "iperf3 client"
	wait "$server_pid"
	server_pid=
	echo "veth TCP throughput under TCG: $((${bps%.*} / 1000000)) Mbit/s"
	[ "${bps%.*}" -gt 1000000 ] || fail "iperf3 moved under 1 Mbit/s"
}

case_mercuryd_attach() { # backend: attach, check, detach, interface restored exactly
	[ -x "$mercuryd" ] || skip "no $mercuryd"
	"$mercuryd" --help 2>&1 | grep -q 'attach <iface>' || skip "mercuryd has no attach"
	make_pair
	local before after kind
	before=$(ina $TC -j qdisc show dev $deva | jq -S 'map(del(.handle))')
	local rate=()
	case $1 in htb | tbf) rate=(--rate 1gbit) ;; esac # they shape: mercuryd needs the bottleneck
	ina "$mercuryd" attach $deva --qdisc "$1" "${rate[@]}" || fail "mercuryd attach $deva --qdisc $1 ${rate[*]}"
	kind=$(root_kind)
	[ "$kind" = "$1" ] || fail "root is '$kind' after attach --qdisc $1"
	ina $TC -j filter show dev $deva egress | jq -e '.[] | select(.kind == "bpf")' >/dev/null ||
		fail "no bpf filter at clsact egress (6.1 has no TCX: clsact is the path)"
	ina ping -c 3 -i 0.2 -W 5 10.77.0.2 >/dev/null || fail "traffic stopped after attach"
	ina "$mercuryd" status $deva || fail "mercuryd status $deva"
	ina "$mercuryd" detach $deva || fail "mercuryd detach $deva"
	after=$(ina $TC -j qdisc show dev $deva | jq -S 'map(del(.handle))')
	[ "$before" = "$after" ] || fail "detach did not restore the qdiscs: before $before after $after"
	echo "attach --qdisc $1 (root $kind, clsact bpf) and detach restore the interface"
}

case $case_name in
modules) case_modules ;;
qdisc) case_qdisc "${arg:?backend}" ;;
mqprio-steer) case_mqprio_steer ;;
bpf-clsact) case_bpf_clsact "${arg:?object}" ;;
veth-iperf3) case_veth_iperf3 ;;
mercuryd-attach) case_mercuryd_attach "${arg:?backend}" ;;
*) echo "unknown case $case_name"; exit 2 ;;
esac
exit 0
