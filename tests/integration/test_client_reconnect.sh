#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Clients survive a daemon restart: kill -9 of `mercuryd serve` while clients are in the
# middle of iterations, then a new serve; each client's next call succeeds, its job and open
# iterations are back (its tags land in the bands the policy gives them), and a client whose
# daemon stays away gets a clear error within its reconnect timeout.
. "$(dirname "$0")/lib.sh"

tmp=$(mktemp -d)
trap 'cleanup; rm -rf "$tmp"' EXIT
sock=$tmp/mercuryd.sock
export MERCURY_SOCKET=$sock PYTHONPATH=$ROOT/python MERCURY_LIB=$ROOT/build/libmercury.so
kill_serve() {
	kill -9 "$SERVE_PID"
	wait "$SERVE_PID" 2>/dev/null
}

need_python
setup_pair || { fail "namespace setup"; finish; }
check "attach" mercuryd_s attach va --qdisc htb --rate 1gbit
start_sink 7000
check "service is up" start_serve "$sock" "$tmp/serve1.log"
for c in A:5 B:6; do
	start_driver "${c%:*}" "${c#*:}"
	check "client ${c%:*} declared its job ($reply)" test "$reply" = "ok ready"
done
# A runs ahead: iteration 0 and 1 open; B is at iteration 10.
ask A "begin 0"
ask A "begin 1"
ask B "begin 10"
tag_lands A "A before the kill" 2 0 1
tag_lands A "A before the kill, iteration ahead" 1 1 6
tag_lands B "B before the kill" 1 10 0

kill_serve
check "serve is gone" sh -c "! kill -0 $SERVE_PID 2>/dev/null"
check "a new serve is up" start_serve "$sock" "$tmp/serve2.log"
# The new daemon learns A's job and that iteration 0 is still open from A itself.
tag_lands A "A after the restart, iteration ahead" 1 1 6
tag_lands A "A after the restart" 3 0 2
tag_lands B "B after the restart" 3 10 2
ask A "end 0"
check "A ends iteration 0 on the new daemon ($reply)" test "$reply" = ok
tag_lands A "A after ending iteration 0: iteration 1 is current" 1 1 0
check "the new daemon saw each client's job again" test "$(grep -c 'rejected' "$tmp/serve2.log")" -eq 0

# A daemon that stays away: a bounded wait, then an error naming it; later calls recover.
start_driver C 7 MERCURY_RECONNECT_MS=300
ask C connect
kill_serve
t0=$(date +%s%N)
ask C "tagnext 1 0"
ms=$((($(date +%s%N) - t0) / 1000000))
check "with no daemon the call fails in ${ms} ms (timeout 300 ms)" test "$ms" -lt 3000
check "... with an error naming mercuryd ($reply)" sh -c "echo '$reply' | grep -q mercuryd"
check "a third serve is up" start_serve "$sock" "$tmp/serve3.log"
ask C "begin 0"
check "C's next call succeeds ($reply)" test "$reply" = ok
tag_lands C "C after the daemon came back" 2 0 1
for c in A B C; do ask $c quit; done
check "detach" mercuryd_s detach va
finish
