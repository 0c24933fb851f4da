#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Prints the README's two opening command lines (the first ```sh block), comments stripped,
# one per line: what a new user types. CI and `make test-fresh` run exactly these, so the
# README and what is tested cannot drift apart.
set -euo pipefail
readme=${1:-$(dirname "$0")/../README.md}
awk '/^```sh$/ && !done { inblock = 1; next }
     /^```$/ && inblock { exit }
     inblock { sub(/[ \t]*#.*$/, ""); if (length($0)) print }' "$readme"
