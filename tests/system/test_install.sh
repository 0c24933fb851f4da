#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# make install into a DESTDIR puts every piece where an operator looks for it, and make deb
# packages the same tree; a program
# builds against the installed pkg-config file and runs against the installed library; the
# completion completes; make uninstall removes every file again.
set -uo pipefail
root=${MERCURY_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
build=${MERCURY_BUILD:-$root/build}
command -v pkg-config >/dev/null || { echo "SKIP: pkg-config missing (make deps)"; exit 77; }
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
dest=$scratch/dest
fails=0
check() { # description, command...
	local what=$1
	shift
	if "$@"; then echo "ok: $what"; else echo "FAIL: $what"; fails=$((fails + 1)); fi
}
cd "$root" || exit 1

check "make install" make -s install DESTDIR="$dest" PREFIX=/usr BUILD="$build"
for f in usr/sbin/mercuryd usr/bin/mercury-ps usr/lib/libmercury.so.1 usr/lib/libmercury.so \
	usr/lib/libmercury.a usr/include/mercury.h usr/lib/pkgconfig/mercury.pc \
	usr/share/man/man8/mercuryd.8 usr/share/man/man1/mercury-ps.1 usr/lib/systemd/system/mercuryd.service \
	usr/share/bash-completion/completions/mercury-ps \
	usr/share/bash-completion/completions/mercuryd usr/lib/python3/dist-packages/mercury/__init__.py \
	usr/lib/python3/dist-packages/mercury/ps.py usr/lib/python3/dist-packages/mercury/torch.py \
	usr/lib/libmercury-ps.so.1 usr/lib/libmercury-ps.a usr/include/mercury_ps.h; do
	check "installed $f" test -e "$dest/$f"
done
check "the unit starts the installed binary" grep -q '^ExecStart=/usr/sbin/mercuryd serve' "$dest/usr/lib/systemd/system/mercuryd.service"
check "mercuryd runs and knows its version" sh -c "'$dest/usr/sbin/mercuryd' -V | grep -q 'mercuryd [0-9]'"

# Build the example the way a framework's build would: only pkg-config and the installed tree.
export PKG_CONFIG_PATH=$dest/usr/lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$dest
flags=$(pkg-config --cflags --libs mercury)
check "pkg-config knows mercury ($flags)" test -n "$flags"
check "pkg-config version is mercuryd's" test "$(pkg-config --modversion mercury)" = "$("$dest/usr/sbin/mercuryd" -V | awk '{print $2}')"
# shellcheck disable=SC2086
check "examples/tag_tensor.c builds against the installed header and library" \
	cc -std=c11 -Wall -Werror examples/tag_tensor.c $flags -o "$scratch/tag_tensor"
check "... linked to the installed libmercury.so.1" sh -c "LD_LIBRARY_PATH='$dest/usr/lib' ldd '$scratch/tag_tensor' | grep -q '$dest/usr/lib/libmercury.so.1'"
out=$(LD_LIBRARY_PATH=$dest/usr/lib MERCURY_SOCKET=$scratch/none.sock "$scratch/tag_tensor" 127.0.0.1 1 2>&1)
check "... and runs: a clear error with no daemon ($out)" sh -c "echo \"\$1\" | grep -q mercuryd" _ "$out"

# Completion: commands, attach's options, backends.
comp() { # words...: what the completion offers for the last one
	bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _mercuryd; echo "${COMPREPLY[*]}"' \
		_ "$dest/usr/share/bash-completion/completions/mercuryd" "$@"
}
check "completes commands (att -> attach)" test "$(comp mercuryd att)" = attach
check "completes attach's options (--q -> --qdisc)" test "$(comp mercuryd attach lo --q)" = --qdisc
check "completes backends (--qdisc h -> htb)" test "$(comp mercuryd attach lo --qdisc h)" = htb
check "completes interface names (l -> lo)" sh -c "echo ' $(comp mercuryd attach l) ' | grep -q ' lo '"
check "completes metrics options" test "$(comp mercuryd metrics --t)" = --textfile

# The Debian package holds the same tree and names its runtime libraries.
if command -v dpkg-deb >/dev/null; then
	deb=$(BUILD="$build" scripts/make-deb.sh 2>"$scratch/deb.err")
	check "make deb built a package (${deb:-$(cat "$scratch/deb.err")})" test -f "$deb"
	dpkg-deb -c "$deb" >"$scratch/deb.list" 2>&1
	check "... that installs mercuryd, libmercury and the unit" sh -c "grep -q './usr/sbin/mercuryd\$' '$scratch/deb.list' && grep -q './usr/lib/libmercury.so.1\$' '$scratch/deb.list' && grep -q 'mercuryd.service\$' '$scratch/deb.list'"
	check "... depends on libbpf and libnl ($(dpkg-deb -f "$deb" Depends))" sh -c "dpkg-deb -f '$deb' Depends | grep -q libbpf1 && dpkg-deb -f '$deb' Depends | grep -q libnl-route-3"
	dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./postinst >"$scratch/postinst" 2>&1
	check "... with its DEP-5 copyright file" sh -c "grep -q './usr/share/doc/mercury/copyright\$' '$scratch/deb.list'"
	check "... and creates group mercury" grep -q 'addgroup --system mercury' "$scratch/postinst"
fi

check "make uninstall" make -s uninstall DESTDIR="$dest" PREFIX=/usr BUILD="$build"
left=$(find "$dest" -type f -o -type l | wc -l)
check "uninstall removed every file ($left left)" test "$left" -eq 0
[ "$fails" -eq 0 ] && { echo "all checks passed"; exit 0; }
echo "$fails check(s) failed"
exit 1
