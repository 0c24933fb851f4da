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
# The killed daemon's socket file goes too, so that start_serve's wait for the file waits
# for the next daemon's (calls made before it listens fail at once and go untagged).
kill_serve() {
	kill -9 "$SERVE_PID"
	wait "$SERVE_PID" 2>/dev/null
	rm -f "$sock"
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

# A daemon that stays away: the data path does not wait for it, the error names it; the
# client finds the next daemon by itself within its 100 ms retry interval.
start_driver C 7
ask C connect
kill_serve
t0=$(date +%s%N)
ask C "tagnext 1 0"
ms=$((($(date +%s%N) - t0) / 1000000))
check "with no daemon the tag fails in ${ms} ms (no wait for the 3 s reconnect timeout)" test "$ms" -lt 1000
check "... with an error naming mercuryd ($reply)" sh -c "echo '$reply' | grep -q mercuryd"
check "a third serve is up" start_serve "$sock" "$tmp/serve3.log"
t0=$(date +%s%N)
for _ in $(seq 1 100); do
	ask C "begin 0"
	[ "$reply" = ok ] && break
	sleep 0.01
done
ms=$((($(date +%s%N) - t0) / 1000000))
check "C's calls succeed again ${ms} ms after the socket is back ($reply)" \
	sh -c "[ '$reply' = ok ] && [ $ms -lt 1000 ]"
tag_lands C "C after the daemon came back" 2 0 1
for c in A B C; do ask $c quit; done
check "detach" mercuryd_s detach va
finish
