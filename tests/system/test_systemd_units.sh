#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The units parse and pass systemd-analyze verify (with ExecStart pointing at this build),
# and the hardening a reviewer relies on is present.
set -uo pipefail
root=${MERCURY_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
build=${MERCURY_BUILD:-$root/build}
command -v systemd-analyze >/dev/null || { echo "SKIP: no systemd-analyze"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
sed "s#/usr/local/sbin/mercuryd#$build/mercuryd#g" "$root/systemd/mercuryd.service" >"$tmp/mercuryd.service"
if out=$(cd "$tmp" && SYSTEMD_LOG_LEVEL=warning systemd-analyze verify --man=no ./mercuryd.service 2>&1); [ -n "$out" ]; then
	# verify prints nothing for clean units; anything about our files is a finding.
	if printf '%s\n' "$out" | grep -E 'mercuryd.service' | grep -v 'not running as PID 1'; then
		echo "FAIL: systemd-analyze verify"; fails=$((fails + 1))
	fi
fi
for want in NoNewPrivileges=yes ProtectSystem=strict CapabilityBoundingSet= SystemCallFilter= \
	RestrictAddressFamilies= KillSignal=SIGTERM RuntimeDirectory=mercury; do
	grep -q "^$want" "$root/systemd/mercuryd.service" || { echo "FAIL: unit lacks $want"; fails=$((fails + 1)); }
done
grep -q '^CapabilityBoundingSet=.*CAP_SYS_ADMIN' "$root/systemd/mercuryd.service" && {
	echo "FAIL: service must not hold CAP_SYS_ADMIN"; fails=$((fails + 1)); }
[ "$fails" -eq 0 ] && echo "units verified" && exit 0
exit 1
