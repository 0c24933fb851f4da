#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# No function of more than 100 lines outside tests and generated code (function_length.py);
# then shown to fail on a file with a function of 101 lines.
set -uo pipefail
root=${MERCURY_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
check="$root/tests/system/function_length.py"
fail=0
/usr/bin/python3 "$check" 100 "$root" || fail=1

tmp=$(mktemp -d "${TMPDIR:-/tmp}/function_length.$$.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/src"
{
	printf 'static int long_one(int a,\n\t\t    int b)\n{\n'
	for i in $(seq 96); do printf '\ta += b;\n'; done
	printf '\treturn a;\n}\n'
} >"$tmp/src/long.c"
out=$(/usr/bin/python3 "$check" 100 "$tmp")
if [ $? -ne 1 ] || ! grep -q 'src/long.c:1: long_one is 101 lines' <<<"$out"; then
	echo "FAIL: the check missed a function of 101 lines:"
	echo "$out"
	fail=1
else
	echo "ok: the check fails on a function of 101 lines"
fi
exit $fail
