# SPDX-License-Identifier: BSD-2-Clause
"""module_graph.py BUILD DIR...: the call graph between the object files of the given source
folders (a file uses another when it references a symbol the other defines, from nm), and
every cycle in it. Exit 1 when there is one."""
import os
import subprocess
import sys

build, dirs = sys.argv[1], sys.argv[2:]
defs, uses = {}, {}
for d in dirs:
    objdir = os.path.join(build, d)
    if not os.path.isdir(objdir):
        continue
    for f in sorted(os.listdir(objdir)):
        if not f.endswith(".o") or f.endswith(".pic.o") or f == "main.o":
            continue
        mod = "%s/%s.c" % (d, f[:-2])
        out = subprocess.run(["nm", os.path.join(objdir, f)], capture_output=True, text=True,
                             check=True).stdout
        uses[mod] = set()
        for line in out.splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[1] in "TDRB":
                defs[parts[2]] = mod
            elif len(parts) == 2 and parts[0] == "U":
                uses[mod].add(parts[1])
graph = {m: sorted({defs[s] for s in syms if s in defs and defs[s] != m})
         for m, syms in uses.items()}
# Tarjan's strongly connected components: a component of more than one file is a cycle.
index, low, stack, on, comps = {}, {}, [], set(), []


def visit(v):
    index[v] = low[v] = len(index)
    stack.append(v)
    on.add(v)
    for w in graph[v]:
        if w not in index:
            visit(w)
            low[v] = min(low[v], low[w])
        elif w in on:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        comp = []
        while True:
            w = stack.pop()
            on.discard(w)
            comp.append(w)
            if w == v:
                break
        if len(comp) > 1:
            comps.append(sorted(comp))


sys.setrecursionlimit(10000)
for v in sorted(graph):
    if v not in index:
        visit(v)
print("%d files, %d edges" % (len(graph), sum(len(e) for e in graph.values())))
for c in comps:
    print("cycle: " + " <-> ".join(c))
    for m in c:
        print("   %s uses %s" % (m, ", ".join(x for x in graph[m] if x in c)))
sys.exit(1 if comps else 0)
