# SPDX-License-Identifier: BSD-2-Clause
"""Checks the documentation against its sources (tests/system/test_headline.sh runs it).

headline ROOT: results/headline.json is the one source of the headline figures. Each entry
names the files that quote it; a quoting line carries the marker <!-- h:ID --> and must
contain the entry's value (as a whole number: 1.24 does not match 1.245 or 11.24). Every
marker must name an entry that lists that file, and every listed file must have the marker.
Entries whose value is "TBD" (measurement pending) are skipped, markers of theirs excepted:
those must still name an entry that lists the file.

paths ROOT FILE...: every repository path a file names exists: relative Markdown link
targets (from the file's folder) and every word that starts with one of the repository's
top-level folders (`daemon/tc/tc_tree.c`, cluster/lib.sh), globs and {a,b} expanded.
Prints one line per problem; exits 1 if there is any."""
import glob
import itertools
import json
import os
import re
import subprocess
import sys

FIELDS = ("id", "value", "unit", "what", "command", "commit", "date", "machine", "quoted_in")
MARKER = re.compile(r"<!-- h:([a-z0-9][a-z0-9._-]*) -->")


def value_re(value):
    return re.compile(r"(?<![0-9.])" + re.escape(value) + r"(?![0-9])")


def check_headline(root):
    problems = []
    path = os.path.join(root, "results", "headline.json")
    try:
        with open(path, encoding="utf-8") as f:
            entries = json.load(f)["figures"]
    except (OSError, ValueError, KeyError) as e:
        return [f"{path}: cannot read ({e})"]
    by_id = {}
    for e in entries:
        missing = [k for k in FIELDS if k not in e or e[k] in ("", None, [])]
        if missing:
            problems.append(f"headline {e.get('id', '?')}: missing {', '.join(missing)}")
            continue
        if e["id"] in by_id:
            problems.append(f"headline {e['id']}: listed twice")
        by_id[e["id"]] = e
    files = sorted({f for e in by_id.values() for f in e["quoted_in"]})
    seen = set()
    checked = 0
    for rel in files:
        try:
            with open(os.path.join(root, rel), encoding="utf-8") as f:
                lines = f.read().splitlines()
        except OSError as e:
            problems.append(f"{rel}: cannot read ({e})")
            continue
        for n, line in enumerate(lines, 1):
            for hid in MARKER.findall(line):
                e = by_id.get(hid)
                if e is None:
                    problems.append(f"{rel}:{n}: marker h:{hid} names no entry of results/headline.json")
                    continue
                if rel not in e["quoted_in"]:
                    problems.append(f"{rel}:{n}: h:{hid} is quoted here but its entry does not list {rel}")
                seen.add((hid, rel))
                if e["value"] == "TBD":
                    continue
                checked += 1
                if not value_re(e["value"]).search(MARKER.sub("", line)):
                    problems.append(f"{rel}:{n}: h:{hid} should read {e['value']} ({e['unit']}): {line.strip()[:160]}")
    # markers in files no entry lists (a stale quote elsewhere)
    for rel in ("README.md", "BENCHMARKS.md", "cluster/RESULTS.md"):
        if rel in files or not os.path.exists(os.path.join(root, rel)):
            continue
        with open(os.path.join(root, rel), encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                for hid in MARKER.findall(line):
                    problems.append(f"{rel}:{n}: h:{hid} is quoted here but its entry does not list {rel}")
    for e in by_id.values():
        if e["value"] == "TBD":  # pending: quoted where the measurement lands
            continue
        for rel in e["quoted_in"]:
            if (e["id"], rel) not in seen:
                problems.append(f"{rel}: no line carries <!-- h:{e['id']} --> though results/headline.json says it is quoted there")
    tbd = sum(1 for e in by_id.values() if e["value"] == "TBD")
    print(f"headline: {len(by_id)} figures ({tbd} TBD), {checked} quotes checked")
    return problems


def top_dirs(root):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files"], capture_output=True, text=True, check=True).stdout
        names = {p.split("/", 1)[0] for p in out.splitlines() if "/" in p}
    except (OSError, subprocess.CalledProcessError):
        names = {d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d))}
    return sorted(n for n in names if not n.startswith("."))


def expand_braces(s):
    m = re.search(r"\{([^{}]*)\}", s)
    if not m:
        return [s]
    return list(itertools.chain.from_iterable(
        expand_braces(s[:m.start()] + alt + s[m.end():]) for alt in m.group(1).split(",")))


def exists(root, rel):
    for p in expand_braces(rel):
        full = os.path.join(root, p)
        if any(c in p for c in "*?["):
            if not glob.glob(full):
                return False
        elif not os.path.exists(full):
            return False
    return True


def check_paths(root, files):
    problems = []
    dirs = top_dirs(root)
    word = re.compile(r"(?<![\w/.~$@-])((?:" + "|".join(map(re.escape, dirs)) + r")/[\w./*{},+-]*)")
    link = re.compile(r"\]\(([^)\s]+)\)")
    n = 0
    for rel in files:
        with open(os.path.join(root, rel), encoding="utf-8") as f:
            text = f.read()
        here = os.path.dirname(rel)
        for m in link.finditer(text):
            target = m.group(1).split("#", 1)[0]
            if not target or re.match(r"[a-z]+:", target) or target.startswith("/"):
                continue
            n += 1
            p = os.path.normpath(os.path.join(here, target))
            if not os.path.exists(os.path.join(root, p)):
                line = text.count("\n", 0, m.start()) + 1
                problems.append(f"{rel}:{line}: link to {target}: no such file in the repository")
        for m in word.finditer(text):
            p = m.group(1).rstrip(".,;:")
            if "<" in p or re.search(r"/[A-Z]+(\.|$)", p):  # placeholders: <iface>, MODEL
                continue
            n += 1
            if not exists(root, p):
                line = text.count("\n", 0, m.start()) + 1
                problems.append(f"{rel}:{line}: {p}: no such path in the repository")
    print(f"paths: {n} paths named in {len(files)} files checked")
    return problems


def main(argv):
    if len(argv) < 3 or argv[1] not in ("headline", "paths"):
        print(__doc__, file=sys.stderr)
        return 2
    root = argv[2]
    problems = check_headline(root) if argv[1] == "headline" else check_paths(root, argv[3:])
    for p in problems:
        print("FAIL: " + p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
