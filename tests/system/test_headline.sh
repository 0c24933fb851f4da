#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# One source for the headline figures: every line of README.md, BENCHMARKS.md and
# cluster/RESULTS.md that carries <!-- h:ID --> reads the value results/headline.json gives ID
# (TBD entries, measurements still pending, skipped), and every file an entry names quotes it.
# And every repository path README.md and docs/*.md name exists (links and words such as
# daemon/tc/tc_tree.c). The checker (docs_check.py) is first shown to fail on a copy of the
# documents with a value changed, a marker of no entry, and a path that does not exist.
set -uo pipefail
root=${MERCURY_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
py=/usr/bin/python3
[ -x "$py" ] || py=$(command -v python3) || { echo "SKIP: no python3"; exit 77; }
chk=$root/tests/system/docs_check.py
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fails=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fails=$((fails + 1)); fi; }
run() { timeout 60 "$py" "$chk" "$@"; }

# The checker can fail: a scratch copy with one drifted value, one stale marker, one bad path.
mkdir -p "$dir/results" "$dir/docs" "$dir/cluster"
cp "$root/results/headline.json" "$dir/results/"
cp "$root/README.md" "$root/BENCHMARKS.md" "$dir/"
cp "$root/cluster/RESULTS.md" "$dir/cluster/"
run headline "$dir" >/dev/null
check "the checker passes on an unchanged copy" "[ $? -eq 0 ]"
id=$("$py" -c 'import json,sys; print(next(e["id"] for e in json.load(open(sys.argv[1]))["figures"] if e["value"] != "TBD" and "README.md" in e["quoted_in"]))' "$dir/results/headline.json")
"$py" - "$dir/results/headline.json" "$id" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
for e in d["figures"]:
    if e["id"] == sys.argv[2]:
        e["value"] = "987.654"
json.dump(d, open(sys.argv[1], "w"))
EOF
out=$(run headline "$dir")
check "a value changed in headline.json fails the check (h:$id)" "[ $? -eq 1 ] && grep -q 'README.md:.*h:$id should read 987.654' <<<\"\$out\""
cp "$root/results/headline.json" "$dir/results/"
echo '| stale | 1.00x <!-- h:no-such-figure --> |' >>"$dir/BENCHMARKS.md"
out=$(run headline "$dir")
check "a marker naming no entry fails the check" "[ $? -eq 1 ] && grep -q 'h:no-such-figure names no entry' <<<\"\$out\""
mkdir -p "$dir/daemon/tc" && : >"$dir/daemon/tc/tc_tree.c"
printf 'See `daemon/tc/tc_tree.c`, `daemon/tc_tree.c` and [x](docs/nowhere.md).\n' >"$dir/docs/bad.md"
git -C "$dir" init -q && git -C "$dir" add -A >/dev/null 2>&1
out=$(run paths "$dir" docs/bad.md)
check "a path that does not exist fails the path check (one that does passes)" "[ $? -eq 1 ] && grep -q 'daemon/tc_tree.c: no such path' <<<\"\$out\" && grep -q 'link to docs/nowhere.md' <<<\"\$out\" && ! grep -q 'tc/tc_tree.c' <<<\"\$out\""

# The repository's own documents.
out=$(run headline "$root")
rc=$?
printf '%s\n' "$out" | sed 's/^/   | /'
check "README.md, BENCHMARKS.md and cluster/RESULTS.md quote results/headline.json's values" "[ $rc -eq 0 ]"
out=$(cd "$root" && run paths "$root" README.md docs/*.md)
rc=$?
printf '%s\n' "$out" | sed 's/^/   | /'
check "every repository path README.md and docs/*.md name exists" "[ $rc -eq 0 ]"

[ "$fails" -eq 0 ] && { echo "all checks passed"; exit 0; }
echo "$fails check(s) failed"
exit 1
