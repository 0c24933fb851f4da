#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Mercury's container image (packaging/container/build-image.sh: Debian packages only) under
# podman, as the DaemonSet runs it: the node's network namespace (here one this test made,
# standing for host networking), the host's bpffs and cgroup mounted, only the capabilities
# packaging/k8s/mercuryd-daemonset.yaml grants. The container attaches the interface its
# config names, a flow tagged level 0 lands in band 0, and `podman stop` detaches: the root
# qdisc is the default again and no pin is left. Skips (77) without podman, runc or
# mmdebstrap. Env: MERCURY_IMAGE (use this image instead of building one, ~1 min).
. "$(dirname "$0")/lib.sh"
for t in podman mmdebstrap; do command -v "$t" >/dev/null || { echo "SKIP: $t missing (scripts/deps.sh)"; exit 77; }; done
[ -x /usr/sbin/runc ] || { echo "SKIP: runc missing (crun refuses this machine's cgroup layout)"; exit 77; }
# Inside make test-fresh's bare root (a chroot) podman has no system of its own to run in.
[ "${MERCURY_IN_CHROOT:-0}" = 1 ] && { echo "SKIP: inside a chroot: podman needs the machine's own root"; exit 77; }
ctr=${PFX}c
image=${MERCURY_IMAGE:-}
built=
tmp=$(mktemp -d)
# Capabilities and seccomp as in the DaemonSet (see its comments for why each): podman's
# default seccomp profile (containers-common of Debian 12) allows bpf(2) only with
# CAP_SYS_ADMIN, which Mercury does not need otherwise.
CAPS=CAP_BPF,CAP_NET_ADMIN,CAP_PERFMON,CAP_CHOWN
podman_run() { podman --runtime /usr/sbin/runc "$@"; }
container_cleanup() {
	podman_run rm -f -t 5 "$ctr" >/dev/null 2>&1
	[ -n "$built" ] && podman rmi -f "$built" >/dev/null 2>&1
	kill "${flow:-}" 2>/dev/null
	rm -rf "$tmp"
	cleanup
}
trap container_cleanup EXIT INT TERM

if [ -z "$image" ]; then
	image=$("$ROOT/packaging/container/build-image.sh" "localhost/mercury-test:$PFX" 2>"$tmp/build.log")
	rc=$?
	[ "$rc" -eq 77 ] && { echo "SKIP: $(tail -1 "$tmp/build.log")"; exit 77; }
	[ "$rc" -eq 0 ] || { tail -20 "$tmp/build.log"; fail "image build"; finish; }
	built=$image
fi
echo "image $image"
setup_pair || { fail "namespace setup"; finish; }
echo "va --qdisc htb --rate ${RATE_MBIT}mbit --bands 4" >"$tmp/interfaces"
before=$(in_s tc -j qdisc show dev va root | jq -c '[.[] | .kind]')

podman_run run -d --name "$ctr" --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 \
	--read-only --network ns:/var/run/netns/"$NS_S" --cap-drop=all --cap-add="$CAPS" --security-opt seccomp=unconfined \
	-v /sys/fs/bpf:/sys/fs/bpf -v /sys/fs/cgroup:/sys/fs/cgroup:ro \
	-v "$tmp/interfaces:/etc/mercury/interfaces:ro" -e MERCURY_PIN_ROOT="$PIN_ROOT" \
	"$image" >/dev/null || { fail "podman run"; finish; }
for _ in $(seq 1 100); do
	[ "$(mercuryd_s -j status va 2>/dev/null | jq -r '.interfaces[0].health // empty')" = ok ] && break
	sleep 0.1
done
check "the container attached va (health ok)" test "$(mercuryd_s -j status va | jq -r '.interfaces[0].health')" = ok
check "... with htb, 4 bands" test "$(in_s tc -j qdisc show dev va root | jq -r '.[0].kind')" = htb
# serve starts after the attach (and the fast path): give its first line up to 10 s
serving() { podman --runtime /usr/sbin/runc logs "$ctr" 2>&1 | grep -q 'serving events'; }
for _ in $(seq 1 100); do serving && break; sleep 0.1; done
check "the container is running, serving" serving

# A flow an admin tags level 0 (host mercuryd, the same pins): its packets land in band 0.
in_r iperf3 -s -D -1 -p 5301 >/dev/null 2>&1
sleep 0.3
in_s iperf3 -c 10.77.0.2 -p 5301 -t 8 -b 20M >/dev/null 2>&1 &
flow=$!
owner=
for _ in $(seq 1 100); do
	owner=$(in_s ss -Htnp state established '( dport = :5301 )' |
		sed -n 's/.*pid=\([0-9]*\),fd=\([0-9]*\).*/\1 \2/p' | sort -k2,2n | awk 'END { if (NR >= 2) print }')
	[ -n "$owner" ] && break
	sleep 0.1
done
set -- $owner
check "tag the flow's data socket level 0 (pid ${1:-?} fd ${2:-?})" \
	mercuryd_s tag --pid "${1:-0}" --fd "${2:-0}" --offset 0 --len 1000000000000 --level 0
band0() { mercuryd_s -j status va | jq '.interfaces[0].per_band[0].bytes // 0'; }
p1=$(band0)
sleep 2
p2=$(band0)
# 2 s of a 20 Mbit/s flow: about 5 MB
check "the tagged flow lands in band 0 ($p1 -> $p2 bytes)" test "$p2" -gt "$((p1 + 2000000))"
wait "$flow" 2>/dev/null
flow=

check "podman stop (SIGTERM)" sh -c "podman --runtime /usr/sbin/runc stop -t 20 $ctr >/dev/null"
check "stopped cleanly (exit 0)" test "$(podman_run inspect -f '{{.State.ExitCode}}' "$ctr")" = 0
check "va's root qdisc is what it was ($before)" test "$(in_s tc -j qdisc show dev va root | jq -c '[.[] | .kind]')" = "$before"
check "no filter left on va" test -z "$(in_s tc filter show dev va egress 2>/dev/null)"
check "no pin left ($PIN_ROOT)" test ! -e "$PIN_ROOT"
podman_run logs "$ctr" 2>&1 | tail -5 | sed 's/^/  container: /'
finish
