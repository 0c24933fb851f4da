#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# cluster/port_trace.sh end to end on a 2-node cluster (the tiny model, fifo and mercury):
# every switch port sampled beside each run, the report names each mode and each port with
# the bytes it carried, and nothing is left behind (namespaces, the sampler). Bad options are
# refused before anything is set up.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 77; }
[ -x /usr/bin/python3 ] || { echo "SKIP: needs /usr/bin/python3"; exit 77; }
[ -x "$root/build/mercury-ps" ] && [ -x "$root/build/mercuryd" ] || { echo "SKIP: build first"; exit 77; }
fails=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fails=$((fails + 1)); fi; }
pfx=mqpt$$
tmp=$(mktemp -d "${TMPDIR:-/tmp}/port_trace.$$.XXXXXX")
trap 'rm -rf "$tmp"; for n in $(ip netns list | awk "/^$pfx/ { print \$1 }"); do ip netns del "$n"; done' EXIT

for bad in "--modes nosuch" "--fabric mesh" "--interval 2" "--model nosuch"; do
	# shellcheck disable=SC2086
	said=$("$root/cluster/port_trace.sh" $bad 2>&1; echo "rc=$?")
	check "port_trace.sh $bad is refused (rc 2)" "[[ \$said == *'port-trace: '* && \$said == *rc=2 ]]"
done

CL_PFX=$pfx timeout 300 "$root/cluster/port_trace.sh" --model tiny --nodes 2 --fabric duplex \
	--iters 3 --modes "fifo mercury" --out "$tmp" >"$tmp/out" 2>&1
rc=$?
check "port_trace.sh ran (rc $rc)" "[ $rc -eq 0 ]" || tail -n 20 "$tmp/out"
rep=$(cat "$tmp/report.md" 2>/dev/null)
check "the report names both modes" "[[ \$rep == *'## fifo'* && \$rep == *'## mercury'* ]]"
samples=$(grep -vc '^#' "$tmp/mercury/ports.tsv" 2>/dev/null)
check "the sampler took samples beside the run (${samples:-none})" "[ '${samples:-0}' -ge 20 ]"
used=$(grep -E '^\| s[01] \| [0-9]+ \| [0-9]+ % ' "$tmp/report.md" | awk -F'|' '{ gsub(/[ %]/, "", $4); if ($4 + 0 > 0) n++ } END { print n + 0 }')
check "both node ports carried bytes in both modes (rows with use > 0: $used of 4)" "[ '$used' -eq 4 ]"
check "no namespace of the run is left" "! ip netns list | grep -q '^$pfx'"
[ "$fails" = 0 ] && echo "all checks passed" || { echo "$fails check(s) failed"; exit 1; }
