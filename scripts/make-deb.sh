#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# make deb: a Debian package of what `make install PREFIX=/usr` installs, built with
# dpkg-deb (no debhelper needed). Runtime dependencies: the packages holding the libraries
# the binaries link directly (readelf NEEDED, dpkg -S). Output: build/mercury_<v>_<arch>.deb
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$root/build}
version=$(sed -n 's/^#define MERCURY_VERSION "\(.*\)"/\1/p' "$root/common/version.h")
arch=$(dpkg --print-architecture)
stage=$build/deb/mercury
rm -rf "$stage"
# stdout carries only the package's path: the install's own chatter (make's "Entering
# directory" under a parent make) goes to stderr
make -s --no-print-directory -C "$root" install DESTDIR="$stage" PREFIX=/usr BUILD="$build" >&2
# Libraries the binaries name themselves (NEEDED, not what those pull in) -> their packages.
deps=$(for bin in "$stage/usr/sbin/mercuryd" "$stage/usr/bin/mercury-ps" "$stage/usr/lib/libmercury.so.1"; do
	readelf -d "$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'
done | sort -u | while read -r soname; do
	path=$(ldconfig -p | awk -v s="$soname" '$1 == s {print $NF; exit}')
	[ -n "$path" ] && { dpkg -S "$(readlink -f "$path")" 2>/dev/null || dpkg -S "$path" 2>/dev/null; }
done | cut -d: -f1 | sort -u | grep -v '^libc6$' | paste -sd, | sed 's/,/, /g')
install -D -m 0644 "$root/packaging/debian/copyright" "$stage/usr/share/doc/mercury/copyright"
mkdir -p "$stage/DEBIAN"
sed -e "s/@VERSION@/$version/" -e "s/@ARCH@/$arch/" -e "s/@DEPENDS@/libc6${deps:+, $deps}/" \
	"$root/packaging/debian/control.in" >"$stage/DEBIAN/control"
install -m 0755 "$root/packaging/debian/postinst" "$root/packaging/debian/postrm" "$stage/DEBIAN/"
out=$build/mercury_${version}_${arch}.deb
dpkg-deb --root-owner-group --build "$stage" "$out" >/dev/null
echo "$out"
