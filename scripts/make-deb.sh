#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# make deb: Debian packages of what `make install PREFIX=/usr` installs, built with dpkg-deb
# (no debhelper needed), split the Debian way:
#   mercury          mercuryd, its unit, mercury-ps, libmercury.so.1, libmercury-ps.so.1, man
#                    pages, completions, /etc/mercury/interfaces (a conffile)
#   libmercury-dev   headers, static libraries, the .so links, mercury.pc
#   python3-mercury  the Python binding (mercury, mercury.ps, mercury.torch)
# Runtime dependencies: the packages holding the libraries the binaries link directly
# (readelf NEEDED, dpkg -S). Binaries stripped, man pages and changelog compressed (-9n),
# md5sums and Installed-Size written; lintian overrides, each with its reason, in
# packaging/debian/*.lintian-overrides. Prints the three .deb paths, one a line.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$root/build}
pkgdir=$root/packaging/debian
version=$(sed -n 's/^#define MERCURY_VERSION "\(.*\)"/\1/p' "$root/common/version.h")
layout=$(sed -n 's/^#define MERCURY_LAYOUT_VERSION \([0-9]*\).*/\1/p' "$root/include/mercury_abi.h")
arch=$(dpkg --print-architecture)
[ -n "$version" ] && [ -n "$layout" ] || { echo "make-deb: no version or layout" >&2; exit 1; }
tree=$build/deb/tree
rm -rf "$build/deb"
# stdout carries only the packages' paths: the install's own chatter goes to stderr
make -s --no-print-directory -C "$root" install DESTDIR="$tree" PREFIX=/usr BUILD="$build" >&2
# Debian 12 keeps units in /lib/systemd/system (usrmerge moves them in a later release).
mkdir -p "$tree/lib/systemd"
mv "$tree/usr/lib/systemd/system" "$tree/lib/systemd/system"
rmdir "$tree/usr/lib/systemd"
install -D -m 0644 "$pkgdir/interfaces" "$tree/etc/mercury/interfaces"
strip --strip-unneeded --remove-section=.comment --remove-section=.note \
	"$tree/usr/sbin/mercuryd" "$tree/usr/bin/mercury-ps" \
	"$tree/usr/lib/libmercury.so.1" "$tree/usr/lib/libmercury-ps.so.1"
strip --strip-debug --remove-section=.comment "$tree/usr/lib/libmercury.a" "$tree/usr/lib/libmercury-ps.a"
chmod 0644 "$tree/usr/lib/libmercury.so.1" "$tree/usr/lib/libmercury-ps.so.1"
find "$tree/usr/share/man" -type f -exec gzip -9n {} +

# Which package each installed path goes to (the rest: mercury).
pkg_of() {
	case $1 in
	usr/include/* | usr/lib/*.a | usr/lib/libmercury.so | usr/lib/libmercury-ps.so | usr/lib/pkgconfig/*)
		echo libmercury-dev ;;
	usr/lib/python3/*) echo python3-mercury ;;
	*) echo mercury ;;
	esac
}
for p in mercury libmercury-dev python3-mercury; do mkdir -p "$build/deb/$p/DEBIAN"; done
(cd "$tree" && find . -mindepth 1 \( -type f -o -type l \) -printf '%P\n') | while read -r f; do
	p=$(pkg_of "$f")
	mkdir -p "$build/deb/$p/$(dirname "$f")"
	cp -a "$tree/$f" "$build/deb/$p/$f"
done

# Libraries the binaries name themselves (NEEDED, not what those pull in) -> their packages.
m=$build/deb/mercury
deps=$(for bin in "$m/usr/sbin/mercuryd" "$m/usr/bin/mercury-ps" "$m/usr/lib/libmercury.so.1" "$m/usr/lib/libmercury-ps.so.1"; do
	readelf -d "$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'
done | sort -u | grep -v '^libmercury' | while read -r soname; do
	path=$(ldconfig -p | awk -v s="$soname" '$1 == s {print $NF; exit}')
	[ -n "$path" ] && { dpkg -S "$(readlink -f "$path")" 2>/dev/null || dpkg -S "$path" 2>/dev/null; }
done | cut -d: -f1 | sort -u | grep -v '^libc6$' | paste -sd, | sed 's/,/, /g')
# The glibc version the binaries need at least, as dpkg-shlibdeps would say it.
glibc=$(dpkg-query -W -f='${Version}' libc6 | sed 's/-.*//')

for p in mercury libmercury-dev python3-mercury; do
	s=$build/deb/$p
	doc=$s/usr/share/doc/$p
	install -D -m 0644 "$pkgdir/copyright" "$doc/copyright"
	# a native package (no Debian revision): changelog.gz
	gzip -9nc "$pkgdir/changelog" >"$doc/changelog.gz"
	chmod 0644 "$doc/changelog.gz"
	install -D -m 0644 "$pkgdir/$p.lintian-overrides" "$s/usr/share/lintian/overrides/$p"
	size=$(du -sk --apparent-size "$s" --exclude=DEBIAN | cut -f1)
	sed -e "s/@VERSION@/$version/g" -e "s/@ARCH@/$arch/" -e "s/@SIZE@/$size/" \
		-e "s/@DEPENDS@/libc6 (>= $glibc)${deps:+, $deps}/" "$pkgdir/$p.control" >"$s/DEBIAN/control"
	(cd "$s" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | LC_ALL=C sort -z |
		xargs -0 -r md5sum >DEBIAN/md5sums)
	[ -s "$s/DEBIAN/md5sums" ] || rm -f "$s/DEBIAN/md5sums"
done
for script in preinst postinst prerm postrm; do
	sed "s/@LAYOUT@/$layout/" "$pkgdir/mercury.$script" >"$m/DEBIAN/$script"
	chmod 0755 "$m/DEBIAN/$script"
done
install -m 0644 "$pkgdir/mercury.triggers" "$m/DEBIAN/triggers"
install -m 0644 "$pkgdir/mercury.shlibs" "$m/DEBIAN/shlibs"
(cd "$m" && find etc -type f -printf '/%p\n') >"$m/DEBIAN/conffiles"

for p in mercury libmercury-dev python3-mercury; do
	a=$(sed -n 's/^Architecture: //p' "$build/deb/$p/DEBIAN/control")
	out=$build/${p}_${version}_${a}.deb
	dpkg-deb --root-owner-group -Zxz --build "$build/deb/$p" "$out" >/dev/null
	echo "$out"
done
