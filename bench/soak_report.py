# SPDX-License-Identifier: BSD-2-Clause
"""soak_report.py SAMPLES.jsonl [--errors ERRORS.json] [--warmup S] [thresholds]: the verdict
of a soak (bench/soak.sh). Prints one JSON summary on stdout; exit 0 when every metric is
flat within its threshold and no error was counted, 1 otherwise, 2 on bad input.

Each sample line: {"t": seconds since the start, "mode": "fastpath"|"service", "metrics":
{"NAME": number or null, ...}}. Samples before --warmup seconds are left out. For each metric
a least-squares line is fitted to the rest with one intercept per mode (the fast path and the
service may hold different steady levels, e.g. a process that holds one more socket while
the service is used): y = a[mode] + b t. A process restarted during the soak (samples with
"pids": {"n1.mercuryd_serve": PID, ...}) gets one intercept per mode and life: a new life
starts from its own level, and only growth within each life is a leak. Its growth is b x (the
measured span), what the metric gained from the end of the warm-up to the last sample by the
fit. A metric grows when that exceeds its threshold, by the name's last part:
  rss_kb               max(--rss-kb, --rss-rel x the metric's median)
  fds, threads         --count (a whole descriptor or thread more, and some)
  anything else        max(--entries, --entries-rel x median): pinned-map entries, tagged
                       sockets, tag ranges, TCP sockets
Samples with "tx_bytes" ({"n0": bytes sent, ...}, and "job") give each node's rate between
consecutive samples of one job: an interval below --stall-share of the node's median rate
counts as an error (training must go on while a daemon is away or an interface re-attached).
Metrics named canary.* are a deliberate leak (soak.sh --canary): they must be seen to grow,
and do not count against the verdict; one that is not seen fails it (the check is blind).
"""
import argparse
import json
import statistics
import sys


def fit_growth(points):
    """points: [(t, y, group)]. The slope b of y = a[group] + b t (least squares, one
    intercept per group: within-group deviations from each group's means), or None when t
    does not vary inside any group."""
    groups = {}
    for t, y, m in points:
        groups.setdefault(m, []).append((t, y))
    sxy = sxx = 0.0
    for g in groups.values():
        if len(g) < 2:
            continue
        mt = sum(t for t, _ in g) / len(g)
        my = sum(y for _, y in g) / len(g)
        sxy += sum((t - mt) * (y - my) for t, y in g)
        sxx += sum((t - mt) ** 2 for t, _ in g)
    return sxy / sxx if sxx > 0 else None


def threshold(name, median, a):
    kind = name.rsplit(".", 1)[-1]
    if kind == "rss_kb":
        return max(a.rss_kb, a.rss_rel * abs(median))
    if kind in ("fds", "threads"):
        return a.count
    return max(a.entries, a.entries_rel * abs(median))


def progress(samples, share):
    """Per node: median, slowest rate between consecutive samples of a job (bytes/s) and the
    intervals slower than share x the median."""
    rates = {}
    for p, q in zip(samples, samples[1:]):
        if p.get("job") != q.get("job") or q["t"] <= p["t"]:
            continue
        for n, b in (q.get("tx_bytes") or {}).items():
            if n in (p.get("tx_bytes") or {}):
                rates.setdefault(n, []).append(((b - p["tx_bytes"][n]) / (q["t"] - p["t"]), q["t"]))
    out = {}
    for n, r in sorted(rates.items()):
        med = statistics.median(x for x, _ in r)
        slow = [t for x, t in r if x < share * med]
        out[n] = {"median_Bps": round(med), "slowest_Bps": round(min(x for x, _ in r)),
                  "intervals": len(r), "stalled_at": slow}
    return out


def analyse(samples, errors, a):
    kept = [s for s in samples if s["t"] >= a.warmup]
    names = sorted({n for s in kept for n in s.get("metrics", {})})
    metrics = {}
    for n in names:
        owner = n.rsplit(".", 1)[0]
        pts = [(s["t"], s["metrics"][n], (s.get("mode", ""), (s.get("pids") or {}).get(owner)))
               for s in kept if s.get("metrics", {}).get(n) is not None]
        if len(pts) < 3:
            metrics[n] = {"samples": len(pts), "verdict": "too few samples"}
            continue
        b = fit_growth(pts)
        span = pts[-1][0] - pts[0][0]
        med = statistics.median(y for _, y, _ in pts)
        lim = threshold(n, med, a)
        growth = None if b is None else b * span
        grows = growth is not None and growth > lim
        metrics[n] = {"samples": len(pts), "lives": len({g[1] for _, _, g in pts}),
                      "first": pts[0][1], "last": pts[-1][1],
                      "min": min(y for _, y, _ in pts), "max": max(y for _, y, _ in pts),
                      "median": med, "slope_per_min": None if b is None else round(b * 60, 4),
                      "growth": None if growth is None else round(growth, 3),
                      "threshold": round(lim, 3),
                      "verdict": "unknown" if b is None else ("grows" if grows else "flat")}
    real = {n: m for n, m in metrics.items() if not n.startswith("canary.")}
    canary = {n: m for n, m in metrics.items() if n.startswith("canary.")}
    growing = sorted(n for n, m in real.items() if m["verdict"] == "grows")
    unknown = sorted(n for n, m in real.items() if m["verdict"] not in ("grows", "flat"))
    blind = sorted(n for n, m in canary.items() if m["verdict"] != "grows")
    prog = progress(samples, a.stall_share)
    stalls = sum(len(v["stalled_at"]) for v in prog.values())
    if stalls:
        errors = dict(errors, stalled_intervals=stalls)
    n_errors = sum(errors.values())
    ok = not growing and not unknown and not blind and n_errors == 0 and len(kept) >= 3
    return {"verdict": "pass" if ok else "fail", "samples": len(samples),
            "samples_after_warmup": len(kept), "warmup_s": a.warmup,
            "span_s": round(kept[-1]["t"] - kept[0]["t"], 1) if kept else 0,
            "growing": growing, "unknown": unknown, "canary_missed": blind,
            "errors": n_errors, "error_counts": errors,
            "thresholds": {"rss_kb": a.rss_kb, "rss_rel": a.rss_rel, "count": a.count,
                           "entries": a.entries, "entries_rel": a.entries_rel,
                           "stall_share": a.stall_share},
            "progress": prog, "metrics": metrics}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("samples")
    p.add_argument("--errors", help="JSON object: error name -> count")
    p.add_argument("--warmup", type=float, default=0.0, help="seconds left out (0)")
    p.add_argument("--rss-kb", type=float, default=1024.0, help="RSS growth allowed, KiB (1024)")
    p.add_argument("--rss-rel", type=float, default=0.02,
                   help="... or this share of the median, if more (0.02)")
    p.add_argument("--count", type=float, default=1.5,
                   help="fd and thread growth allowed (1.5)")
    p.add_argument("--entries", type=float, default=2.0,
                   help="map entries, sockets, ranges: growth allowed (2)")
    p.add_argument("--entries-rel", type=float, default=0.1,
                   help="... or this share of the median, if more (0.1)")
    p.add_argument("--stall-share", type=float, default=0.1,
                   help="an interval below this share of the median rate is a stall (0.1)")
    a = p.parse_args()
    try:
        with open(a.samples, encoding="utf-8") as f:
            samples = [json.loads(line) for line in f if line.strip()]
        errors = {}
        if a.errors:
            with open(a.errors, encoding="utf-8") as f:
                errors = json.load(f)
    except (OSError, ValueError) as e:
        print(f"soak_report: {e}", file=sys.stderr)
        return 2
    out = analyse(samples, errors, a)
    print(json.dumps(out, indent=1, sort_keys=True))
    return 0 if out["verdict"] == "pass" else 1


if __name__ == "__main__":
    sys.exit(main())
