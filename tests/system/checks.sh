# SPDX-License-Identifier: BSD-2-Clause
# Shared by the system tests that check cluster/*.py on hand-made input: a scratch folder
# removed on exit, and `check DESCRIPTION CONDITION` (CONDITION is eval'd) with a verdict
# from checks_done. Source it.
set -uo pipefail
root=${MERCURY_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
command -v python3 >/dev/null || { echo "SKIP: no python3"; exit 77; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fails=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fails=$((fails + 1)); fi; }
checks_done() {
	[ "$fails" -eq 0 ] && { echo "all checks passed"; exit 0; }
	echo "$fails check(s) failed"
	exit 1
}
