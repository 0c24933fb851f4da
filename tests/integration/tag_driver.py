#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""A libmercury client driven line by line on stdin, for tests that do things to mercuryd
between its calls. Each command prints one line: "ok ..." or "err <errno> <message>".

  connect            a new connection to HOST:PORT; the following commands use it
  tag LAYER ITER     send 1 MB tagged as (LAYER, push, ITER)
  tagnext LAYER ITER tag the next 1 MB as (LAYER, push, ITER), send nothing
  send               send 1 MB (no tag call)
  begin ITER / end ITER
  fast               "ok 1" while tags go through the kernel's fast path, "ok 0" through mercuryd
  bands              bytes per band of the last tagged socket (after a short wait)
  quit

Usage: tag_driver.py HOST PORT JOB N_LAYERS   (PYTHONPATH=python)
"""
import socket
import sys
import time

import mercury

SIZE = 1 << 20


def main():
    host, port, job, layers = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    socks = []
    m = mercury.Client()
    m.job_declare(job, layers)
    print("ok ready", flush=True)
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        try:
            if words[0] == "connect":
                socks.append(socket.create_connection((host, port)))
                print("ok", flush=True)
            elif words[0] == "tag":
                m.send_tensor(socks[-1], bytes(SIZE), job, int(words[1]), mercury.PUSH, int(words[2]))
                print("ok", flush=True)
            elif words[0] == "tagnext":
                m.tag_next(socks[-1], job, int(words[1]), mercury.PUSH, int(words[2]), SIZE)
                print("ok", flush=True)
            elif words[0] == "send":
                socks[-1].sendall(bytes(SIZE))
                print("ok", flush=True)
            elif words[0] in ("begin", "end"):
                call = m.iteration_begin if words[0] == "begin" else m.iteration_end
                call(job, int(words[1]))
                print("ok", flush=True)
            elif words[0] == "bands":
                time.sleep(0.5)
                bands = m.socket_stats(socks[-1])
                print("ok " + " ".join("band%d=%d" % kv for kv in sorted(bands.items())), flush=True)
            elif words[0] == "fast":
                print("ok %d" % m.fastpath_active(), flush=True)
            elif words[0] == "counts":
                print("ok %d %d" % m.tag_counts(), flush=True)
            elif words[0] == "quit":
                break
            else:
                print("err 22 unknown command", flush=True)
        except mercury.MercuryError as e:
            print("err %d %s" % (e.errno, e), flush=True)
        except OSError as e:
            print("err %d %s" % (e.errno or 0, e), flush=True)
    for s in socks:
        s.close()
    m.close()


if __name__ == "__main__":
    main()
