#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Licensing stays as LICENSE says: every C, header, shell and Python file we own names its
# licence (SPDX, first three lines); the eBPF programs and every header compiled into them are
# dual GPL-2.0-only OR BSD-2-Clause and declare a GPL-compatible licence string to the kernel;
# the licence texts LICENSE points to exist.
set -uo pipefail
root=${MERCURY_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$root" && git rev-parse --git-dir >/dev/null 2>&1 || { echo "SKIP: not a git checkout"; exit 77; }
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# Tracked and new (not ignored) files, so that a file is checked before its first commit.
files=$(git ls-files -co --exclude-standard | grep -v '^vmlinux/' | grep -E '\.(c|h|sh|py|bash)$')
n=0
for f in $files; do
	[ -f "$f" ] || continue
	n=$((n + 1))
	head -n 3 "$f" | grep -q 'SPDX-License-Identifier: ' || fail "$f names no licence (SPDX-License-Identifier)"
done
echo "ok: $n source files checked for an SPDX line"

# What the BPF objects compile in: the programs and the headers they include (vmlinux.h aside).
bpf_files=$(for p in bpf/*.bpf.c; do
	clang -MM -target bpf -D__TARGET_ARCH_x86 -Ivmlinux/x86 -Iinclude -Icommon -Ibpf "$p" 2>/dev/null
done | tr ' \\' '\n\n' | grep -E '\.(c|h)$' | grep -v vmlinux | sort -u)
[ -n "$bpf_files" ] || fail "clang -MM found no files compiled into the BPF programs"
for f in $bpf_files; do
	head -n 3 "$f" | grep -q 'SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause' ||
		fail "$f is compiled into a BPF program but is not GPL-2.0-only OR BSD-2-Clause"
done
echo "ok: $(echo "$bpf_files" | wc -w) files compiled into BPF programs checked for the dual licence"
for p in bpf/*.bpf.c; do
	grep -q 'SEC("license") = "Dual BSD/GPL"' "$p" || fail "$p does not declare \"Dual BSD/GPL\" to the kernel"
done
for t in LICENSE LICENSES/BSD-2-Clause.txt LICENSES/GPL-2.0-only.txt; do
	[ -s "$t" ] || fail "$t missing"
done
grep -q 'GNU GENERAL PUBLIC LICENSE' LICENSES/GPL-2.0-only.txt || fail "LICENSES/GPL-2.0-only.txt is not the GPL"
[ "$fails" -eq 0 ] && { echo "all checks passed"; exit 0; }
echo "$fails check(s) failed"
exit 1
