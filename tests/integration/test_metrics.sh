#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Metrics the way node agents publish them: `mercuryd metrics --textfile` and `serve
# --metrics-textfile` write mercury.prom; Debian's real prometheus-node-exporter serves it
# through its textfile collector; the scraped values agree with `mercuryd status -j` under
# traffic, and the service's request counts and latency histogram add up.
. "$(dirname "$0")/lib.sh"
need_python
command -v prometheus-node-exporter >/dev/null && command -v curl >/dev/null ||
	{ echo "SKIP: prometheus-node-exporter or curl missing (make deps)"; exit 77; }

tmp=$(mktemp -d)
ne_pid=
trap 'kill $ne_pid 2>/dev/null; wait $ne_pid 2>/dev/null; cleanup; rm -rf "$tmp"' EXIT
sock=$tmp/mercuryd.sock
export MERCURY_SOCKET=$sock PYTHONPATH=$ROOT/python MERCURY_LIB=$ROOT/build/libmercury.so
tf=$tmp/textfile
mkdir -p "$tf"

setup_pair || { fail "namespace setup"; finish; }
check "attach" mercuryd_s attach va --qdisc htb --rate "${RATE_MBIT}mbit"
# node_exporter in the sender namespace, on its loopback only
nsenter --net=/var/run/netns/"$NS_S" prometheus-node-exporter --collector.disable-defaults \
	--collector.textfile --collector.textfile.directory="$tf" \
	--web.listen-address=127.0.0.1:19100 >"$tmp/ne.log" 2>&1 &
ne_pid=$! # not in PIDS: wait_flows waits for those
scrape() { in_s curl -sf --max-time 5 http://127.0.0.1:19100/metrics; }
for _ in $(seq 1 50); do scrape >/dev/null 2>&1 && break; sleep 0.1; done
check "node_exporter is up" sh -c "$(declare -f scrape in_s); NS_S=$NS_S scrape >/dev/null"
# value of metric $1 with labels matching $2 in scrape $3
value() { grep -E "^$1\{[^}]*$2[^}]*\} " "$3" | awk '{print $2}' | head -n1; }
band_bytes() { jq ".interfaces[0].per_band[$1].bytes" "$2"; }
# lo <= v <= hi, v as the exporter prints it (floats, 7 digits: 4.909238e+07)
between() { [ -n "$2" ] && awk -v lo="$1" -v v="$2" -v hi="$3" 'BEGIN { exit !(lo - lo * 1e-6 <= v + 0 && v + 0 <= hi + hi * 1e-6) }'; }

start_two_flows 5 "$tmp/flow"
tag_flow 40001 0 || fail "tag flow 1"
sleep 2
mercuryd_s -j status va >"$tmp/s1.json"
check "mercuryd metrics --textfile" mercuryd_s metrics --textfile "$tf"
scrape >"$tmp/scrape1"
mercuryd_s -j status va >"$tmp/s2.json"
check "no temporary file left beside mercury.prom" test "$(ls -A "$tf")" = mercury.prom
check "node_exporter read the file without error" grep -q 'node_textfile_scrape_error 0' "$tmp/scrape1"
check "interface info: htb, $(default_hook), ok" grep -q "mercury_iface_info{backend=\"htb\",health=\"ok\",hook=\"$(default_hook)\",iface=\"va\"} 1" "$tmp/scrape1"
check "bands: 8" test "$(value mercury_iface_bands 'iface="va"' "$tmp/scrape1")" = 8
for b in 0 7; do
	v=$(value mercury_band_bytes_total "band=\"$b\",iface=\"va\"" "$tmp/scrape1")
	lo=$(band_bytes "$b" "$tmp/s1.json") hi=$(band_bytes "$b" "$tmp/s2.json")
	check "band $b bytes under traffic: status $lo <= metric $v <= status $hi" between "$lo" "$v" "$hi"
done
v=$(value mercury_outcome_packets_total 'iface="va",outcome="tagged"' "$tmp/scrape1")
lo=$(jq '.interfaces[0].outcomes.tagged.packets' "$tmp/s1.json") hi=$(jq '.interfaces[0].outcomes.tagged.packets' "$tmp/s2.json")
check "tagged packets: status $lo <= metric $v <= status $hi" between "$lo" "$v" "$hi"
check "the tagged flow went to band 0 (status: $(band_bytes 0 "$tmp/s2.json") bytes)" test "$(band_bytes 0 "$tmp/s2.json")" -gt 1000000
wait_flows

# The service: requests by result, latency histogram, jobs.
start_sink 7000
nsenter --net=/var/run/netns/"$NS_S" "$MERCURYD" --pin-root "$PIN_ROOT" serve --socket "$sock" \
	--metrics-textfile "$tf" --metrics-interval 1 >"$tmp/serve.log" 2>&1 &
PIDS+=($!)
serve_pid=$!
for _ in $(seq 1 50); do [ -S "$sock" ] && break; sleep 0.1; done
nsenter --net=/var/run/netns/"$NS_S" python3 - <<'PY' >"$tmp/client.out" 2>&1 &
import socket, mercury
m = mercury.Client()
m.job_declare(9, 4)
m.iteration_begin(9, 3)
s = socket.create_connection(("10.77.0.2", 7000))
for layer in (4, 3, 2, 1):
    m.send_tensor(s, bytes(100000), 9, layer, mercury.PUSH, 3)
try:
    m.tag_next(s, 9, 99, mercury.PUSH, 3, 10)   # layer out of range: ERANGE
except OSError as e:
    print("rejected", e.errno)
print("done", flush=True)
import time
time.sleep(3)  # connected: its job stays declared while the test scrapes
PY
client=$!
for _ in $(seq 1 100); do grep -q done "$tmp/client.out" && break; sleep 0.1; done
check "client ran ($(tail -n1 "$tmp/client.out"))" grep -q done "$tmp/client.out"
sleep 1.5 # one metrics interval
scrape >"$tmp/scrape_live"
check "job 9's oldest open iteration: 3" test "$(value mercury_service_job_oldest_open_iteration 'job="9"' "$tmp/scrape_live")" = 3
check "one client connected" test "$(awk '/^mercury_service_clients / {print $2}' "$tmp/scrape_live")" = 1
wait "$client"
kill -TERM "$serve_pid"
wait "$serve_pid"
scrape >"$tmp/scrape2"
ok=$(value mercury_service_requests_total 'result="ok"' "$tmp/scrape2")
check "requests ok: $ok (declare, begin, 4 tags)" test "${ok:-0}" -ge 6
check "requests rejected ERANGE: 1" test "$(value mercury_service_requests_total 'result="ERANGE"' "$tmp/scrape2")" = 1
count=$(awk '/^mercury_service_request_duration_seconds_count/ {print $2}' "$tmp/scrape2")
inf=$(value mercury_service_request_duration_seconds_bucket 'le="\+Inf"' "$tmp/scrape2")
check "histogram: +Inf bucket = count = every request ($count)" sh -c "[ '$count' = '$inf' ] && [ '$count' -eq $((ok + 1)) ]"
check "after the client left: no job" test "$(awk '/^mercury_service_jobs / {print $2}' "$tmp/scrape2")" = 0
check "detach" mercuryd_s detach va
finish
