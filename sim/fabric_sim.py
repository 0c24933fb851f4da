#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
"""Flow-level (fluid) model of one mercury-ps training iteration on a switched fabric.

Every node is a worker and a server (the co-located layout). Each node has an egress link
(its NIC) and the switch port towards it (its ingress); both run at the goodput of the link
rate. Traffic is fluid: per group of identical flows, rates change only at events (a layer
becomes ready, a flow group drains or finishes, a compute step ends). sim/README.md states
the model, its assumptions and what it leaves out.

Modes (mercury-ps's): fifo, partition (ByteScheduler), mercury, ideal (ps/ideal.c's bound,
computed the same way). Fabrics: egress (infinite downlinks: the emulation before issue 31),
fifo (switch ports shared fairly among their flows), prio (switch ports strict priority by
layer group: DSCP).
"""
import argparse
import heapq
import json
import os
import sys

# ps/main.c PS_WIRE_EFFICIENCY: payload bytes per byte on the wire (MTU 1500 with timestamps,
# one 66-byte pure ACK per 64 KiB the node receives).
MSS, FRAME, ACK, PER_ACK = 1448.0, 1514.0, 66.0, 65536.0
WIRE_EFFICIENCY = MSS / (FRAME + MSS * ACK / PER_ACK)
BOUND = 1000000
IDEAL_ROUNDS = 8
SETTLE = 30
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def shrink_of(model):
    """cluster/lib.sh shrink_of: the per-model K of the emulated cluster."""
    return {"vgg16": 8, "bert_base": 8, "alexnet": 4, "tiny": 1}.get(model, 2)


def parse_rate(s):
    """common/rate.c parse_rate: bytes per second, truncated to an integer."""
    units = [("tbps", 8e12), ("gbps", 8e9), ("mbps", 8e6), ("kbps", 8e3), ("bps", 8),
             ("tbit", 1e12), ("gbit", 1e9), ("mbit", 1e6), ("kbit", 1e3), ("bit", 1), ("", 1)]
    low = s.strip().lower()
    for suf, bits in units:
        if low.endswith(suf):
            num = low[: len(low) - len(suf)] if suf else low
            try:
                v = float(num)
            except ValueError:
                break
            if v <= 0:
                break
            return int(v * bits / 8)
    raise ValueError(f"bad rate '{s}': use e.g. 400mbit, 10gbit")


def load_profile(path):
    """ps/profile.c: 'model NAME' and 'layer <name> <params> <fwd_s> <bwd_s>' lines."""
    model, layers = os.path.splitext(os.path.basename(path))[0], []
    with open(path) as f:
        for no, line in enumerate(f, 1):
            w = line.split()
            if not w or line.startswith("#"):
                continue
            if w[0] == "model" and len(w) > 1:
                model = w[1]
            elif w[0] == "layer" and len(w) >= 5 and int(w[2]) > 0:
                layers.append((w[1], int(w[2]), float(w[3]), float(w[4])))
            else:
                raise ValueError(f"{path}:{no}: expected 'layer <name> <params> <fwd_s> <bwd_s>'")
    if not layers:
        raise ValueError(f"profile {path} has no layer lines")
    return model, layers


def place(orig, length, nservers, bound=BOUND, split_all=False, balanced=False, part=0):
    """ps/placement.c ps_place: a list of slices (layer, part, server, len)."""
    slices, load, nparts = [], [0] * nservers if balanced else None, 0

    def tensor(layer, pid, key, o, ln):
        split = split_all or o > bound
        pieces = nservers if split else 1
        whole_on = 0
        if not split:
            whole_on = load.index(min(load)) if load is not None else (key * 9973) % nservers
        if split and ln < nservers:
            pieces = ln
        for s in range(pieces):
            each = ln // pieces + (1 if s < ln % pieces else 0)
            srv = s if split else whole_on
            slices.append((layer, pid, srv, each))
            if load is not None:
                load[srv] += o // pieces if split else o

    for l in range(len(orig)):
        n = (length[l] + part - 1) // part if part and length[l] > part else 1
        if n == 1:
            tensor(l, nparts, l, orig[l], length[l])
            nparts += 1
        else:
            for i in range(n):
                off = i * part
                plen = min(part, length[l] - off)
                porig = int(plen * orig[l] / length[l] + 0.5)
                tensor(l, nparts, l + i, porig, plen)
                nparts += 1
    return slices


def scaled_layers(layers, shrink, time_scale):
    orig = [p for _, p, _, _ in layers]
    length = [max(1, p // shrink) for p in orig]
    fwd = [f * time_scale for _, _, f, _ in layers]
    bwd = [b * time_scale for _, _, _, b in layers]
    return orig, length, fwd, bwd


def _priority_link(ready, work):
    """ps/ideal.c priority_link: a preemptive priority fluid server, lower index first."""
    n = len(ready)
    left, done = list(work), list(ready)
    t, pending = 0.0, sum(1 for w in work if w > 0)
    while pending > 0:
        cur, nxt = -1, -1.0
        for l in range(n):
            if left[l] <= 0:
                continue
            if ready[l] <= t:
                if cur < 0:
                    cur = l
            elif nxt < 0 or ready[l] < nxt:
                nxt = ready[l]
        if cur < 0:
            t = nxt
            continue
        finish = t + left[cur]
        if nxt >= 0 and nxt < finish:
            left[cur] -= nxt - t
            t = nxt
            continue
        t = finish
        left[cur] = 0
        done[cur] = t
        pending -= 1
    return done


def ideal(layers, nodes, rate_Bps, shrink=1, time_scale=1.0, bound=BOUND, split_all=False,
          balanced=False, part=0):
    """ps/ideal.c ps_ideal_iteration with main.c run_ideal's inputs: (iter, comm, compute)."""
    orig, length, fwd, bwd = scaled_layers(layers, shrink, time_scale)
    L = len(layers)
    eg = [[0.0] * L for _ in range(nodes)]
    for layer, _, srv, ln in place(orig, length, nodes, bound, split_all, balanced, part):
        b = float(ln) * 4
        for n in range(nodes):
            eg[n][layer] += b * (nodes - 1) if n == srv else b
    rate = rate_Bps * WIRE_EFFICIENCY
    pull, ready = [0.0] * L, [0.0] * L
    fp_end = prev_end = it = start = 0.0
    for r in range(IDEAL_ROUNDS + 1):
        tau = start
        for l in range(L):
            if r > 0 and pull[l] > tau:
                tau = pull[l]
            tau += fwd[l]
        prev_end, fp_end = fp_end, tau
        if r > 0:
            it = fp_end - prev_end
        t = fp_end
        for l in range(L - 1, -1, -1):
            t += bwd[l]
            ready[l] = t
        start = t
        pull = list(ready)
        for n in range(nodes):
            done = _priority_link(ready, [w / rate for w in eg[n]])
            pull = [max(p, d) for p, d in zip(pull, done)]
    comp = 0.0
    for l in range(L):
        comp += fwd[l] + bwd[l]
    comm = max(sum(e) for e in eg) / rate
    return it, comm, comp


# ---------------------------------------------------------------------------------------
# The flow model.

ALL = -1  # a group that travels on every connection of its node (sliced items, pulls)


class Group:
    """Identical flows of one node class through one queue (a node's egress or its switch
    port). Sizes and rates are per representative node, summed over its flows."""
    __slots__ = ("q", "size", "arr", "sent", "inr", "out", "w", "level", "seq", "conn", "down",
                 "done", "kind", "cls", "item", "it", "eps", "hold", "gate", "rel", "chunk", "ups")

    def __init__(self, q, size, w, level, conn, kind, cls, item, it):
        self.q, self.size, self.w, self.level, self.conn = q, size, w, level, conn
        self.kind, self.cls, self.item, self.it = kind, cls, item, it
        self.arr = self.sent = self.inr = self.out = 0.0
        self.seq, self.down, self.done, self.hold = 0, [], False, False
        self.ups = 0  # upstream groups (down links into this one) not yet finished
        self.gate, self.rel, self.chunk = None, 0.0, 0.0
        self.eps = size * 1e-9 + 1e-6


class Queue:
    __slots__ = ("name", "disc", "rate", "t", "active", "ver", "cls", "egress", "next")

    def __init__(self, name, disc, rate, cls, egress):
        self.name, self.disc, self.rate, self.cls, self.egress = name, disc, rate, cls, egress
        self.t, self.active, self.ver, self.next = 0.0, [], 0, None


class Sim:
    def __init__(self, layers, nodes, rate_Bps, mode, fabric="fifo", shrink=1, time_scale=1.0,
                 bound=BOUND, split_all=False, balanced=False, part=1000000, credit=4000000,
                 iters=4, warmup=1, sender_groups=13, port_queues=7, hold=True, chunk=65536):
        if nodes < 2:
            raise ValueError("the flow model needs at least 2 nodes")
        self.mode, self.fabric, self.N = mode, fabric, nodes
        self.iters = iters
        self.M = warmup - 1 + iters  # index of the last forward pass (0 = the warm-up)
        self.first_fp = warmup - 1
        self.hold = hold and mode == "mercury"
        orig, length, self.fwd, self.bwd = scaled_layers(layers, shrink, time_scale)
        L = self.L = len(layers)
        self.R = rate_Bps * WIRE_EFFICIENCY
        pt = part if mode == "partition" else 0
        sl = place(orig, length, nodes, bound, split_all, balanced, pt)
        self.credit = credit
        self.chunk = chunk
        # Items: a tensor (or partition) sliced over every server, or one slice on one server.
        byp = {}
        for layer, pid, srv, ln in sl:
            byp.setdefault(pid, []).append((layer, srv, ln))
        items = []  # (layer, pid, server or ALL, bytes per slice)
        self.part_len, self.part_layer, self.part_items = {}, {}, {}
        for pid in sorted(byp):
            ss = byp[pid]
            tot = sum(x[2] for x in ss)
            self.part_len[pid], self.part_layer[pid] = tot, ss[0][0]
            ids = []
            if len(ss) == nodes and len({x[1] for x in ss}) == nodes:
                ids.append(len(items))
                items.append((ss[0][0], pid, ALL, tot * 4.0 / nodes))
            else:
                for layer, srv, ln in ss:
                    ids.append(len(items))
                    items.append((layer, pid, srv, ln * 4.0))
            self.part_items[pid] = ids
        self.items = items
        # Node classes: nodes that hold the same whole slices behave alike.
        sig = {}
        for n in range(nodes):
            sig.setdefault(tuple(i for i, it in enumerate(items) if it[2] == n), []).append(n)
        self.classes = sorted(sig.values(), key=lambda v: v[0])
        self.m = [len(c) for c in self.classes]
        K = self.K = len(self.classes)
        cls_of = {}
        for k, c in enumerate(self.classes):
            for n in c:
                cls_of[n] = k
        self.cls_of = cls_of
        self.srv_cls = [cls_of[it[2]] if it[2] != ALL else ALL for it in items]
        self.item_layer = [it[0] for it in items]
        self.layer_items = [[] for _ in range(L)]
        for i, it in enumerate(items):
            self.layer_items[it[0]].append(i)
        pdisc = {"egress": "pass", "fifo": "ps", "prio": "prio"}[fabric]
        edisc = "prio" if mode == "mercury" else "fifo"
        self.E = [Queue(f"egress{k}", edisc, self.R, k, True) for k in range(K)]
        self.P = [Queue(f"port{k}", pdisc, self.R, k, False) for k in range(K)]
        self.sgroups = sender_groups
        self.pqueues = port_queues
        self.heap, self.hseq, self.t = [], 0, 0.0
        self.dirty, self.seq = [], 0
        self.fp_end = [[None] * (self.M + 1) for _ in range(K)]
        self.events = 0
        self.unsettled = 0
        self.groups = {}
        self.pend = {}  # (cls, it, item) -> pull parts still missing
        self.layer_pend = {}  # (cls, it, layer) -> items still missing
        self.own_ready = set()  # (cls, item, it): the node's own contribution is in
        self.agg_done = set()  # (srv cls, item, it)
        self.pulls_left = {}  # (cls, it) -> pull groups at its egress not yet sent (the hold)
        self.waiting = [None] * K  # (it, layer) a class's forward pass waits for
        # partition mode: rank 0's order, per class its position and credit
        self.order, self.opos = [], [0] * K
        self.inflight = [0] * K
        self.ready_tasks = [set() for _ in range(K)]
        self.rank0 = cls_of[0]

    # -- levels ---------------------------------------------------------------------------
    def level(self, layer, it, port):
        g = self.pqueues if port else self.sgroups
        grp = layer * g // self.L if g > 0 else layer
        return (it, grp)

    # -- groups ---------------------------------------------------------------------------
    def build_iteration(self, it):
        """Every flow group of iteration it (created idle; data arrives later)."""
        N, m, K = self.N, self.m, self.K
        G = self.groups
        for i, (layer, pid, srv, b) in enumerate(self.items):
            sc = self.srv_cls[i]
            targets = range(K) if sc == ALL else [sc]
            # switch-port push groups and the server's pull group
            for s in targets:
                pp = Group(self.P[s], (N - 1) * b, N - 1, self.level(layer, it, True), ALL,
                           "pport", s, i, it)
                G[("pport", s, i, it)] = pp
                ep = Group(self.E[s], (N - 1) * b, N - 1, self.level(layer, it, False), ALL,
                           "epull", s, i, it)
                G[("epull", s, i, it)] = ep
                self.pulls_left[(s, it)] = self.pulls_left.get((s, it), 0) + 1
            for a in range(K):
                # the node's push group at its egress, with where its flows arrive
                if sc == ALL:
                    eg = Group(self.E[a], (N - 1) * b, N - 1, self.level(layer, it, False), ALL,
                               "epush", a, i, it)
                    for bcl in range(K):
                        mult = (m[a] - (1 if a == bcl else 0)) / (N - 1)
                        if mult > 0:
                            eg.down.append((G[("pport", bcl, i, it)], mult))
                    G[("epush", a, i, it)] = eg
                elif a != sc:
                    eg = Group(self.E[a], b, 1, self.level(layer, it, False), sc, "epush", a, i, it)
                    eg.down.append((G[("pport", sc, i, it)], float(m[a])))
                    G[("epush", a, i, it)] = eg
                # the pull's arrival at this node's switch port
                if sc == ALL or a != sc:
                    size = (N - 1) * b if sc == ALL else b
                    pg = Group(self.P[a], size, N - 1 if sc == ALL else 1,
                               self.level(layer, it, True), ALL, "ppull", a, i, it)
                    G[("ppull", a, i, it)] = pg
                    srcs = range(K) if sc == ALL else [sc]
                    for s in srcs:
                        mult = ((m[s] - (1 if s == a else 0)) if sc == ALL else 1) / (N - 1)
                        if mult > 0:
                            G[("epull", s, i, it)].down.append((pg, mult))
                parts = 2 if sc == ALL else 1
                self.pend[(a, it, i)] = parts
                self.layer_pend[(a, it, layer)] = self.layer_pend.get((a, it, layer), 0) + 1
        for key, g in G.items():
            if key[3] == it:
                for dg, _ in g.down:
                    dg.ups += 1
        if self.hold:
            for a in range(K):
                for i in range(len(self.items)):
                    g = G.get(("epush", a, i, it))
                    if g is not None and self.pulls_left.get((a, it - 1), 0) > 0:
                        g.hold = True

    # -- the fluid machinery ---------------------------------------------------------------
    def touch(self, q):
        dt = self.t - q.t
        q.t = self.t
        if dt <= 0:
            return
        fin = []
        for g in q.active:
            if g.inr:
                g.arr = min(g.size, g.arr + g.inr * dt)
            if g.out:
                g.sent = min(g.arr, g.sent + g.out * dt)
            if g.sent >= g.size - g.eps:
                fin.append(g)
            elif g.gate is not None:
                self.release(g)
        for g in fin:
            self.finish(g)

    def release(self, g):
        """Immediate aggregation: every whole chunk the port has delivered to a server is
        summed and goes out as pull data (ps/server.c, --chunk parameters a slice)."""
        upto = g.size if g.sent >= g.size - g.eps else ((g.sent + g.eps) // g.chunk) * g.chunk
        if upto > g.rel:
            self.add_data(g.gate, upto - g.rel)
            g.rel = upto

    def mark(self, q):
        self.dirty.append(q)

    def activate(self, g):
        if g not in g.q.active and not g.done:
            g.q.active.append(g)
        if not g.seq:
            self.seq += 1
            g.seq = self.seq
        self.mark(g.q)

    def add_data(self, g, amount):
        """A batch arrives: the whole of a push at its egress, a fifo aggregate at the server."""
        self.touch(g.q)
        g.arr = min(g.size, g.arr + amount)
        self.activate(g)

    def set_inr(self, g, delta):
        self.touch(g.q)
        g.inr += delta
        if g.inr < 1e-9 * self.R or g.arr >= g.size - g.eps:
            g.inr = 0.0
        if g.inr > 0:
            self.activate(g)
        else:
            self.mark(g.q)

    def allocate(self, q):
        act = [g for g in q.active if not g.done]
        q.active = act
        old = [g.out for g in act]
        if q.disc == "pass":
            for g in act:
                g.out = g.inr if g.arr - g.sent <= g.eps else self.R * 1e3
        elif q.disc != "fifo" and not any(g.arr - g.sent > g.eps for g in act) and \
                sum(g.inr for g in act) <= q.rate:
            for g in act:  # nothing queued and the inputs fit: every flow passes
                g.out = 0.0 if g.hold else g.inr
        else:
            for g in act:
                g.out = 0.0
            elig = []
            if q.disc == "fifo":
                blocked, busy = False, set()
                for g in sorted(act, key=lambda x: x.seq):
                    if g.arr - g.sent <= g.eps and g.inr <= 0:
                        continue
                    if g.conn == ALL:
                        if not blocked:
                            elig.append(g)
                        blocked = True
                    else:
                        if not blocked and g.conn not in busy:
                            elig.append(g)
                        busy.add(g.conn)
                self.fill(elig, q.rate)
            else:
                for g in act:
                    if g.hold or (g.arr - g.sent <= g.eps and g.inr <= 0):
                        continue
                    elig.append(g)
                if q.disc == "ps":
                    self.fill(elig, q.rate)
                else:
                    elig.sort(key=lambda x: x.level)
                    cap, i = q.rate, 0
                    while i < len(elig) and cap > 1e-9 * q.rate:
                        j = i
                        while j < len(elig) and elig[j].level == elig[i].level:
                            j += 1
                        cap -= self.fill(elig[i:j], cap)
                        i = j
        tiny = 1e-12 * self.R
        for g, o in zip(act, old):
            d = g.out - o
            if d > tiny or d < -tiny:
                for dg, mult in g.down:
                    self.set_inr(dg, d * mult)
            elif d:
                g.out = o

    @staticmethod
    def fill(gs, cap):
        """Max-min fair share per flow among gs; a group without backlog takes its input."""
        if not gs:
            return 0.0
        used = 0.0
        lim = []
        for g in gs:
            if g.arr - g.sent > g.eps:
                lim.append((float("inf"), g))
            else:
                lim.append((g.inr / g.w, g))
        lim.sort(key=lambda x: x[0])
        wsum = sum(g.w for _, g in lim)
        left = cap
        for k, (per, g) in enumerate(lim):
            share = left / wsum if wsum > 0 else 0.0
            if per <= share:
                g.out = per * g.w
            else:
                for _, h in lim[k:]:
                    h.out = share * h.w
                used += left
                return used
            left -= g.out
            used += g.out
            wsum -= g.w
        return used

    def schedule(self, q):
        nxt = None
        for g in q.active:
            if g.done or g.out <= 0:
                continue
            back = g.arr - g.sent
            if g.gate is not None:
                dt = (((g.sent + g.eps) // g.chunk + 1) * g.chunk - g.sent) / g.out
                if nxt is None or dt < nxt:
                    nxt = dt
            if back > g.eps and g.out > g.inr:
                dt = back / (g.out - g.inr)
            else:
                continue  # drains as it comes: its input's end is the upstream's event
            if nxt is None or dt < nxt:
                nxt = dt
        at = None if nxt is None else self.t + max(nxt, 0.0)
        if at == q.next:
            return  # the event already queued still stands
        q.ver += 1
        q.next = at
        if at is not None:
            self.push(at, ("q", q, q.ver))

    def push(self, t, ev):
        self.hseq += 1
        heapq.heappush(self.heap, (t, self.hseq, ev))

    def flush(self):
        """Reallocates every queue whose inputs changed, until the rates settle. Immediate
        aggregation closes a loop (a port's push rate is its server's pull input, whose
        egress also carries pushes): after SETTLE rounds the rates are taken as they stand
        (counted in `unsettled`)."""
        rounds = 0
        while self.dirty:
            qs, seen = [], set()
            for q in self.dirty:
                if id(q) not in seen:
                    seen.add(id(q))
                    qs.append(q)
            self.dirty = []
            for q in qs:
                self.touch(q)
                self.allocate(q)
                self.schedule(q)
            rounds += 1
            if rounds > SETTLE and self.dirty:
                self.unsettled += 1
                for q in self.dirty:
                    self.touch(q)
                    self.schedule(q)
                self.dirty = []

    # -- completions ------------------------------------------------------------------------
    def finish(self, g):
        g.done = True
        g.sent = g.arr = g.size
        if g.out:
            for dg, mult in g.down:
                self.set_inr(dg, -g.out * mult)
        for dg, _ in g.down:
            dg.ups -= 1
            if dg.ups == 0 and not dg.done and dg.arr < dg.size:
                # Everything upstream has left, so all of it has arrived: integrating the
                # rates leaves rounding short of the size, and a group that never fills
                # never finishes (BERT-base's partition cell stalled on 6e-5 bytes).
                self.touch(dg.q)
                dg.arr = dg.size
                self.activate(dg)
        g.out = g.inr = 0.0
        self.mark(g.q)
        if g.gate is not None:
            self.release(g)
        if g.kind == "pport":
            self.try_aggregate(g.cls, g.item, g.it)
        elif g.kind == "ppull":
            self.pull_part(g.cls, g.it, g.item)
        elif g.kind == "epull":
            key = (g.cls, g.it)
            self.pulls_left[key] -= 1
            if self.pulls_left[key] == 0 and self.hold:
                for i in range(len(self.items)):
                    h = self.groups.get(("epush", g.cls, i, g.it + 1))
                    if h is not None and h.hold:
                        h.hold = False
                        self.mark(h.q)

    def try_aggregate(self, s, i, it):
        """The server's slice of item i: every remote push arrived and its own is in."""
        pp = self.groups[("pport", s, i, it)]
        if not pp.done or (s, i, it) not in self.own_ready or (s, i, it) in self.agg_done:
            return
        self.agg_done.add((s, i, it))
        ep = self.groups[("epull", s, i, it)]
        if self.mode != "mercury":
            self.add_data(ep, ep.size)  # one pull message once the tensor is summed
        self.pull_part(s, it, i)

    def own_push(self, a, i, it):
        """Class a's worker hands item i of iteration it to the network."""
        self.own_ready.add((a, i, it))
        g = self.groups.get(("epush", a, i, it))
        if g is not None:
            self.add_data(g, g.size)
        sc = self.srv_cls[i]
        if sc == ALL or sc == a:
            pp = self.groups[("pport", a, i, it)]
            ep = self.groups[("epull", a, i, it)]
            if self.mode == "mercury":
                # immediate aggregation: what has arrived is summed, the rest as it arrives
                self.touch(pp.q)
                pp.gate, pp.chunk = ep, self.chunk * 4.0 * (self.N - 1)
                self.release(pp)
                self.mark(pp.q)
            self.try_aggregate(a, i, it)

    def pull_part(self, a, it, i):
        k = (a, it, i)
        self.pend[k] -= 1
        if self.pend[k] > 0:
            return
        layer = self.item_layer[i]
        self.layer_pend[(a, it, layer)] -= 1
        if self.mode == "partition":
            pid = self.items[i][1]
            if all(self.pend[(a, it, j)] == 0 for j in self.part_items[pid]):
                self.inflight[a] -= self.part_len[pid]
                self.kick(a)
        if self.layer_pend[(a, it, layer)] == 0 and self.waiting[a] == (it, layer):
            self.waiting[a] = None
            self.push(self.t + self.fwd[layer], ("fwd", a, it + 1, layer))

    # -- compute ------------------------------------------------------------------------------
    def fwd_step(self, a, it, layer):
        """Forward pass it, layer done at self.t: start the next layer or the backward."""
        if layer + 1 < self.L:
            nl = layer + 1
            if it == 0 or self.layer_pend[(a, it - 1, nl)] == 0:
                self.push(self.t + self.fwd[nl], ("fwd", a, it, nl))
            else:
                self.waiting[a] = (it - 1, nl)
            return
        self.fp_end[a][it] = self.t
        if it >= self.M:
            return
        t = self.t
        for l in range(self.L - 1, -1, -1):
            t += self.bwd[l]
            self.push(t, ("ready", a, it, l))
        self.push(t, ("start", a, it + 1))

    def start_fp(self, a, it):
        if self.layer_pend[(a, it - 1, 0)] == 0:
            self.push(self.t + self.fwd[0], ("fwd", a, it, 0))
        else:
            self.waiting[a] = (it - 1, 0)

    def ready(self, a, it, layer):
        if self.mode != "partition":
            for i in self.layer_items[layer]:
                self.own_push(a, i, it)
            return
        for pid in sorted({self.items[i][1] for i in self.layer_items[layer]}):
            self.ready_tasks[a].add((it, layer, pid))
        self.kick(a)

    # -- ByteScheduler: rank 0 orders, everyone dispatches in that order within its credit ----
    def admits(self, a, pid):
        return self.inflight[a] == 0 or self.inflight[a] + self.part_len[pid] <= self.credit

    def extend_order(self):
        """Rank 0 dispatches what its credit allows, highest priority first: its order."""
        r0 = self.rank0
        while True:
            self.dispatch(r0)
            if self.opos[r0] < len(self.order):
                return
            cand = min(self.ready_tasks[r0], default=None)
            if cand is None or not self.admits(r0, cand[2]):
                return
            self.order.append(cand)

    def kick(self, a):
        if a == self.rank0:
            self.extend_order()
            for b in range(self.K):
                if b != a:
                    self.dispatch(b)
        else:
            self.dispatch(a)

    def dispatch(self, a):
        while self.opos[a] < len(self.order):
            task = self.order[self.opos[a]]
            if task not in self.ready_tasks[a] or not self.admits(a, task[2]):
                break
            self.opos[a] += 1
            self.ready_tasks[a].discard(task)
            it, _, pid = task
            self.inflight[a] += self.part_len[pid]
            for i in self.part_items[pid]:
                self.own_push(a, i, it)

    # -- the run ------------------------------------------------------------------------------
    def run(self):
        for it in range(self.M):
            self.build_iteration(it)
        for a in range(self.K):
            self.push(self.fwd[0], ("fwd", a, 0, 0))
        while self.heap:
            t, _, ev = heapq.heappop(self.heap)
            self.events += 1
            self.t = t
            kind = ev[0]
            if kind == "q":
                q = ev[1]
                if ev[2] != q.ver:
                    continue
                q.next = None
                self.touch(q)
                self.mark(q)
            elif kind == "fwd":
                self.fwd_step(ev[1], ev[2], ev[3])
            elif kind == "ready":
                self.ready(ev[1], ev[2], ev[3])
            elif kind == "start":
                self.start_fp(ev[1], ev[2])
            self.flush()
            if all(self.fp_end[a][self.M] is not None for a in range(self.K)):
                break
        if any(self.fp_end[a][self.M] is None for a in range(self.K)):
            raise RuntimeError("the simulation stalled before the last forward pass")
        first = max(self.fp_end[a][self.first_fp] for a in range(self.K))
        last = max(self.fp_end[a][self.M] for a in range(self.K))
        return (last - first) / self.iters


def simulate(layers, nodes, rate_Bps, mode, fabric="fifo", shrink=1, time_scale=1.0, **kw):
    """Iteration time (s) of mode on the fabric; ideal is ps/ideal.c's bound."""
    if mode == "ideal":
        keep = {k: kw[k] for k in ("bound", "split_all", "balanced") if k in kw}
        return ideal(layers, nodes, rate_Bps, shrink, time_scale, **keep)[0], {}
    s = Sim(layers, nodes, rate_Bps, mode, fabric, shrink, time_scale, **kw)
    t = s.run()
    return t, {"classes": s.K, "events": s.events, "unsettled": s.unsettled}


def profile_path(name):
    if os.path.exists(name):
        return name
    p = os.path.join(ROOT, "models", name + ".prof")
    if os.path.exists(p):
        return p
    raise FileNotFoundError(f"no profile {name} (looked for {p})")


def main(argv=None):
    ap = argparse.ArgumentParser(
        description="Fluid flow-level model of a mercury-ps iteration (co-located workers and "
        "servers) on a full-duplex switched fabric. Prints the iteration time.")
    ap.add_argument("--profile", required=True, help="models/NAME.prof, or a model name")
    ap.add_argument("--mode", required=True, choices=["fifo", "partition", "mercury", "ideal"])
    ap.add_argument("--nodes", type=int, required=True)
    ap.add_argument("--rate", required=True, help="per-node link rate, e.g. 400mbit, 10gbit")
    ap.add_argument("--fabric", default="fifo", choices=["egress", "fifo", "prio"],
                    help="switch port towards each node: egress = unlimited (egress-only "
                    "emulation), fifo = shared fairly by its flows (default), prio = strict "
                    "priority by layer group (DSCP)")
    ap.add_argument("--shrink", type=int, default=1, help="divide parameter counts by K")
    ap.add_argument("--time-scale", type=float, default=1.0, help="multiply compute by S")
    ap.add_argument("--cluster-scale", type=int, metavar="S",
                    help="as cluster/bench.sh: shrink = shrink_of(model), time scale S/shrink "
                    "(the rate is still --rate)")
    ap.add_argument("--bound", type=int, default=BOUND)
    ap.add_argument("--split-all", action="store_true")
    ap.add_argument("--placement", default="hash", choices=["hash", "balanced"])
    ap.add_argument("--part", type=int, default=None, help="partition size (default 1M/shrink)")
    ap.add_argument("--credit", type=int, default=None, help="credit (default 4M/shrink)")
    ap.add_argument("--iters", type=int, default=4)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--sender-groups", type=int, default=13,
                    help="mercury's priority groups at the sender (15 bands: 13); 0 = per layer")
    ap.add_argument("--port-queues", type=int, default=7,
                    help="prio fabric: layer groups the switch port tells apart; 0 = per layer")
    ap.add_argument("--chunk", type=int, default=65536,
                    help="mercury: parameters aggregated and pulled at a time")
    ap.add_argument("--no-hold", action="store_true", help="mercury: write pushes ahead")
    ap.add_argument("-j", "--json", action="store_true", help="one JSON line")
    a = ap.parse_args(argv)
    model, layers = load_profile(profile_path(a.profile))
    shrink, ts = a.shrink, a.time_scale
    if a.cluster_scale:
        shrink = shrink_of(model)
        ts = a.cluster_scale / shrink
    rate = parse_rate(a.rate)
    kw = dict(bound=a.bound, split_all=a.split_all, balanced=a.placement == "balanced")
    if a.mode != "ideal":
        kw.update(part=a.part or 1000000 // shrink, credit=a.credit or 4000000 // shrink,
                  iters=a.iters, warmup=a.warmup, sender_groups=a.sender_groups,
                  port_queues=a.port_queues, hold=not a.no_hold, chunk=a.chunk)
    t, info = simulate(layers, a.nodes, rate, a.mode, a.fabric, shrink, ts, **kw)
    res = {"model": model, "mode": a.mode, "fabric": a.fabric, "nodes": a.nodes,
           "rate_Bps": rate, "shrink": shrink, "time_scale": ts, "iter_s": t}
    if a.mode == "ideal":
        _, comm, comp = ideal(layers, a.nodes, rate, shrink, ts, a.bound, a.split_all,
                              a.placement == "balanced")
        res.update(comm_only_s=comm, compute_only_s=comp)
    res.update(info)
    if a.json:
        print(json.dumps(res))
    else:
        print(f"{model} {a.mode} on {a.nodes} nodes at {a.rate} ({a.fabric} fabric): "
              f"{t:.4f} s an iteration")
    return 0


if __name__ == "__main__":
    sys.exit(main())
