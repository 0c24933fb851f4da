#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Regenerate vmlinux/<arch>/vmlinux.h from the running kernel's BTF.
# The header is committed so builds do not depend on the build host's kernel (CO-RE relocates).
set -euo pipefail
arch=${1:-$(uname -m)}
case "$arch" in
x86_64 | x86) dir=x86 ;;
aarch64 | arm64) dir=arm64 ;;
*) echo "gen-vmlinux: unsupported arch '$arch'" >&2; exit 1 ;;
esac
btf=${BTF:-/sys/kernel/btf/vmlinux}
[ -r "$btf" ] || { echo "gen-vmlinux: $btf not readable: kernel built without CONFIG_DEBUG_INFO_BTF?" >&2; exit 1; }
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$root/vmlinux/$dir"
bpftool btf dump file "$btf" format c >"$root/vmlinux/$dir/vmlinux.h.tmp"
mv "$root/vmlinux/$dir/vmlinux.h.tmp" "$root/vmlinux/$dir/vmlinux.h"
echo "wrote vmlinux/$dir/vmlinux.h from $btf ($(uname -r))"
