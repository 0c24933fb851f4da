#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# PID 1 of Mercury's container image: what mercuryd.service does on a host, for a node agent
# under podman or Kubernetes. Attaches the interfaces the config lists (a ConfigMap in
# Kubernetes), the tag fast path if the cgroup v2 root is mounted, serves events; on SIGTERM
# (podman stop, a deleted pod) stops serving and detaches every interface it attached
# (mercuryd detach --all): a node without the agent keeps no Mercury qdisc, filter or pin.
# Env: MERCURY_INTERFACES (file, /etc/mercury/interfaces), MERCURY_PIN_ROOT
# (/sys/fs/bpf/mercury), MERCURY_METRICS_DIR (a directory for mercury.prom, or empty),
# MERCURY_DETACH_ON_EXIT (1; 0 leaves the data path classifying, as the systemd unit does).
set -u
conf=${MERCURY_INTERFACES:-/etc/mercury/interfaces}
root=${MERCURY_PIN_ROOT:-/sys/fs/bpf/mercury}
metrics=${MERCURY_METRICS_DIR:-}
m() { mercuryd --pin-root "$root" "$@"; }

mountpoint -q /sys/fs/bpf || echo "mercury: /sys/fs/bpf is not the host's bpffs (mount it): pins die with the container" >&2
m attach --from "$conf" || { echo "mercury: attaching $conf failed" >&2; m detach --all >&2; exit 1; }
m fastpath attach >&2 || echo "mercury: no tag fast path (cgroup v2 root not mounted?): clients use the service" >&2
serve=
stop() {
	trap - TERM INT
	[ -n "$serve" ] && kill -TERM "$serve" 2>/dev/null && wait "$serve"
	if [ "${MERCURY_DETACH_ON_EXIT:-1}" = 1 ]; then
		m detach --all >&2
	fi
	exit 0
}
trap stop TERM INT
if [ -n "$metrics" ]; then
	mkdir -p "$metrics"
	m serve --metrics-textfile "$metrics" &
else
	m serve &
fi
serve=$!
# wait returns on a signal (then the trap runs) or when serve ends on its own (a failure).
wait "$serve"
rc=$?
serve=
echo "mercury: mercuryd serve ended ($rc)" >&2
[ "${MERCURY_DETACH_ON_EXIT:-1}" = 1 ] && m detach --all >&2
exit "$rc"
