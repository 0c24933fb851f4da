#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Mercury's OCI image from Debian packages only: a minimal Debian 12 root (mmdebstrap, from
# the Debian archive, nothing else downloaded) with the mercury .deb of this tree installed by
# apt (its dependencies from the archive), packed as a tarball and imported by podman with no
# registry. Usage: packaging/container/build-image.sh [TAG] (default localhost/mercury:<v>).
# Prints the tag. Env: MERCURY_BUILD (build dir), MERCURY_MIRROR (Debian mirror URL).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${MERCURY_BUILD:-$root/build}
version=$(sed -n 's/^#define MERCURY_VERSION "\(.*\)"/\1/p' "$root/common/version.h")
tag=${1:-localhost/mercury:$version}
for t in mmdebstrap podman dpkg-deb; do
	command -v "$t" >/dev/null || { echo "build-image: $t missing (scripts/deps.sh)" >&2; exit 77; }
done
debs=$(BUILD=$build "$root/scripts/make-deb.sh")
deb=$(grep '/mercury_' <<<"$debs")
work=$(mktemp -d "${TMPDIR:-/var/tmp}/mercury-image.XXXXXX")
trap 'rm -rf "$work"' EXIT
# iproute2 for tc in the image (inspection: podman exec ... tc qdisc show); node_exporter for
# the DaemonSet's metrics container (its textfile collector serves mercury.prom); no systemd.
mmdebstrap --quiet --variant=minbase --include=iproute2,prometheus-node-exporter \
	--customize-hook="copy-in $deb /tmp" \
	--customize-hook='chroot "$1" sh -c "DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends /tmp/'"$(basename "$deb")"' >/dev/null"' \
	--customize-hook="copy-in $here/entrypoint.sh /usr/local/bin" \
	--customize-hook='rm -f "$1"/tmp/*.deb; rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin' \
	bookworm "$work/root.tar" ${MERCURY_MIRROR:-} >&2
podman import --quiet \
	--change 'ENTRYPOINT ["/usr/local/bin/entrypoint.sh"]' \
	--change "LABEL org.opencontainers.image.title=mercury org.opencontainers.image.version=$version org.opencontainers.image.licenses=BSD-2-Clause" \
	--change 'STOPSIGNAL SIGTERM' \
	"$work/root.tar" "$tag" >&2
echo "$tag"
