# SPDX-License-Identifier: BSD-2-Clause
"""What a bulk TCP transfer reaches on a node's shaped link: the reference for the link use of
a real-training run (bench/torch_bench.sh). Run inside the nodes' network namespaces:

    link_bulk.py serve --bind IP [--port P] [--conns N] [--seconds S]
    link_bulk.py send --to IP [--port P] [--conns N] [--seconds S] [--iface e0]
    link_bulk.py send --to IP --bytes B [--delay D] [--port P] [--conns N]

`send` keeps N connections busy for 1 + S seconds and prints one JSON line: the bytes the
interface sent in the last S seconds, in Mbit/s, counted as bench/torch_train.py counts a
run's (/proc/self/net/dev), so the two compare directly. `serve` drains them and exits when
they close (or after S + 30 seconds).

`send --bytes B` is a fixed-size transfer instead (a checkpoint write, a data set shard): the
connections are opened, D seconds pass, then B bytes in all go out over the N connections;
it is complete when the receiver has read every byte and closed (every connection shut
down for writing, then read to its end). One JSON line: bytes, t_start and t_end
(CLOCK_MONOTONIC, the clock of mercury-ps's fp_end, the same in every namespace),
completion_s and goodput_mbit.
"""
import argparse
import json
import socket
import sys
import threading
import time

SETTLE_S = 1.0  # slow start and the qdisc filling up: not measured


def tx_bytes(iface, netdev="/proc/self/net/dev"):
    """Bytes iface has sent (netdev: /proc/<pid>/net/dev of a process in the namespace, or an
    open file of it), or None. Counted per packet handed to the device: a TCP segmentation
    burst counts its headers once, so a link shaped to R carries less than R of these; what a
    bulk transfer reaches is the reference a run's count compares with."""
    if not iface:
        return None
    try:
        if isinstance(netdev, str):
            with open(netdev) as f:
                text = f.read()
        else:
            netdev.seek(0)
            text = netdev.read()
    except OSError:
        return None
    return tx_counts(text).get(iface)


def tx_counts(text):
    """{interface: bytes sent} of a /proc/net/dev text."""
    out = {}
    for line in text.splitlines()[2:]:
        name, _, counters = line.partition(":")
        if counters:
            out[name.strip()] = int(counters.split()[8])
    return out


def serve(a):
    srv = socket.create_server((a.bind, a.port), backlog=a.conns)
    srv.settimeout(a.seconds + 30)
    deadline = time.monotonic() + a.seconds + 30

    def drain(c):
        c.settimeout(max(1.0, deadline - time.monotonic()))
        try:
            while c.recv(1 << 20):
                pass
        except OSError:
            pass
        c.close()

    workers = []
    try:
        for _ in range(a.conns):
            c, _ = srv.accept()
            t = threading.Thread(target=drain, args=(c,), daemon=True)
            t.start()
            workers.append(t)
    except socket.timeout:
        sys.exit("link_bulk: %d of %d connections came" % (len(workers), a.conns))
    for t in workers:
        t.join(max(0.0, deadline - time.monotonic()))


def send(a):
    if tx_bytes(a.iface) is None:
        sys.exit("link_bulk: no interface %r in this network namespace" % a.iface)
    conns = []
    for _ in range(50):  # the server may still be starting: up to 5 s
        try:
            conns = [socket.create_connection((a.to, a.port), timeout=5) for _ in range(a.conns)]
            break
        except ConnectionRefusedError:
            for c in conns:
                c.close()
            conns = []
            time.sleep(0.1)
    if not conns:
        sys.exit("link_bulk: nobody listens on %s:%d" % (a.to, a.port))
    chunk = b"\0" * (1 << 20)
    if a.bytes:
        return send_bytes(a, conns, chunk)
    stop = time.monotonic() + SETTLE_S + a.seconds

    def pump(c):
        try:
            while time.monotonic() < stop:
                c.sendall(chunk)
        except OSError:
            pass

    threads = [threading.Thread(target=pump, args=(c,)) for c in conns]
    for t in threads:
        t.start()
    time.sleep(SETTLE_S)
    b0, t0 = tx_bytes(a.iface), time.monotonic()
    time.sleep(a.seconds)
    b1, t1 = tx_bytes(a.iface), time.monotonic()
    for t in threads:
        t.join()
    for c in conns:
        c.close()
    print(json.dumps({"egress_mbit": (b1 - b0) * 8 / (t1 - t0) / 1e6, "conns": a.conns,
                      "seconds": a.seconds, "iface": a.iface}))


def send_bytes(a, conns, chunk):
    time.sleep(a.delay)
    share = [a.bytes // len(conns) + (k < a.bytes % len(conns)) for k in range(len(conns))]
    errors = []

    def pump(c, n):
        try:
            view = memoryview(chunk)
            while n > 0:
                n -= c.send(view[:min(n, len(chunk))])
            c.shutdown(socket.SHUT_WR)
            c.settimeout(None)
            while c.recv(1 << 16):  # the receiver closes once it has read everything
                pass
        except OSError as e:
            errors.append(str(e))

    threads = [threading.Thread(target=pump, args=(c, n)) for c, n in zip(conns, share)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    t1 = time.monotonic()
    for c in conns:
        c.close()
    if errors:
        sys.exit("link_bulk: transfer failed: %s" % errors[0])
    print(json.dumps({"bytes": a.bytes, "conns": a.conns, "t_start": t0, "t_end": t1,
                      "completion_s": t1 - t0, "goodput_mbit": a.bytes * 8 / (t1 - t0) / 1e6}))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("role", choices=["serve", "send"])
    ap.add_argument("--bind", default="")
    ap.add_argument("--to", default="")
    ap.add_argument("--port", type=int, default=29611)
    ap.add_argument("--conns", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--iface", default="e0")
    ap.add_argument("--bytes", type=int, default=0, help="send: a fixed-size transfer")
    ap.add_argument("--delay", type=float, default=0.0,
                    help="send --bytes: seconds between connecting and sending")
    a = ap.parse_args()
    if not 1 <= a.conns <= 64 or not 0.5 <= a.seconds <= (600 if a.role == "serve" else 60):
        ap.error("--conns must be 1-64 and --seconds 0.5-60 (serve: 600)")
    if a.bytes < 0 or not 0 <= a.delay <= 600:
        ap.error("--bytes must be >= 0 and --delay 0-600")
    if a.role == "serve":
        if not a.bind:
            ap.error("serve needs --bind")
        serve(a)
    else:
        if not a.to:
            ap.error("send needs --to")
        send(a)


if __name__ == "__main__":
    main()
