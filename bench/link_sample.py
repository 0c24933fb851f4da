# SPDX-License-Identifier: BSD-2-Clause
"""Samples how many bytes an interface of each given network namespace has sent, every few
milliseconds, for a link timeline beside a run (bench/torch_trace.sh):

    link_sample.py --pid P [--pid P ...] [--iface e0[,u0,...]] [--interval 0.005] --stop FILE

A namespace is named by a process living in it (its /proc/<pid>/net/dev). Prints a header,
then one line a sample: CLOCK_MONOTONIC seconds and each namespace's count of each interface
(namespace by namespace, interfaces in the order given), until FILE exists, a process is
gone, or --max-seconds pass.
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from link_bulk import tx_bytes, tx_counts  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pid", type=int, action="append", required=True)
    ap.add_argument("--iface", default="e0", help="interface, or several separated by commas")
    ap.add_argument("--interval", type=float, default=0.005)
    ap.add_argument("--stop", required=True, help="sampling ends when this file exists")
    ap.add_argument("--max-seconds", type=float, default=900)
    a = ap.parse_args()
    if not 0.001 <= a.interval <= 1:
        ap.error("--interval must be 0.001-1 s")
    try:
        files = [open("/proc/%d/net/dev" % p) for p in a.pid]
    except OSError as e:
        sys.exit("link_sample: %s" % e)
    ifaces = a.iface.split(",")
    for i in ifaces:
        if any(tx_bytes(i, f) is None for f in files):
            sys.exit("link_sample: no %s in the namespace of every --pid" % i)
    print("# t (CLOCK_MONOTONIC s)\t" + "\t".join("tx_bytes(%s of pid %d)" % (i, p)
                                                 for p in a.pid for i in ifaces), flush=True)
    end = time.monotonic() + a.max_seconds
    n = 0
    while time.monotonic() < end:
        counts = []
        for f in files:
            try:
                f.seek(0)
                sent = tx_counts(f.read())
            except OSError:
                sent = {}
            counts += [sent.get(i) for i in ifaces]
        if None in counts:
            break  # a namespace's process is gone
        print("%.6f\t%s" % (time.monotonic(), "\t".join(map(str, counts))))
        n += 1
        if n % 20 == 0 and os.path.exists(a.stop):
            break
        time.sleep(a.interval)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
