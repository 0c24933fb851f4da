#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# make test-systemd: mercuryd's systemd unit for real. PID 1 on these machines is not systemd,
# so this boots one: a minimal Debian 12 root (mmdebstrap) with systemd as init, Mercury's own
# Debian package (make deb) installed in it, Debian's 6.1 kernel under QEMU TCG, the whole root
# as the initramfs. A oneshot unit in the guest (tests/vm/systemd-guest.sh) starts, restarts
# and stops mercuryd.service and reads its journal, purges the packages, then upgrades to them
# from an older release with another pin layout (built here from MERCURY_UPGRADE_FROM, cached
# in build/upgrade-from/<commit>/); its verdict comes back on a serial port.
# Env: MERCURY_SYSTEMD_TIMEOUT (s, default 600), MERCURY_SYSTEMD_KEEP=1 (keep the work dir),
# MERCURY_UPGRADE_FROM (commit; default 1e23490, release 0.1.0, pin layout 4: the single
# package issue 36 was filed against).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${MERCURY_BUILD:-$root/build}
limit=${MERCURY_SYSTEMD_TIMEOUT:-600}
upgrade_from=${MERCURY_UPGRADE_FROM:-1e23490d03858cb704fd7ba77e6a3672238715ca}
log() { printf 'test-systemd: %s\n' "$*" >&2; }
[ "$(id -u)" -eq 0 ] || { log "SKIP: needs root"; exit 77; }
for t in mmdebstrap qemu-system-x86_64 cpio dpkg-deb; do
	command -v "$t" >/dev/null || { log "SKIP: $t missing (make deps)"; exit 77; }
done
t0=$(date +%s)
kdir=$(MERCURY_VM_CACHE=${MERCURY_VM_CACHE:-/var/cache/mercury-vm} "$here/fetch-kernel.sh") ||
	{ log "could not fetch the 6.1 kernel"; exit 1; }
kver=$(cat "$kdir/version")
debs=$(BUILD=$build "$root/scripts/make-deb.sh") || { log "make deb failed"; exit 1; }
deb=$(grep '/mercury_' <<<"$debs")
work=$(mktemp -d "${TMPDIR:-/var/tmp}/mercury-systemd.XXXXXX")
old_src=
cleanup() {
	[ -z "$old_src" ] || rm -rf "$old_src"
	if [ "${MERCURY_SYSTEMD_KEEP:-0}" = 1 ]; then log "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

# The release to upgrade from: its packages, built by its own make deb from `git archive` of
# the commit, once (build/upgrade-from/<commit>/ keeps them).
layout_of() { sed -n 's/^#define MERCURY_LAYOUT_VERSION \([0-9]*\).*/\1/p'; }
upgrade=$work/upgrade
mkdir -p "$upgrade"
if ! old=$(git -C "$root" rev-parse --verify --quiet "$upgrade_from^{commit}"); then
	log "SKIP of the upgrade part: commit $upgrade_from not in this checkout"
	echo "commit $upgrade_from not in the checkout the test ran from" >"$upgrade/skip"
else
	cache=$build/upgrade-from/$old
	if ! ls "$cache"/*.deb >/dev/null 2>&1; then
		t2=$(date +%s)
		old_src=$(mktemp -d "${TMPDIR:-/var/tmp}/mercury-old.XXXXXX")
		git -C "$root" archive "$old" | tar -x -C "$old_src" &&
			old_debs=$(MAKEFLAGS=-j2 BUILD="$old_src/build" "$old_src/scripts/make-deb.sh" 2>"$old_src/make.log") ||
			{ log "building the packages of $old failed:"; tail -n 20 "$old_src/make.log" >&2; exit 1; }
		rm -rf "$cache" "$cache.tmp" && mkdir -p "$cache.tmp" && cp $old_debs "$cache.tmp/" &&
			mv "$cache.tmp" "$cache" || { log "cannot write $cache"; exit 1; }
		rm -rf "$old_src"
		old_src=
		log "built $(cd "$cache" && echo *.deb) from ${old:0:7} in $(($(date +%s) - t2))s"
	fi
	old_layout=$(git -C "$root" show "$old:include/mercury_abi.h" | layout_of)
	new_layout=$(layout_of <"$root/include/mercury_abi.h")
	if [ -z "$old_layout" ] || [ "$old_layout" = "$new_layout" ]; then
		log "FAIL: $upgrade_from has pin layout '$old_layout', this tree $new_layout: choose an older commit"
		exit 1
	fi
	mkdir -p "$upgrade/old" "$upgrade/new"
	cp "$cache"/*.deb "$upgrade/old/"
	cp $debs "$upgrade/new/"
	cat >"$upgrade/env" <<EOF
OLD_COMMIT=${old:0:7}
OLD_VERSION=$(dpkg-deb -f "$(ls "$cache"/mercury_*.deb | head -n1)" Version)
OLD_LAYOUT=$old_layout
NEW_VERSION=$(dpkg-deb -f "$deb" Version)
NEW_LAYOUT=$new_layout
EOF
fi

# The root: systemd as init, what the guest test uses, Mercury's package with its dependencies.
mmdebstrap --quiet --variant=minbase \
	--include=systemd,systemd-sysv,kmod,iproute2,iputils-ping,iperf3,jq,procps,socat,libbpf1,libnl-route-3-200,libjson-c5,adduser,python3,prometheus-node-exporter,curl \
	--customize-hook="copy-in $(echo $debs) /tmp" \
	--customize-hook='chroot "$1" sh -c "dpkg -i /tmp/*.deb"' \
	bookworm "$work/root" || { log "mmdebstrap failed"; exit 1; }
r=$work/root
# Kernel modules the data path needs, found by the guest's modprobe.
mods=$kdir/lib/modules/$kver
mkdir -p "$r/lib/modules/$kver"
(cd "$mods" && find kernel/net/sched kernel/drivers/net/veth.ko kernel/net/ipv4/tcp_bbr.ko -name '*.ko' -print0 2>/dev/null |
	cpio -0 -pdm --quiet "$r/lib/modules/$kver")
cp "$mods"/modules.builtin* "$mods"/modules.order "$r/lib/modules/$kver/" 2>/dev/null
chroot "$r" depmod "$kver" || { log "depmod in the root failed"; exit 1; }
printf '%s\n' veth sch_htb sch_ingress cls_bpf >"$r/etc/modules-load.d/mercury.conf"
# The packages of the upgrade (or why there are none).
mkdir -p "$r/var/lib/mercury-e2e"
cp -r "$upgrade" "$r/var/lib/mercury-e2e/upgrade"
# The guest test, its unit (after boot), the example client; no login prompts.
install -m 0755 "$here/systemd-guest.sh" "$r/usr/local/bin/mercury-e2e"
install -m 0755 "$build/examples/tag_tensor" "$r/usr/local/bin/tag_tensor"
cat >"$r/etc/systemd/system/mercury-e2e.service" <<'EOF'
[Unit]
Description=Mercury end-to-end test of mercuryd.service
After=multi-user.target systemd-modules-load.service
[Service]
Type=oneshot
ExecStart=/usr/local/bin/mercury-e2e
StandardOutput=journal+console
[Install]
WantedBy=multi-user.target
EOF
ln -sf /etc/systemd/system/mercury-e2e.service "$r/etc/systemd/system/multi-user.target.wants/mercury-e2e.service"
for u in getty@tty1.service serial-getty@ttyS0.service systemd-timesyncd.service apt-daily.timer apt-daily-upgrade.timer; do
	ln -sf /dev/null "$r/etc/systemd/system/$u"
done
echo mercury-e2e >"$r/etc/hostname"
(cd "$r" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc --quiet | gzip -1 >"$work/root.cpio.gz")
log "root with systemd and $(basename "$deb"): $(du -sh "$work/root.cpio.gz" | cut -f1) in $(($(date +%s) - t0))s"

: >"$work/console.log"
: >"$work/results.log"
t1=$(date +%s)
timeout --kill-after=10 "$limit" qemu-system-x86_64 \
	-accel tcg -M pc -cpu max -smp 2 -m 3G \
	-kernel "$kdir/vmlinux" -initrd "$work/root.cpio.gz" \
	-append "console=ttyS0 rdinit=/lib/systemd/systemd systemd.unit=multi-user.target loglevel=4 panic=-1" \
	-display none -monitor none -nic none -no-reboot \
	-serial "file:$work/console.log" -serial "file:$work/results.log" </dev/null
qrc=$?
res=$(tr -d '\r' <"$work/results.log")
grep '^E2E' <<<"$res"
log "VM ${qrc}: $(($(date +%s) - t1))s under TCG; total $(($(date +%s) - t0))s"
done_line=$(grep -m1 '^E2E-DONE ' <<<"$res")
if [ -z "$done_line" ]; then
	log "FAIL: the guest never reported (qemu rc $qrc); console tail:"
	tail -n 40 "$work/console.log" | tr -d '\r' >&2
	MERCURY_SYSTEMD_KEEP=1
	exit 1
fi
[ "${done_line#E2E-DONE }" -eq 0 ] || { log "FAIL: ${done_line#E2E-DONE } check(s) failed"; exit 1; }
log "PASS"
