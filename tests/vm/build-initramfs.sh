#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Builds the initramfs that tests Mercury inside Debian's 6.1 kernel under QEMU:
#   build-initramfs.sh <kernel-cache-dir> <output.cpio.gz>
# Contents: busybox-static (applets in /usr/lib/busybox, behind the full tools on PATH), the full
# tools the tests use (bash, iproute2, iperf3, jq, util-linux, coreutils, ...) with every shared
# library ldd names and the loader, the 6.1 modules the backends need (dependencies resolved from
# each module's .modinfo, loaded in dependency order by the guest init), and the project tree at
# /mercury (git-tracked sources plus build/ outputs). The staging tree lives in a temp dir.
# Env: MERCURY_ROOT, MERCURY_BUILD, MERCURY_VM_MODULES (extra module names),
#      MERCURY_VM_EXTRA_BINS (extra host binaries), MERCURY_VM_PYTHON=1 (add python3 + stdlib).
set -euo pipefail

kdir=${1:?usage: build-initramfs.sh <kernel-cache-dir> <output.cpio.gz>}
out=${2:?usage: build-initramfs.sh <kernel-cache-dir> <output.cpio.gz>}
here=$(cd "$(dirname "$0")" && pwd)
root=${MERCURY_ROOT:-$(cd "$here/../.." && pwd)}
build=${MERCURY_BUILD:-$root/build}
kver=$(cat "$kdir/version")
mods=$kdir/lib/modules/$kver
log() { printf 'build-initramfs: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

# Modules every backend and the clsact path need; extras via MERCURY_VM_MODULES.
# shellcheck disable=SC2206 # the extra lists are space-separated on purpose
modules=(veth bridge sch_ingress cls_bpf sch_mqprio sch_prio sch_ets sch_htb sch_tbf
	sch_fq sch_netem sch_multiq act_skbedit act_bpf cls_matchall cls_u32 tcp_bbr ${MERCURY_VM_MODULES:-})
# Full tools copied from the host (skipped with a note when absent).
# shellcheck disable=SC2206
tools=(bash sh ip tc ss bridge iperf3 jq nsenter unshare setpriv flock mount umount losetup timeout
	bpftool ethtool grep egrep fgrep sed mawk find xargs ps pgrep pkill sysctl bc ldd
	${MERCURY_VM_EXTRA_BINS:-})

stage=$(mktemp -d "${TMPDIR:-/tmp}/mercury-initramfs.XXXXXX")
trap 'rm -rf "$stage"' EXIT
cd "$stage"
# Same usrmerge layout as the Debian 12 host, so ldd's paths (/lib/...) hold in the guest.
mkdir -p usr/bin usr/sbin usr/lib usr/lib64 usr/lib/busybox etc proc sys dev run tmp root mercury
ln -s usr/bin bin
ln -s usr/sbin sbin
ln -s usr/lib lib
ln -s usr/lib64 lib64
mkdir -p var/tmp && ln -s ../run var/run

copy_file() { # host path -> same path in the stage, following symlinks
	local dst=$stage$1
	[ -e "$dst" ] && return 0
	mkdir -p "$(dirname "$dst")"
	cp -L "$1" "$dst"
}

declare -A seen_lib=()
copy_libs_of() { # ELF file: copy what the dynamic loader would load for it
	local lib
	while read -r lib; do
		[ -n "$lib" ] && [ -z "${seen_lib[$lib]:-}" ] || continue
		seen_lib[$lib]=1
		copy_file "$lib"
	done < <(ldd "$1" 2>/dev/null | sed -n 's/.*=> \(\/[^ ]*\).*/\1/p; s/^[[:space:]]*\(\/[^ ]*\) (.*/\1/p')
}

is_elf() { [ "$(head -c4 "$1" 2>/dev/null | od -An -tx1 | tr -d ' ')" = 7f454c46 ]; }

# busybox: applets go to /usr/lib/busybox, last on PATH, so bash scripts get the full tools.
bb=$(command -v busybox) || die "busybox not found: apt-get install busybox-static"
is_elf "$bb" && ldd "$bb" >/dev/null 2>&1 && die "$bb is dynamic: install busybox-static"
cp "$bb" usr/bin/busybox
for a in $(usr/bin/busybox --list); do ln -s ../../bin/busybox "usr/lib/busybox/$a"; done

for t in "${tools[@]}"; do
	p=$(PATH=/usr/sbin:/usr/bin:/sbin:/bin command -v "$t") || { log "note: $t not on this host, not in the guest"; continue; }
	copy_file "$p"
	is_elf "$p" && copy_libs_of "$p"
done
ln -sf mawk usr/bin/awk
for p in $(dpkg -L coreutils | grep -E '^/usr/s?bin/|^/bin/'); do
	[ -f "$p" ] || continue
	copy_file "$p"
	is_elf "$p" && copy_libs_of "$p"
done
if [ "${MERCURY_VM_PYTHON:-0}" = 1 ]; then
	py=$(readlink -f "$(command -v python3)") || die "MERCURY_VM_PYTHON=1 but no python3 on this host"
	copy_file "$py"
	copy_libs_of "$py"
	ln -sf "$(basename "$py")" "usr/bin/python3"
	pylib=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["stdlib"])')
	mkdir -p ".$pylib"
	(cd "$pylib" && tar --exclude=test --exclude=__pycache__ --exclude=idlelib --exclude=tkinter -cf - .) | tar -xf - -C ".$pylib"
	for so in ".$pylib"/lib-dynload/*.so; do copy_libs_of "${so#.}"; done
fi
copy_file /lib64/ld-linux-x86-64.so.2
for f in /etc/protocols /etc/services /etc/ethertypes; do [ -f "$f" ] && copy_file "$f"; done
[ -d /etc/iproute2 ] && cp -rL /etc/iproute2 etc/
printf 'root:x:0:0:root:/root:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n' >etc/passwd
printf 'root:x:0:\nnogroup:x:65534:\n' >etc/group
printf '127.0.0.1 localhost\n::1 localhost\n' >etc/hosts
printf 'passwd: files\ngroup: files\nhosts: files\n' >etc/nsswitch.conf

# Kernel modules: the closure over .modinfo "depends=", dependencies first.
declare -A mod_path=() mod_done=()
while read -r ko; do
	n=${ko##*/}
	n=${n%.ko}
	mod_path[${n//-/_}]=$ko
done < <(find "$mods/kernel" -name '*.ko')
order=()
add_module() { # name
	local n=${1//-/_} d
	[ -n "${mod_done[$n]:-}" ] && return 0
	mod_done[$n]=1
	if [ -z "${mod_path[$n]:-}" ]; then
		grep -q "/$n.ko\$" "$mods/modules.builtin" 2>/dev/null && return 0 # built into vmlinux
		die "kernel $kver has no module $n (add it or drop it from the list)"
	fi
	for d in $(objcopy -O binary --only-section=.modinfo "${mod_path[$n]}" /dev/stdout |
		tr '\0' '\n' | sed -n 's/^depends=//p' | tr ',' ' '); do
		add_module "$d"
	done
	order+=("$n")
}
for m in "${modules[@]}"; do add_module "$m"; done
mkdir -p "lib/modules/$kver" etc/mercury
for n in "${order[@]}"; do
	rel=${mod_path[$n]#"$mods/"}
	mkdir -p "lib/modules/$kver/$(dirname "$rel")"
	cp "${mod_path[$n]}" "lib/modules/$kver/$rel"
	echo "/lib/modules/$kver/$rel" >>etc/mercury/modules.order
done
cp "$mods/modules.builtin" "lib/modules/$kver/" 2>/dev/null || true

# The project: tracked and untracked-not-ignored sources (small files), then build outputs.
(cd "$root" && git ls-files -co --exclude-standard -z 2>/dev/null) |
	(cd "$root" && while IFS= read -r -d '' f; do
		[ -f "$f" ] && [ "$(stat -c %s "$f")" -le 1048576 ] && printf '%s\0' "$f"
	done; true) |
	(cd "$root" && cpio -0 -pdm --quiet "$stage/mercury")
if [ -d "$build" ]; then
	(cd "$build" && find . -type f ! -name '*.d' ! -name '*.a' ! \( -name '*.o' ! -name '*.bpf.o' \) -print0) |
		(cd "$build" && cpio -0 -pdm --quiet "$stage/mercury/build")
	while IFS= read -r -d '' f; do
		is_elf "$f" && copy_libs_of "$f"
	done < <(find "$stage/mercury/build" -type f -perm -u+x -print0)
else
	log "note: no $build: the guest runs only the tests that need no project binaries"
fi

install -m 0755 "$here/guest-init" init
echo "$kver" >etc/mercury/kernel
ldconfig -r "$stage" 2>/dev/null || true

mkdir -p "$(dirname "$out")"
find . -mindepth 1 -printf '%P\n' | LC_ALL=C sort | cpio -o -H newc --quiet | gzip -1 >"$out.tmp"
mv "$out.tmp" "$out"
log "$(du -sh "$out" | cut -f1) (${#order[@]} modules, $(find . -type f | wc -l) files) -> $out"
