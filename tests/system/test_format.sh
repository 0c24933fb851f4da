#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Every tracked C file is formatted with the repository's .clang-format (make format fixes it).
set -uo pipefail
root=${MERCURY_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
command -v clang-format >/dev/null || { echo "SKIP: no clang-format"; exit 77; }
cd "$root" && git rev-parse --git-dir >/dev/null 2>&1 || { echo "SKIP: not a git checkout"; exit 77; }
git ls-files '*.c' '*.h' | grep -v '^vmlinux/' | xargs clang-format --dry-run --Werror
