#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Example: send tensors of several layers, one TCP connection per layer, tagged with Mercury.

Usage: tag_tensor.py HOST PORT [n_layers] [tensor_bytes]   (PYTHONPATH=python)
"""
import socket
import sys
import time

import mercury

JOB = 2


def main():
    host, port = sys.argv[1], int(sys.argv[2])
    layers = int(sys.argv[3]) if len(sys.argv) > 3 else 4
    size = int(sys.argv[4]) if len(sys.argv) > 4 else 1 << 20
    data = bytes(size)
    with mercury.Client() as m:
        m.job_declare(JOB, layers)
        m.iteration_begin(JOB, 0)
        socks = [socket.create_connection((host, port)) for _ in range(layers)]
        for s in socks:
            m.register_socket(s)
        for layer in range(layers, 0, -1):  # backward pass: last layer first
            m.send_tensor(socks[layer - 1], data, JOB, layer, mercury.PUSH, 0)
        time.sleep(1)
        for layer, s in enumerate(socks, 1):
            bands = m.socket_stats(s)
            print("layer %d: %s" % (layer, " ".join("band%d=%d" % kv for kv in sorted(bands.items()))))
            s.close()
        m.iteration_end(JOB, 0)


if __name__ == "__main__":
    main()
