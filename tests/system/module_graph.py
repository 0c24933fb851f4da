# SPDX-License-Identifier: BSD-2-Clause
"""module_graph.py BUILD DIR...: the call graph between the object files of the given source
folders (a file uses another when it references a symbol the other defines, from nm), and
every cycle in it. Exit 1 when there is one.

module_graph.py --includes ROOT: the same for the #include "..." lines of the sources under
ROOT (daemon/, ps/, common/, include/): a file and the header of the same name are one module;
no circle between modules, and no include running up the folder order (FOLDER_ORDER), nor
from common/ or include/ into a program's folders. Exit 1 on either."""
import os
import re
import subprocess
import sys

# Lowest first: a file may include headers of its own folder and of folders before it.
FOLDER_ORDER = {
    "daemon": ["daemon/tc", "daemon/loader", "daemon/service", "daemon/cli"],
    "ps": ["ps", "ps/cli"],
}
SHARED = ["include", "common"]  # below every program folder


def object_graph(build, dirs):
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
    return {m: sorted({defs[s] for s in syms if s in defs and defs[s] != m})
            for m, syms in uses.items()}


def cycles(graph):
    """Tarjan's strongly connected components: each of more than one node is a cycle."""
    index, low, stack, on, comps = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
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
    return comps


def print_cycles(graph, comps):
    for c in comps:
        print("cycle: " + " <-> ".join(c))
        for m in c:
            print("   %s uses %s" % (m, ", ".join(x for x in graph[m] if x in c)))


def folder_rank(path):
    """(tree, rank) of a file's folder: tree "shared" for include/ and common/."""
    folder = os.path.dirname(path)
    if folder in SHARED:
        return "shared", -1
    for tree, order in FOLDER_ORDER.items():
        if folder in order:
            return tree, order.index(folder)
    return None, None


def include_graph(root):
    """file -> headers it includes (resolved as the Makefile's -I paths would), for the C
    sources of every folder in FOLDER_ORDER and SHARED."""
    folders = SHARED + [f for order in FOLDER_ORDER.values() for f in order]
    files = [os.path.join(f, n) for f in folders if os.path.isdir(os.path.join(root, f))
             for n in sorted(os.listdir(os.path.join(root, f))) if n.endswith((".c", ".h"))]
    graph = {}
    for f in files:
        tree, _ = folder_rank(f)
        search = [os.path.dirname(f)] + SHARED + (
            [tree] if tree in FOLDER_ORDER else [])
        graph[f] = []
        with open(os.path.join(root, f), encoding="utf-8") as src:
            for name in re.findall(r'^\s*#\s*include\s+"([^"]+)"', src.read(), re.M):
                for d in search:
                    cand = os.path.normpath(os.path.join(d, name))
                    if os.path.isfile(os.path.join(root, cand)):
                        graph[f].append(cand)
                        break  # not found: generated (skeletons) or outside these folders
    return graph


def check_includes(root):
    graph = include_graph(root)
    bad = []
    for f, hs in sorted(graph.items()):
        tree, rank = folder_rank(f)
        for h in hs:
            htree, hrank = folder_rank(h)
            if htree is None:
                continue
            if tree == "shared" and htree != "shared":
                bad.append("%s includes %s: include/ and common/ are below every program" % (f, h))
            elif tree != "shared" and htree not in ("shared", tree):
                bad.append("%s includes %s: %s/ and %s/ share only include/ and common/"
                           % (f, h, tree, htree))
            elif htree == tree and hrank > rank:
                bad.append("%s includes %s: %s/ is above %s/ (order: %s)"
                           % (f, h, os.path.dirname(h), os.path.dirname(f),
                              " < ".join(FOLDER_ORDER[tree])))
    # a file and the header of the same name are one module
    mods = {}
    for f, hs in graph.items():
        m = os.path.splitext(f)[0]
        mods.setdefault(m, set()).update(os.path.splitext(h)[0] for h in hs)
    mgraph = {m: sorted(x for x in deps if x != m and x in mods) for m, deps in mods.items()}
    comps = cycles(mgraph)
    print("%d files, %d includes, %d modules" % (len(graph), sum(len(h) for h in graph.values()),
                                                 len(mgraph)))
    for b in bad:
        print("upward include: " + b)
    print_cycles(mgraph, comps)
    return 1 if bad or comps else 0


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--includes":
        return check_includes(sys.argv[2])
    build, dirs = sys.argv[1], sys.argv[2:]
    graph = object_graph(build, dirs)
    comps = cycles(graph)
    print("%d files, %d edges" % (len(graph), sum(len(e) for e in graph.values())))
    print_cycles(graph, comps)
    return 1 if comps else 0


if __name__ == "__main__":
    sys.exit(main())
