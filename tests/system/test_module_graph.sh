#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# No two files of daemon/, ps/ or common/ call each other, directly or around a circle: each
# layer (tc netlink context -> backends -> install; node primitives -> server, worker, drain
# -> node setup) only calls down. Read from the built objects' symbol tables.
set -uo pipefail
root=${MERCURY_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
build=${MERCURY_BUILD:-$root/build}
[ -d "$build/daemon/tc" ] && [ -d "$build/ps" ] || { echo "SKIP: objects not built (make)"; exit 77; }
command -v nm >/dev/null || { echo "SKIP: no nm"; exit 77; }
/usr/bin/python3 "$root/tests/system/module_graph.py" "$build" daemon/cli daemon/tc daemon/loader daemon/service ps common
