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

# The Debian packages hold the same tree, split three ways, and name their runtime libraries.
if command -v dpkg-deb >/dev/null; then
	debs=$(BUILD="$build" scripts/make-deb.sh 2>"$scratch/deb.err")
	deb=$(grep '/mercury_' <<<"$debs")
	dev=$(grep '/libmercury-dev_' <<<"$debs")
	py=$(grep '/python3-mercury_' <<<"$debs")
	check "make deb built three packages ($(echo $debs))${debs:+}" sh -c "[ -f '$deb' ] && [ -f '$dev' ] && [ -f '$py' ]" || cat "$scratch/deb.err"
	list() { dpkg-deb -c "$1" | awk '{print $6}' | sed 's#^\./#/#'; }
	list "$deb" >"$scratch/deb.list"
	list "$dev" >"$scratch/dev.list"
	list "$py" >"$scratch/py.list"
	has() { grep -qx -- "$2" "$scratch/$1.list"; }
	check "mercury: mercuryd, mercury-ps, the libraries, the unit, man pages, completions" sh -c "
		for f in /usr/sbin/mercuryd /usr/bin/mercury-ps /usr/lib/libmercury.so.1 /usr/lib/libmercury-ps.so.1 \
			/lib/systemd/system/mercuryd.service /usr/share/man/man8/mercuryd.8.gz /usr/share/man/man1/mercury-ps.1.gz \
			/usr/share/bash-completion/completions/mercuryd /usr/share/bash-completion/completions/mercury-ps \
			/etc/mercury/interfaces /usr/share/doc/mercury/copyright; do grep -qx -- \"\$f\" '$scratch/deb.list' || exit 1; done"
	check "mercury: no header, static library or Python module" sh -c "! grep -qE '^/usr/include|\\.a\$|python3' '$scratch/deb.list'"
	check "libmercury-dev: headers, static libraries, .so links, mercury.pc" sh -c "
		for f in /usr/include/mercury.h /usr/include/mercury_ps.h /usr/include/mercury_groups.h /usr/lib/libmercury.a \
			/usr/lib/libmercury-ps.a /usr/lib/libmercury.so /usr/lib/pkgconfig/mercury.pc /usr/share/doc/libmercury-dev/copyright; do
			grep -qx -- \"\$f\" '$scratch/dev.list' || exit 1; done"
	check "python3-mercury: mercury, mercury.ps, mercury.torch" sh -c "
		for f in /usr/lib/python3/dist-packages/mercury/__init__.py /usr/lib/python3/dist-packages/mercury/ps.py \
			/usr/lib/python3/dist-packages/mercury/torch.py; do grep -qx -- \"\$f\" '$scratch/py.list' || exit 1; done"
	nfiles=$(cat "$scratch/deb.list" "$scratch/dev.list" "$scratch/py.list" | grep -v '/$' | sort | uniq -d | wc -l)
	check "no file in two packages ($nfiles)" test "$nfiles" -eq 0
	check "mercury depends on libbpf and libnl ($(dpkg-deb -f "$deb" Depends))" sh -c "dpkg-deb -f '$deb' Depends | grep -q libbpf1 && dpkg-deb -f '$deb' Depends | grep -q libnl-route-3"
	check "the split packages replace the old single mercury" sh -c "dpkg-deb -f '$dev' Replaces | grep -q 'mercury (<< ' && dpkg-deb -f '$py' Breaks | grep -q 'mercury (<< '"
	check "libmercury-dev: no Breaks on the old mercury (its Depends orders the upgrade; Breaks made dpkg -i build/*.deb refuse it)" \
		sh -c "[ -z \"\$(dpkg-deb -f '$dev' Breaks)\" ] && dpkg-deb -f '$dev' Depends | grep -q 'mercury (= '"
	check "/etc/mercury/interfaces is a conffile, every line a comment" sh -c "
		dpkg-deb --ctrl-tarfile '$deb' | tar -xO ./conffiles | grep -qx /etc/mercury/interfaces &&
		! dpkg-deb --fsys-tarfile '$deb' | tar -xO ./etc/mercury/interfaces | grep -qv '^#'"
	for s in preinst postinst prerm postrm; do
		dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./$s >"$scratch/$s" 2>/dev/null
		check "maintainer script $s: sh -n" sh -n "$scratch/$s"
	done
	check "postinst creates group mercury, enables and starts the unit (deb-systemd-helper/-invoke)" sh -c "
		grep -q 'addgroup --system' '$scratch/postinst' && grep -q 'deb-systemd-helper enable' '$scratch/postinst' &&
		grep -q 'deb-systemd-invoke \"\$action\"' '$scratch/postinst'"
	check "prerm stops the unit and detaches every interface on removal" sh -c "
		grep -q 'deb-systemd-invoke stop' '$scratch/prerm' && grep -q 'mercuryd detach --all' '$scratch/prerm'"
	check "postrm purge forgets the unit and removes group mercury" sh -c "
		grep -q 'deb-systemd-helper purge' '$scratch/postrm' && grep -q 'delgroup --system' '$scratch/postrm'"
	check "preinst: a hand-written /etc/mercury/interfaces moved aside (no conffile prompt), put back by postinst; the old binary detaches on a layout change" sh -c "
		grep -q 'dpkg-bak' '$scratch/preinst' && grep -q 'dpkg-bak' '$scratch/postinst' && grep -q 'mercuryd detach' '$scratch/preinst'"
	if command -v lintian >/dev/null; then
		lintian --tag-display-limit 0 $debs >"$scratch/lintian" 2>&1
		tags=$(grep -E '^[EW]: ' "$scratch/lintian")
		check "lintian: no error or warning (overrides carry their reasons)${tags:+: $tags}" test -z "$tags"
	else
		echo "note: no lintian (scripts/deps.sh installs it): not checked"
	fi
fi

check "make uninstall" make -s uninstall DESTDIR="$dest" PREFIX=/usr BUILD="$build"
left=$(find "$dest" -type f -o -type l | wc -l)
check "uninstall removed every file ($left left)" test "$left" -eq 0
[ "$fails" -eq 0 ] && { echo "all checks passed"; exit 0; }
echo "$fails check(s) failed"
exit 1
