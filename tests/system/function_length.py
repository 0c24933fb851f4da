# SPDX-License-Identifier: BSD-2-Clause
"""function_length.py LIMIT ROOT [DIR...]: every C function under the given folders of ROOT
(default: all but tests/ and vmlinux/, which hold tests and generated code) longer than LIMIT
lines, from the first line of its name to its closing brace. Exit 1 when there is one.

A function is found the way the project's clang-format style (BreakBeforeBraces: Linux)
writes it: a "{" alone at the start of a line after its declarator, the matching "}" alone at
the start of a line."""
import os
import sys

SKIP = {"tests", "vmlinux", ".git"}  # and build/, build-*/ (generated; .gitignore's)


def functions(path):
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    for i, line in enumerate(lines):
        if line != "{":
            continue
        start = i - 1
        while start > 0 and lines[start][:1] in (" ", "\t"):  # continued declarator
            start -= 1
        end = i + 1
        while end < len(lines) and lines[end] != "}":
            end += 1
        yield lines[start].split("(")[0].split()[-1].lstrip("*"), start + 1, end - start + 1


def main():
    limit, root, dirs = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
    if not dirs:
        dirs = sorted(d for d in os.listdir(root)
                      if os.path.isdir(os.path.join(root, d)) and d not in SKIP
                      and d != "build" and not d.startswith("build-"))
    long_ones, count = [], 0
    for d in dirs:
        for base, subdirs, files in os.walk(os.path.join(root, d)):
            subdirs[:] = sorted(s for s in subdirs if s not in SKIP)
            for name in sorted(files):
                if not name.endswith((".c", ".h")):
                    continue
                path = os.path.join(base, name)
                for fn, line, n in functions(path):
                    count += 1
                    if n > limit:
                        long_ones.append("%s:%d: %s is %d lines (limit %d)"
                                         % (os.path.relpath(path, root), line, fn, n, limit))
    print("%d functions, %d over %d lines" % (count, len(long_ones), limit))
    for x in long_ones:
        print(x)
    return 1 if long_ones else 0


if __name__ == "__main__":
    sys.exit(main())
