#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Tables of cluster/multijob.sh's results (results.jsonl): per pair of jobs and case, each
setting's medians over its repetitions.

Per job, measured only over the overlap of the two jobs' runs (from the later job's end of
its warm-up to the earlier job's last forward pass; cluster-wide forward-pass ends, the
last node's, on one clock):
  iter s       mean time of the job's whole iterations inside the overlap
  slowdown     iter s / its best time alone (the smaller median of alone fifo and mercury)
  vs fair      iter s / its fair-share time (mercury-ps ideal at half the link rate: each
               job with half of every link; the model knows node egress only, so a bound)
  share        its part of the bytes both jobs sent during the overlap (bytes per iteration,
               from every node's bytes_sent over the run, times the iterations it made in
               the overlap, fractions included): an approximation of its share of the
               contended link time
  share/entitled  share / (weight / sum of weights); equal weights in every setting but
               the mercury-2to1 ones (first job 2, second 1: job policy share with equal
               windows, -win with windows 2:1, -prio the priority rule); runs with the
               compute scaled down (multijob.sh --compute) say so above the table
Per setting: total iterations/s (both jobs, over the overlap), the sum of each job's speed
against alone (normalised throughput, 2 = no interference), Jain's index over each job's
speed against alone divided by its entitled share (1 = shares exactly as weighted), the
retransmitted segments and timeouts (the whole cluster, the whole run), and with a bulk
transfer its completion time and goodput (against alone and against fifo).

Usage: multijob_report.py results.jsonl
"""
import json
import statistics
import sys
from collections import defaultdict

def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def fmt(x, f="%.3f"):
    return "-" if x is None else f % x


def progress(ends, t):
    """Iterations completed by time t, fractions included (linear between forward-pass
    ends); ends[0] is the end of the first forward pass."""
    if t <= ends[0]:
        return 0.0
    for k in range(1, len(ends)):
        if t <= ends[k]:
            return k - 1 + (t - ends[k - 1]) / (ends[k] - ends[k - 1])
    return float(len(ends) - 1)


def overlap(jobs):
    """Per job: iteration time inside the overlap, and iterations made in it (fractional)."""
    w0 = max(j["iter_ends"][1] for j in jobs)  # every job past its warm-up iteration
    w1 = min(j["iter_ends"][-1] for j in jobs)
    out = []
    for j in jobs:
        e = j["iter_ends"]
        inside = [k for k in range(2, len(e)) if e[k - 1] >= w0 and e[k] <= w1]
        t = (e[inside[-1]] - e[inside[0] - 1]) / len(inside) if inside else None
        out.append({"iter_s": t, "n": len(inside),
                    "progress": progress(e, w1) - progress(e, w0)})
    return w0, w1, out


def main():
    rows = [json.loads(x) for x in open(sys.argv[1]) if x.strip()]
    alone = defaultdict(list)   # (pair, model, setting) -> iter_s
    ideal = {}                  # (pair, model, full|half) -> iter_s
    runs = defaultdict(list)    # (pair, case, setting, rep) -> lines
    fabrics = defaultdict(dict)  # pair -> the fabrics its runs name, in order
    computes = defaultdict(dict)  # pair -> the compute factors its runs name (--compute)
    for r in rows:
        if r.get("fabric") and r.get("pair"):
            fabrics[r["pair"]][r["fabric"]] = True
        if r.get("pair") and r.get("compute", 1) != 1:
            computes[r["pair"]][r["compute"]] = True
        if str(r.get("setting", "")).startswith("ideal-"):
            ideal[(r["pair"], r["model"], r["setting"][6:])] = r["iter_s"]
        elif r.get("alone") and r.get("mode") != "bulk":
            if r.get("ok"):
                alone[(r["pair"], r["model"], r["setting"])].append(r["iter_s"])
        else:
            runs[(r["pair"], r["case"], r["setting"], r["rep"])].append(r)
    best = {}
    for (pair, model, _), ts in alone.items():
        m = med(ts)
        best[(pair, model)] = min(best.get((pair, model), m), m)

    cells = defaultdict(list)  # (pair, case, setting) -> per-run summaries
    for (pair, case, setting, rep), lines in runs.items():
        jobs = sorted((x for x in lines if x.get("mode") != "bulk"), key=lambda x: x["job_index"])
        bulk = next((x for x in lines if x.get("mode") == "bulk"), None)
        s = {"bulk_s": bulk.get("completion_s") if bulk and bulk.get("ok") else None,
             "bulk_mbit": bulk.get("goodput_mbit") if bulk and bulk.get("ok") else None}
        if len(jobs) == 2 and all(j.get("ok") and j.get("iter_ends") for j in jobs):
            _, _, ov = overlap(jobs)
            weights = [j.get("weight") or 1 for j in jobs] if setting.startswith("mercury-2to1") else [1, 1]
            per_iter = [j["bytes_sent"] / max(1, len(j["iter_ends"]) - 1) for j in jobs]
            sent = [b * o["progress"] for b, o in zip(per_iter, ov)]
            speeds, xs = [], []
            for k, (j, o) in enumerate(zip(jobs, ov)):
                a = best.get((pair, j["model"]))
                half = ideal.get((pair, j["model"], "half"))
                ent = weights[k] / sum(weights)
                share = sent[k] / sum(sent) if sum(sent) else None
                sp = a / o["iter_s"] if a and o["iter_s"] else None
                speeds.append(sp)
                xs.append(sp / ent if sp else None)
                s["j%d" % k] = {"model": j["model"], "iter_s": o["iter_s"], "n": o["n"],
                                "slowdown": o["iter_s"] / a if a and o["iter_s"] else None,
                                "vs_fair": o["iter_s"] / half if half and o["iter_s"] else None,
                                "share": share,
                                "share_ent": share / ent if share is not None else None,
                                "weight": weights[k]}
            s["iters_per_s"] = sum(1 / o["iter_s"] for o in ov) if all(o["iter_s"] for o in ov) else None
            s["norm_tput"] = sum(speeds) if all(speeds) else None
            s["jain"] = (sum(xs) ** 2 / (len(xs) * sum(x * x for x in xs))) if all(xs) else None
            s["retrans_pct"] = jobs[0].get("retrans_pct")
            s["timeouts"] = jobs[0].get("timeouts")
            s["cpu"] = jobs[0].get("host_cpu_busy")
        elif jobs:
            s["failed"] = True
        cells[(pair, case, setting)].append(s)

    for pair in dict.fromkeys(k[0] for k in cells):
        a, b = pair.split("+")
        print("## %s + %s\n" % (a, b))
        print("Alone (median s an iteration; best of fifo and mercury): %s %s, %s %s. Ideal at "
              "the full rate: %s %s, %s %s; fair share (ideal at half the rate): %s %s, %s %s.\n"
              % (a, fmt(best.get((pair, a))), b, fmt(best.get((pair, b))),
                 a, fmt(ideal.get((pair, a, "full"))), b, fmt(ideal.get((pair, b, "full"))),
                 a, fmt(ideal.get((pair, a, "half"))), b, fmt(ideal.get((pair, b, "half")))))
        for f in fabrics.get(pair, {}):
            print("Fabric: %s.\n" % f)
        for c in computes.get(pair, {}):
            print("Compute: the models' times x %g (--compute): both jobs bound by "
                  "communication, so the shares are those while both are backlogged.\n" % c)
        for case in ("plain", "bulk"):
            # in the order they ran (multijob.sh's), the bulk flow's lone run left out
            keys = [k for k in cells if k[:2] == (pair, case) and k[2] != "bulk-alone"]
            if not keys:
                continue
            if case == "bulk":
                alone_bulk = med(x["bulk_s"] for x in cells.get((pair, "bulk", "bulk-alone"), []))
                print("### With a bulk transfer beside them (alone it takes %s s)\n" % fmt(alone_bulk))
            print("| setting | runs | %s s | slowdown | vs fair | share (/entitled) | %s s | slowdown "
                  "| vs fair | share (/entitled) | iters/s | norm. tput | Jain | retrans %% | "
                  "timeouts | CPU busy |%s" % (a, b, " bulk s | bulk Mbit/s | bulk vs fifo |"
                                               if case == "bulk" else ""))
            print("|---" * (16 + (3 if case == "bulk" else 0)) + "|")
            fifo_bulk = med(x["bulk_s"] for x in cells.get((pair, case, "fifo"), []))
            for key in keys:
                xs = [x for x in cells[key] if not x.get("failed")]
                bad = len(cells[key]) - len(xs)
                cols = [key[2], "%d%s" % (len(xs), " (+%d failed)" % bad if bad else "")]
                for k in ("j0", "j1"):
                    js = [x[k] for x in xs if k in x]
                    share, ent = med(j["share"] for j in js), med(j["share_ent"] for j in js)
                    cols += [fmt(med(j["iter_s"] for j in js)),
                             fmt(med(j["slowdown"] for j in js), "%.2fx"),
                             fmt(med(j["vs_fair"] for j in js), "%.2fx"),
                             "%s (%s)" % (fmt(share, "%.2f"), fmt(ent, "%.2f"))]
                cols += [fmt(med(x.get("iters_per_s") for x in xs), "%.2f"),
                         fmt(med(x.get("norm_tput") for x in xs), "%.2f"),
                         fmt(med(x.get("jain") for x in xs), "%.3f"),
                         fmt(med(x.get("retrans_pct") for x in xs), "%.2f"),
                         fmt(med(x.get("timeouts") for x in xs), "%g"),
                         fmt(med(x.get("cpu") for x in xs), "%.2f")]
                if case == "bulk":
                    bs = med(x["bulk_s"] for x in cells[key])
                    cols += [fmt(bs, "%.2f"), fmt(med(x["bulk_mbit"] for x in cells[key]), "%.0f"),
                             fmt(bs / fifo_bulk if bs and fifo_bulk else None, "%.2fx")]
                print("| " + " | ".join(cols) + " |")
            print()


if __name__ == "__main__":
    main()
