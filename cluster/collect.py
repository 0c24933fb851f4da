#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Summarises one emulated-cluster run: the nodes' JSON results plus the kernel counters taken
before and after (cluster/lib.sh run_ps), as one JSON line on stdout."""
import json
import sys

d, n, label, model, mode, t0, t1, cpu0, cpu1, rate, shaper, cc = sys.argv[1:13]
n, t0, t1, rate = int(n), float(t0), float(t1), float(rate)
nodes, errors = [], []
for i in range(n):
    try:
        with open(f"{d}/out.{i}") as f:
            nodes.append(json.loads(f.readline()))
    except (OSError, ValueError):
        nodes.append({"ok": False, "error": "no result"})
    if not nodes[-1].get("ok"):
        errors.append(f"node {i}: {nodes[-1].get('error', '?')}")


def counters(tag, i):
    with open(f"{d}/{tag}.{i}") as f:
        return [int(x) for x in f.read().split()]


out_segs = retrans = tx = timeouts = rtx_host_queued = ce_received = 0
for i in range(n):
    a, b = counters("c0", i), counters("c1", i)
    out_segs += b[0] - a[0]
    retrans += b[1] - a[1]
    tx += b[2] - a[2]
    if len(a) > 3 and len(b) > 3:
        timeouts += b[3] - a[3]
    if len(a) > 4 and len(b) > 4:
        rtx_host_queued += b[4] - a[4]
    if len(a) > 5 and len(b) > 5:
        ce_received += b[5] - a[5]


def read_or(name, default):
    try:
        with open(f"{d}/{name}") as f:
            return f.read().strip()
    except OSError:
        return default


switch_drops = int(read_or("swdrop1", "0") or 0) - int(read_or("swdrop0", "0") or 0)
ports0, ports1 = (json.loads(read_or(f, "{}") or "{}") for f in ("swports0", "swports1"))
# per port, where any: which queue overflowed (s<i>: towards node i; u0/u1: the rack uplink)
switch_drops_by_port = {p: v - ports0.get(p, 0) for p, v in sorted(ports1.items())
                        if v - ports0.get(p, 0)}
fabric = read_or("fabric", "egress-only fabric (unshaped switch ports)")
busy0, tot0, steal0 = (float(x) for x in cpu0.split())
busy1, tot1, steal1 = (float(x) for x in cpu1.split())
stolen = steal1 - steal0
ok = not errors
# Forward-pass ends on one clock for all namespaces (CLOCK_MONOTONIC): the first and last
# node's end of the warm-up, the last node's end of the measured iterations.
if ok:
    first_start = min(x["t_start"] for x in nodes)
    last_start = max(x["t_start"] for x in nodes)
    last_end = max(x["t_end"] for x in nodes)
    iters = nodes[0]["iters"]
res = {
    "label": label, "model": model, "mode": mode, "ok": ok, "nodes": n,
    "rate_mbit": rate, "shaper": shaper, "congestion_control": cc,
    # Cluster-wide: the cluster has done an iteration when its last node has, so the time
    # per iteration runs from the last node's end of the warm-up to its end of the measured
    # iterations. A single worker's window can miss part of the traffic its node still sends
    # to slower workers. iter_s_span starts at the first node's end of the warm-up instead:
    # it adds the nodes' stagger there, divided by the iterations (up to 11 % on fifo here).
    "iter_s": (last_end - last_start) / iters if ok else None,
    "iter_s_span": round((last_end - first_start) / iters, 6) if ok else None,
    "iter_s_nodes": [x.get("iter_s") for x in nodes],
    # The cluster's end of each forward pass (its last node's), warm-up first: per-iteration
    # times, e.g. in the phases of a link whose rate changes (cluster/tune.sh --varying).
    "iter_ends": [max(e) for e in zip(*(x["fp_end"] for x in nodes))]
    if ok and all("fp_end" in x for x in nodes) else None,
    # The measured window, to line up samples taken beside the run (e.g. each node's egress
    # byte count).
    "window": [first_start, last_end] if ok else None,
    "wall_s": round(t1 - t0, 3),
    "out_segs": out_segs, "retrans_segs": retrans,
    "retrans_pct": round(100.0 * retrans / out_segs, 4) if out_segs else 0,
    "tx_bytes": tx,
    # Retransmission timeouts (TcpExt TCPTimeouts, every node): with the minimum RTO scaled
    # with time, one costs more than an iteration.
    "timeouts": timeouts,
    # Retransmissions not sent because the original still waited in the sender's own qdisc
    # (TCPSpuriousRtxHostQueues): a timer that fired on local queueing, not a loss.
    "rtx_still_queued": rtx_host_queued,
    "switch_drops": switch_drops,
    "switch_drops_by_port": switch_drops_by_port,
    # Packets that arrived with CE (IpExt InCEPkts, every node): marks of ECN ports
    # (CL_PORT_ECN=1), a GSO packet's segments counted one by one.
    "ce_received": ce_received,
    "fabric": fabric,
    "link_util": round(tx * 8 / (n * rate * 1e6 * (t1 - t0)), 4),
    "host_cpu_busy": round((busy1 - busy0) / (tot1 - tot0), 3) if tot1 > tot0 else None,
    # Share of the VM's CPU time the hypervisor took: above a few % the timing is suspect.
    "host_steal": round(stolen / (tot1 - tot0 + stolen), 3) if tot1 - tot0 + stolen > 0 else None,
    "ps_cpu_s": round(sum(x.get("cpu_s", 0) for x in nodes), 2),
    "tagged": all(x.get("tagged", False) for x in nodes),
    "tags_fastpath": sum(x.get("tags_fastpath", 0) for x in nodes),
    "tags_service": sum(x.get("tags_service", 0) for x in nodes),
    "tag_errors": sum(x.get("tag_errors", 0) for x in nodes),
    "split_sockets": sum(x.get("split_sockets", 0) for x in nodes),
    "split_queues": sum(x.get("split_queues", 0) for x in nodes),
    "conns": nodes[0].get("conns"), "rcvbuf": nodes[0].get("rcvbuf"),
    "pulls_below": nodes[0].get("pulls_below"),
    # the largest window any node's peers advertised at the end (what --rcvbuf gave on
    # the wire)
    "peer_window": max((x.get("peer_window", 0) for x in nodes), default=0),
    "part": nodes[0].get("part"), "credit": nodes[0].get("credit"),
    "split_all": nodes[0].get("split_all"), "shrink": nodes[0].get("shrink"),
    "time_scale": nodes[0].get("time_scale"),
}
if errors:
    res["errors"] = errors
print(json.dumps(res))
