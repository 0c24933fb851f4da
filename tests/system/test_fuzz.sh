#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The event decoder under libFuzzer (ASan + UBSan): 1M executions without a crash.
set -uo pipefail
root=${MERCURY_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
command -v clang >/dev/null || { echo "SKIP: no clang"; exit 77; }
cd "$root" && make -s fuzz FUZZ_RUNS=${FUZZ_RUNS:-1000000} 2>&1 | grep -E "^Done|ERROR|SUMMARY|crash"
test "${PIPESTATUS[0]}" -eq 0
