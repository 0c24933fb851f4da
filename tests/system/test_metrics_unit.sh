#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Metrics under the shipped unit: systemd/mercuryd.service with the node_exporter drop-in
# (systemd/mercuryd.service.d/node-exporter.conf) passes systemd-analyze verify, makes the
# textfile directory writable despite ProtectSystem=strict, and points serve at it; serve run
# with the unit's UMask=0077 writes mercury.prom mode 0644, and Debian's node_exporter run
# as an unprivileged user (nobody) serves its metrics with no scrape error.
# (tests/vm/systemd-guest.sh checks the same under a real systemd.)
set -uo pipefail
root=${MERCURY_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
build=${MERCURY_BUILD:-$root/build}
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 77; }
command -v systemd-analyze >/dev/null || { echo "SKIP: no systemd-analyze"; exit 77; }
unit=$root/systemd/mercuryd.service
dropin=$root/systemd/mercuryd.service.d/node-exporter.conf
tmp=$(mktemp -d)
pins=/sys/fs/bpf/mqmu$$
serve_pid= ne_pid=
trap 'for p in $ne_pid $serve_pid; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; rm -rf "$tmp" "$pins"' EXIT
fails=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fails=$((fails + 1)); fi; }

mkdir -p "$tmp/units/mercuryd.service.d"
sed "s#/usr/local/sbin/mercuryd#$build/mercuryd#g" "$unit" >"$tmp/units/mercuryd.service"
sed "s#/usr/local/sbin/mercuryd#$build/mercuryd#g" "$dropin" >"$tmp/units/mercuryd.service.d/node-exporter.conf"
out=$(cd "$tmp/units" && SYSTEMD_UNIT_PATH="$tmp/units:" SYSTEMD_LOG_LEVEL=warning \
	systemd-analyze verify --man=no mercuryd.service 2>&1 | grep -E 'mercuryd|node-exporter' |
	grep -v 'not running as PID 1')
check "unit + drop-in pass systemd-analyze verify${out:+ ($out)}" "[ -z '$out' ]"
dir=$(sed -n 's/^ExecStart=.*--metrics-textfile \([^ ]*\).*/\1/p' "$dropin")
check "the drop-in points serve at a textfile directory ($dir)" "[ -n '$dir' ]"
check "... and makes it writable despite ProtectSystem=strict" \
	"grep -qx 'ReadWritePaths=-\\?$dir' '$dropin'"
check "... and keeps the unit's UMask=0077 (the file's mode is the daemon's business)" \
	"grep -qx 'UMask=0077' '$unit' && ! grep -q '^UMask' '$dropin'"

# serve as the unit runs it: umask 0077, the textfile every second
tf=$tmp/textfile
mkdir -m 0755 "$tf"
chmod 0755 "$tmp"
(umask 0077 && exec "$build/mercuryd" --pin-root "$pins" serve --socket "$tmp/s.sock" \
	--metrics-textfile "$tf" --metrics-interval 1) >"$tmp/serve.log" 2>&1 &
serve_pid=$!
for _ in $(seq 1 50); do [ -f "$tf/mercury.prom" ] && break; sleep 0.1; done
mode=$(stat -c %a "$tf/mercury.prom" 2>/dev/null)
check "serve under UMask=0077 writes mercury.prom mode 0644 ($mode)" "[ '$mode' = 644 ]" ||
	cat "$tmp/serve.log"
check "user nobody can read it" "setpriv --reuid=nobody --regid=nogroup --clear-groups cat '$tf/mercury.prom' >/dev/null"
if command -v prometheus-node-exporter >/dev/null && command -v curl >/dev/null; then
	port=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	setpriv --reuid=nobody --regid=nogroup --clear-groups prometheus-node-exporter \
		--collector.disable-defaults --collector.textfile --collector.textfile.directory="$tf" \
		--web.listen-address="127.0.0.1:$port" >"$tmp/ne.log" 2>&1 &
	ne_pid=$!
	for _ in $(seq 1 50); do
		page=$(curl -s "http://127.0.0.1:$port/metrics") && [ -n "$page" ] && break
		sleep 0.1
	done
	err=$(grep '^node_textfile_scrape_error ' <<<"$page" | awk '{ print $2 }')
	n=$(grep -c '^mercury_' <<<"$page")
	check "node_exporter as nobody serves mercury's metrics ($n mercury_ series, scrape error ${err:-?})" \
		"[ '$n' -gt 0 ] && [ '$err' = 0 ]"
else
	echo "note: no prometheus-node-exporter/curl: not scraped"
fi
[ "$fails" -eq 0 ] && { echo "all checks passed"; exit 0; }
exit 1
