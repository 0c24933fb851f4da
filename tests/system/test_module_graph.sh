#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# No two files of daemon/, ps/ or common/ call each other, directly or around a circle: each
# layer (tc netlink context -> backends -> install; node primitives -> server, worker, drain
# -> node setup) only calls down. Read from the built objects' symbol tables.
# The same for the #include lines (no circle between modules; daemon/: cli > service > loader
# > tc, ps/: cli > ps, and include/, common/ below both: no include runs up), then the
# include check is shown to fail on a copy of the tree with one include turned upward and
# one circle added, in daemon/ and in ps/ (two roles including each other's header).
set -uo pipefail
root=${MERCURY_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
build=${MERCURY_BUILD:-$root/build}
[ -d "$build/daemon/tc" ] && [ -d "$build/ps" ] || { echo "SKIP: objects not built (make)"; exit 77; }
command -v nm >/dev/null || { echo "SKIP: no nm"; exit 77; }
graph="$root/tests/system/module_graph.py"
fail=0
/usr/bin/python3 "$graph" "$build" daemon/cli daemon/tc daemon/loader daemon/service ps common || fail=1
/usr/bin/python3 "$graph" --includes "$root" || fail=1

tmp=$(mktemp -d "${TMPDIR:-/tmp}/module_graph.$$.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
for d in include common daemon ps; do cp -r "$root/$d" "$tmp/"; done
# An include from tc/ (lowest) up to cli/, and a circle: band_plan.h <-> qdisc.h.
echo '#include "cli/cli.h"' >>"$tmp/daemon/tc/qdisc_ctx.c"
echo '#include "qdisc.h"' >>"$tmp/daemon/tc/band_plan.h"
echo '#include "band_plan.h"' >>"$tmp/daemon/tc/qdisc.h"
# ps/: the server role reaching the worker's and back, and the node's core up to the command.
echo '#include "worker.h"' >>"$tmp/ps/server.c"
echo '#include "server.h"' >>"$tmp/ps/worker.c"
echo '#include "cli/json_out.h"' >>"$tmp/ps/core.c"
out=$(/usr/bin/python3 "$graph" --includes "$tmp")
if [ $? -ne 1 ] || ! grep -q 'upward include: daemon/tc/qdisc_ctx.c includes daemon/cli/cli.h' <<<"$out" ||
	! grep -q 'cycle: .*daemon/tc/band_plan <-> .*daemon/tc/qdisc' <<<"$out" ||
	! grep -q 'upward include: ps/core.c includes ps/cli/json_out.h' <<<"$out" ||
	! grep -q 'cycle: .*ps/server <-> .*ps/worker' <<<"$out"; then
	echo "FAIL: the include check missed an upward include or a circle:"
	echo "$out"
	fail=1
else
	echo "ok: the include check fails on an upward include and on a circle (daemon/, ps/)"
fi
exit $fail
