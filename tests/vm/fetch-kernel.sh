#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Fetches Debian 12's linux-image-6.1.0-*-amd64 (newest available, or MERCURY_VM_KERNEL=6.1.0-N-amd64)
# into a cache outside the repo, without installing it on the host, and extracts the uncompressed
# vmlinux from vmlinuz so QEMU can boot it via PVH (~3.5 s instead of ~9 s under TCG).
# Prints the kernel's cache directory (holding vmlinux, vmlinuz, lib/modules/<ver>/) on stdout.
# Idempotent: a complete cache entry is reused without touching apt.
set -euo pipefail

cache=${MERCURY_VM_CACHE:-/var/cache/mercury-vm}
log() { printf 'fetch-kernel: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

newest_available() {
	apt-cache search --names-only '^linux-image-6\.1\.0-[0-9]+-amd64$' 2>/dev/null |
		awk '{print $1}' | sed 's/^linux-image-//' | sort -V | tail -n1
}

newest_cached() {
	local d
	for d in "$cache"/6.1.0-*-amd64; do
		[ ! -f "$d/.complete" ] || basename "$d"
	done | sort -V | tail -n1
}

# Finds the xz stream inside a bzImage and decompresses it to an ELF vmlinux.
extract_vmlinux() { # vmlinuz, output
	local off
	off=$(LC_ALL=C grep -obUaP '\xfd7zXZ\x00' "$1" | head -n1 | cut -d: -f1) ||
		die "no xz stream in $1: is this kernel compressed with something other than xz?"
	[ -n "$off" ] || die "no xz stream in $1"
	# The stream is followed by trailing bzImage data, which xz reports as garbage: ignore that.
	tail -c +"$((off + 1))" "$1" | xz -dc --single-stream >"$2.tmp" 2>/dev/null || true
	[ "$(head -c4 "$2.tmp" | od -An -tx1 | tr -d ' ')" = 7f454c46 ] ||
		die "decompressed stream of $1 is not an ELF vmlinux"
	mv "$2.tmp" "$2"
}

want=${MERCURY_VM_KERNEL:-}
if [ -z "$want" ]; then
	want=$(newest_available)
	if [ -z "$want" ]; then
		cached=$(newest_cached)
		if [ -n "$cached" ]; then
			want=$cached
		else
			log "no linux-image-6.1.0-*-amd64 in the apt lists: running apt-get update"
			apt-get update -qq >&2 || die "apt-get update failed: check the Debian mirror"
			want=$(newest_available)
		fi
	fi
fi
[ -n "$want" ] || die "no linux-image-6.1.0-*-amd64 package found: is bookworm in sources.list?"

dir=$cache/$want
if [ -f "$dir/.complete" ]; then
	echo "$dir"
	exit 0
fi

log "downloading linux-image-$want into $dir (extract only, not installed)"
mkdir -p "$dir"
tmp=$(mktemp -d "$cache/.dl.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
if ! (cd "$tmp" && apt-get download -q "linux-image-$want" >&2); then
	cached=$(newest_cached)
	[ -n "$cached" ] && [ -z "${MERCURY_VM_KERNEL:-}" ] || {
		rmdir "$dir" 2>/dev/null
		die "apt-get download linux-image-$want failed: try apt-get update, or set MERCURY_VM_KERNEL"
	}
	log "download failed: using the cached $cached instead"
	rmdir "$dir" 2>/dev/null
	echo "$cache/$cached"
	exit 0
fi
deb=$(ls "$tmp"/linux-image-"$want"_*.deb)
rm -rf "$dir/root"
dpkg-deb -x "$deb" "$dir/root"
ver=$(ls "$dir/root/lib/modules")
cp "$dir/root/boot/vmlinuz-$ver" "$dir/vmlinuz"
extract_vmlinux "$dir/vmlinuz" "$dir/vmlinux"
mkdir -p "$dir/lib/modules"
rm -rf "${dir:?}/lib/modules/$ver"
mv "$dir/root/lib/modules/$ver" "$dir/lib/modules/$ver"
cp "$dir/root/boot/config-$ver" "$dir/config" 2>/dev/null || true
rm -rf "$dir/root"
echo "$ver" >"$dir/version"
touch "$dir/.complete"
log "cached $ver: $(du -sh "$dir" | cut -f1)"
echo "$dir"
