#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# make bench: every benchmark, side by side in one run; figures go to stdout and to
# build/bench/results.md (BENCHMARKS.md quotes them with the command that made them).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/build/bench/results.md
mkdir -p "$(dirname "$out")"
{
	echo "# make bench, $(date -u +%Y-%m-%dT%H:%MZ), $(uname -r), $(nproc) CPUs"
	# Stand-alone benchmark binaries (tag_bench is driven by events.sh).
	for b in classifier_cost; do
		echo; echo "## $b"; echo '```'; "$root/build/bench/$b"; echo '```'
	done
	for s in "$root"/bench/*.sh; do
		[ "$(basename "$s")" = run.sh ] && continue
		echo; echo "## $(basename "$s" .sh)"; echo '```'; bash "$s"; echo '```'
	done
} 2>&1 | tee "$out"
