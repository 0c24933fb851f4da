#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The tag fast path as an operator and a framework meet it: `mercuryd fastpath attach` to a
# cgroup; a libmercury client in that cgroup tags through it (no TAG frame reaches the
# service) and its bytes land in the policy's bands; a client outside falls back to the
# service with the same result; status shows the program and the published jobs; iteration
# 1's tags take the current iteration's bands once iteration 0 ends; detaching the last
# interface removes the program from the cgroup.
. "$(dirname "$0")/lib.sh"

tmp=$(mktemp -d)
cg_mount=$(cgroup2_mount)
[ -n "$cg_mount" ] || { echo "SKIP: no cgroup v2 hierarchy mounted"; exit 77; }
cg=$cg_mount/${PFX}fp
cleanup_cgroup() {
	cleanup
	# The drivers are gone (cleanup killed them by PID): the cgroup is empty.
	[ -d "$cg" ] && rmdir "$cg" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup_cgroup EXIT
sock=$tmp/mercuryd.sock
export MERCURY_SOCKET=$sock PYTHONPATH=$ROOT/python MERCURY_LIB=$ROOT/build/libmercury.so
driver_pid() { # the python process of the driver started last
	echo "${PIDS[-1]}"
}

need_python
setup_pair || { fail "namespace setup"; finish; }
check "attach" mercuryd_s attach va --qdisc htb --rate 1gbit --bands 8
mkdir "$cg" || { fail "mkdir $cg"; finish; }
check "fastpath attach --cgroup $cg" mercuryd_s fastpath attach --cgroup "$cg"
check "attaching again to the same cgroup is a no-op" mercuryd_s fastpath attach --cgroup "$cg"
out=$(mercuryd_s fastpath attach --cgroup "$cg_mount" 2>&1)
rc=$?
check "attaching to another cgroup is refused (rc $rc)" test "$rc" -eq 1
check "... naming the first ($out)" grep -qF "$cg" <<<"$out"
start_sink 7000
check "service is up" start_serve "$sock" "$tmp/serve.log"

# A: moved into the cgroup before it opens sockets (a socket belongs to its creator's cgroup).
start_driver A 5
check "client A declared its job ($reply)" test "$reply" = "ok ready"
a_pid=$(driver_pid)
echo "$a_pid" >"$cg/cgroup.procs"
# B: stays outside.
start_driver B 6
check "client B declared its job ($reply)" test "$reply" = "ok ready"

ask A "begin 0"
ask B "begin 0"
tag_lands A "A (fast path)" 1 0 0
ask A fast
check "A tagged through the fast path ($reply)" test "$reply" = "ok 1"
tag_lands B "B (service)" 1 0 0
ask B fast
check "B fell back to the service ($reply)" test "$reply" = "ok 0"
tag_lands A "A, layer 6 of 6" 6 0 5
tag_lands A "A, iteration 1 ahead" 1 1 6

json=$(mercuryd_s -j status)
check "status lists A's sockets, tagged by its pid through the fast path ($(echo "$json" | jq -c '[.tagged_sockets, .tagged_sockets_via]'))" \
	test "$(echo "$json" | jq --argjson p "$a_pid" '[.tagged[] | select(.fastpath_pid == $p)] | length')" -ge 1
check "status shows the fast path on $cg" \
	test "$(echo "$json" | jq -r '.fastpath.cgroup')" = "$cg"
check "status shows both jobs" test "$(echo "$json" | jq '.jobs | length')" -eq 2
check "status shows A's open iteration" \
	test "$(echo "$json" | jq '[.jobs[] | select(.job == 5)][0].oldest_open_iteration')" -eq 0

# The job's published state moves on: iteration 1 becomes the current one (the kernel test
# test_fastpath shows bytes already queued moving up at that moment).
ask A "end 0"
check "A ends iteration 0 ($reply)" test "$reply" = ok
tag_lands A "A, iteration 1 now current" 1 1 0
ask A counts
check "A's 4 tags all took the fast path, none the service ($reply)" test "$reply" = "ok 4 0"
ask B counts
check "B's tag took the service ($reply)" test "$reply" = "ok 0 1"

check "detach the last interface" mercuryd_s detach va
check "the fast path left the cgroup" \
	sh -c "[ -z \"\$(bpftool -j cgroup show '$cg' | jq '.[]' 2>/dev/null)\" ]"
check "no fast path pins left" test ! -e "$PIN_ROOT/fastpath_link"
check "no serve errors" sh -c "! grep -q 'cannot publish' '$tmp/serve.log'"
finish
