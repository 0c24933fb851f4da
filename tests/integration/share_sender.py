#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""One training job's bulk traffic for the job-policy tests: declares JOB with WEIGHT through
mercuryd, opens one TCP connection to HOST:PORT per layer given, tags everything each will
write as that layer (push, no iteration open: the current one) and writes continuously from
START (seconds since the epoch: the jobs of a test start together, whatever their start-up
took) for SECS seconds. Every 0.5 s it prints one JSON line: {"t": seconds since START, "acked":
[bytes acked so far, one a connection]} (TCP_INFO tcpi_bytes_acked, so bytes still queued
below TCP do not count).

Usage: share_sender.py HOST PORT JOB WEIGHT START SECS LAYER [LAYER...]   (PYTHONPATH=python,
MERCURY_SOCKET=the service's socket)
"""
import json
import socket
import struct
import sys
import threading
import time

import mercury

N_LAYERS = 6
TAG_LEN = 1 << 40  # more than any run writes
TCPI_BYTES_ACKED = 120  # offset of tcpi_bytes_acked in struct tcp_info


def acked(s):
    info = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256)
    return struct.unpack_from("Q", info, TCPI_BYTES_ACKED)[0]


def writer(s, stop):
    buf = bytes(1 << 16)
    try:
        while not stop.is_set():
            s.sendall(buf)
    except OSError:
        pass


def main():
    host, port, job, weight = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    start, secs = float(sys.argv[5]), float(sys.argv[6])
    layers = [int(x) for x in sys.argv[7:]]
    m = mercury.Client()
    m.job_declare(job, N_LAYERS, weight)
    socks = []
    for layer in layers:
        s = socket.create_connection((host, port))
        m.tag_next(s, job, layer, mercury.PUSH, 0, TAG_LEN)
        socks.append(s)
    stop = threading.Event()
    threads = [threading.Thread(target=writer, args=(s, stop), daemon=True) for s in socks]
    time.sleep(max(0.0, start - time.time()))
    for t in threads:
        t.start()
    while time.time() - start < secs:
        time.sleep(0.5)
        print(json.dumps({"t": round(time.time() - start, 3),
                          "acked": [acked(s) for s in socks]}), flush=True)
    stop.set()
    for s in socks:
        s.shutdown(socket.SHUT_RDWR)  # wakes a writer blocked in sendall
    for t in threads:
        t.join()
    for s in socks:
        s.close()
    m.close()


if __name__ == "__main__":
    main()
