#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# A running `mercuryd serve` outlives detach and attach: every tag it acknowledges is in the
# pinned sock_tags map the classifier reads (status lists the socket; its bytes land in the
# tagged band). Found as: serve running; detach; attach; tag -> rc 0, map empty, default band.
. "$(dirname "$0")/lib.sh"

tmp=$(mktemp -d)
trap 'cleanup; rm -rf "$tmp"' EXIT
sock=$tmp/mercuryd.sock
export MERCURY_SOCKET=$sock PYTHONPATH=$ROOT/python MERCURY_LIB=$ROOT/build/libmercury.so

in_band() { echo "$reply" | grep -Eq "band$1=(10[0-9]{5}|[2-9][0-9]{6})"; } # >= 1 MB there
tag_checked() { # label layer: tag 1 MB at layer on a new socket; its bytes are in the band
	ask D connect
	ask D "tag $2 0"
	check "$1: tag acknowledged ($reply)" test "$reply" = ok
	ask D bands
	check "$1: the tagged bytes went to layer $2's band $(($2 - 1)) ($reply)" in_band $(($2 - 1))
}

need_python
setup_pair || { fail "namespace setup"; finish; }
check "attach" mercuryd_s attach va --qdisc htb --rate 1gbit
start_sink 7000
check "service is up" start_serve "$sock" "$tmp/serve.log"
start_driver D 5
check "client connected and declared its job ($reply)" test "$reply" = "ok ready"
ask D "begin 0"
tag_checked "before any detach" 1

# 1. detach + attach under a running serve.
check "detach" mercuryd_s detach va
check "attach again (new pins)" mercuryd_s attach va --qdisc htb --rate 1gbit
tag_checked "after detach + attach" 2

# 2. detach alone: the service pins its maps again; the next attach reads them.
check "detach" mercuryd_s detach va
ask D connect
ask D "tagnext 3 0"
check "a tag with nothing attached is acknowledged ($reply)" test "$reply" = ok
check "the service pinned its tag map again" test -e "$PIN_ROOT/sock_tags"
check "the service said so in its log" grep -q "pinned map .* there again" "$tmp/serve.log"
check "attach" mercuryd_s attach va --qdisc htb --rate 1gbit
ask D send
ask D bands
check "the tag made while detached classifies once attached: band 2 ($reply)" in_band 2
tag_checked "after detach, tag, attach" 4

# 3. A map of another layout pinned in its place: tags fail with a reason, then recover.
check "detach" mercuryd_s detach va
ask D connect
ask D "tagnext 1 0" # the service re-pins its maps
rm -f "$PIN_ROOT/sock_tags"
check "pin a foreign map as sock_tags" bpftool map create "$PIN_ROOT/sock_tags" type hash key 4 value 4 entries 1 name sock_tags
ask D "tagnext 1 0"
check "a tag into a map of another layout fails ($reply)" sh -c "echo '$reply' | grep -q 'pinned tag map'"
check "the service logged why" grep -q "another layout" "$tmp/serve.log"
rm -f "$PIN_ROOT/sock_tags"
ask D "tagnext 1 0"
check "with the foreign pin gone, tags work again ($reply)" test "$reply" = ok
check "attach" mercuryd_s attach va --qdisc htb --rate 1gbit
tag_checked "after the layout change" 5
check "the service kept serving" kill -0 "$SERVE_PID"
ask D quit
check "detach" mercuryd_s detach va
finish
