#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# A node's worker and its own server in one process exchange their data through memory
# (`--local-direct`, libmercury-ps's default): in every mode every pull still equals the
# local sum bitwise, and the sockets carry only the other node's share (each node writes
# well under the bytes it writes when its own share goes through loopback TCP).
# Loopback only (`mercury-ps local`, nodes as threads): ports from this run's PID.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
PS=${PS_BIN:-${MERCURY_BUILD:-$root/build}/mercury-ps}
[ -x "$PS" ] || { echo "SKIP: $PS not built"; exit 77; }
command -v jq >/dev/null || { echo "SKIP: needs jq"; exit 77; }
port=$((21000 + ($$ % 1500) * 4))
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fails=$((fails + 1)); fi; }

for m in fifo partition mercury; do
	for how in tcp direct; do
		flag=()
		[ "$how" = direct ] && flag=(--local-direct)
		port=$((port + 2))
		timeout 60 "$PS" local --profile "$root/models/tiny.prof" --mode "$m" --nodes 2 \
			--port "$port" --iters 2 --part 100000 --credit 400000 --chunk 10000 \
			--verify --timeout 20 "${flag[@]}" >"$tmp/$m.$how" 2>"$tmp/$m.$how.err"
		check "$m, own share through $how: both nodes finish, every pull is the exact sum" \
			"jq -es 'length == 2 and all(.[]; .ok and .mismatches == 0 and .pulls_checked > 0)' '$tmp/$m.$how' >/dev/null"
	done
	tcp=$(jq -s 'map(.bytes_sent) | add' "$tmp/$m.tcp")
	direct=$(jq -s 'map(.bytes_sent) | add' "$tmp/$m.direct")
	# tiny's two nodes hold about half of the model each: half of the bytes stay home
	check "$m: direct writes $direct bytes to sockets against $tcp over loopback TCP (< 65 %)" \
		"[ -n '$direct' ] && [ -n '$tcp' ] && [ \$(( $direct * 100 )) -lt \$(( $tcp * 65 )) ]"
done
[ $fails -eq 0 ] && { echo "all checks passed"; exit 0; }
echo "$fails check(s) failed"
exit 1
