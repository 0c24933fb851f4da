#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Install every Debian package Mercury needs to build, test and benchmark. Idempotent:
# packages already present are skipped, so a second run costs one dpkg query.
set -euo pipefail
pkgs=(
	make gcc clang llvm libbpf-dev bpftool libelf-dev zlib1g-dev pkg-config
	libnl-3-dev libnl-route-3-dev libjson-c-dev libcmocka-dev libsystemd-dev
	iproute2 iperf3 jq bc ethtool python3 python3-dev systemd util-linux procps
	clang-format libclang-rt-14-dev
	qemu-system-x86 busybox-static cpio xz-utils gnuplot-nox
	mmdebstrap git prometheus-node-exporter curl
	# packaging: lintian over make deb; the container image (podman import, runc; BRIEF 3d)
	lintian podman runc
	# real training (mercury.torch, bench-torch): Debian's torch for /usr/bin/python3, and
	# OpenBLAS, without which torch falls back to reference BLAS and steps are 2-5x slower
	python3-torch python3-torchvision libopenblas0-pthread
)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
# Clients of the event service must be root or in group mercury (socket mode 0660).
ensure_group() {
	getent group mercury >/dev/null && return 0
	[ "$(id -u)" -eq 0 ] || { echo "deps: need root to create group mercury" >&2; return 1; }
	groupadd --system mercury && echo "deps: created group mercury"
}
if [ ${#missing[@]} -eq 0 ]; then
	ensure_group
	echo "deps: all ${#pkgs[@]} packages present"
	exit 0
fi
[ "$(id -u)" -eq 0 ] || { echo "deps: need root to install: ${missing[*]}" >&2; exit 1; }
echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
ensure_group
