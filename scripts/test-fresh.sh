#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# make test-fresh: the README's two commands on a bare Debian, as a new user types them.
# Builds a minimal Debian 12 root with mmdebstrap (variant minbase, plus make: every machine
# of this kind has it, minbase does not), puts a clean clone of this repository's HEAD in it,
# and runs each of the README's command lines (scripts/readme-commands.sh) as one invocation
# inside it (chroot; /proc, /sys with /sys/fs/bpf and the cgroup mount, /dev bind-mounted).
# Passes only if every line passes. Everything it installs goes into the root, which is
# removed at the end (MERCURY_FRESH_KEEP=1 keeps it).
# Exit status: 0 every line passed, 1 a line failed, 3 the bare root could not be set up
# (nothing of the README ran).
# Env: MERCURY_FRESH_ONLY=N  run only the README's N-th line (1 = demo, 2 = test)
#      MERCURY_FRESH_DIR     where to build the root (default /var/tmp)
set -uo pipefail
root_dir=$(cd "$(dirname "$0")/.." && pwd)
log() { printf 'test-fresh: %s\n' "$*" >&2; }
[ "$(id -u)" -eq 0 ] || { log "needs root (mmdebstrap, chroot, mounts)"; exit 3; }
command -v mmdebstrap >/dev/null || { log "mmdebstrap missing: make deps installs it"; exit 3; }

t0=$(date +%s)
fresh=$(mktemp -d "${MERCURY_FRESH_DIR:-/var/tmp}/mercury-fresh.XXXXXX")
mounts=()
cleanup() {
	local m i
	for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do
		m=${mounts[i]}
		umount -R "$m" 2>/dev/null || umount -lR "$m" 2>/dev/null
	done
	if [ "${MERCURY_FRESH_KEEP:-0}" = 1 ]; then log "root kept in $fresh"; else rm -rf "$fresh"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log "building a minbase Debian 12 root in $fresh"
mmdebstrap --quiet --variant=minbase --include=make,ca-certificates bookworm "$fresh/root" ||
	{ log "mmdebstrap failed"; exit 3; }
t_root=$(($(date +%s) - t0))
cp /etc/resolv.conf "$fresh/root/etc/resolv.conf" 2>/dev/null
git clone --quiet --no-hardlinks "$root_dir" "$fresh/root/src" || { log "git clone failed"; exit 3; }
log "root ready in ${t_root}s; clone of $(git -C "$root_dir" rev-parse --short HEAD) in /src"

bind() { # host path, path in the root, mount options
	mkdir -p "$fresh/root$2"
	mount "${@:3}" "$1" "$fresh/root$2" && mounts+=("$fresh/root$2")
}
# The root a mount point of its own, as / is on a real machine (ip netns exec remounts it).
mount --bind "$fresh/root" "$fresh/root" && mounts+=("$fresh/root") || { log "bind mount of the root failed"; exit 3; }
bind /proc /proc --rbind &&
	bind /sys /sys --rbind &&
	bind /dev /dev --rbind || { log "bind mounts failed"; exit 3; }
mkdir -p "$fresh/root/run" && mount -t tmpfs tmpfs "$fresh/root/run" && mounts+=("$fresh/root/run")
for m in "${mounts[@]}"; do mount --make-rslave "$m" 2>/dev/null; done

fails=0 n=0
while IFS= read -r line; do
	n=$((n + 1))
	[ -n "${MERCURY_FRESH_ONLY:-}" ] && [ "$MERCURY_FRESH_ONLY" != "$n" ] && continue
	log "README line $n: $line"
	t1=$(date +%s)
	# A login-like environment: Debian's PATH, no host variables leaking in.
	env -i HOME=/root TERM=dumb LANG=C.UTF-8 PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		MERCURY_IN_CHROOT=1 chroot "$fresh/root" /bin/bash -c "cd /src && $line"
	rc=$?
	log "README line $n: rc $rc after $(($(date +%s) - t1))s"
	[ "$rc" -eq 0 ] || fails=$((fails + 1))
done < <("$root_dir/scripts/readme-commands.sh")
log "total $(($(date +%s) - t0))s; $fails of $n README line(s) failed on a bare Debian"
[ "$fails" -eq 0 ]
