#!/usr/bin/env python3
"""check_layers.py — includes under src/ point downward only.

Every top folder of src/ has a level (LEVELS below). A file may include a
header of its own level or lower; a header from a higher level is a
violation. Folders of one level may include each other, but the folder
graph (an edge A -> B for each `#include "B/..."` in a file of A) must be
acyclic at every level. The public headers (`spillway.h`,
`spillway_grammar.h`) may be included by anyone; <system> headers are
ignored. Comments are stripped before scanning; `#if 0` blocks are not (an
include there still counts).

    tools/check_layers.py [ROOT]     ROOT holds src/ (default: this repo)

Prints each violation as `file:line: includes X (level N) from level M`,
each folder cycle with one include per edge, and exits 1 if there are any;
otherwise prints a one-line summary and exits 0. Standard library only.
"""
import os
import re
import sys

# Lowest first. A folder may include its own level and those below it.
# backend/cpu, backend/sim and backend/cuda are all the `backend` folder.
LEVELS = {
    "util": 0,
    "quant": 1, "format": 1,
    "backend": 2, "tokenizer": 2, "model": 2,
    "plan": 3, "synth": 3, "doctor": 3, "grammar": 3,
    "engine": 4,
    "runtime": 5, "eval": 5, "sched": 5,
    "serve": 6,
    "cli": 7,
}
PUBLIC = {"spillway.h", "spillway_grammar.h"}  # include/: anyone may include them
EXTENSIONS = (".c", ".h", ".inc", ".cu", ".cuh")  # .inc: bodies included per ISA
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')


def strip_comments(text):
    """Blanks out /* */ and // comments (and string/char literals' contents
    are kept), preserving newlines so line numbers stay right."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c == "/" and i + 1 < n and text[i + 1] == "*":
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append("".join("\n" if ch == "\n" else " " for ch in text[i:end]))
            i = end
        elif c == "/" and i + 1 < n and text[i + 1] == "/":
            end = text.find("\n", i)
            end = n if end < 0 else end
            i = end
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def scan(src):
    """Yields (path relative to src's parent, line, folder, included path)."""
    for dirpath, dirnames, filenames in os.walk(src):
        dirnames.sort()
        for name in sorted(filenames):
            if not name.endswith(EXTENSIONS):
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, os.path.dirname(src))
            parts = os.path.relpath(path, src).split(os.sep)
            folder = parts[0] if len(parts) > 1 else ""
            with open(path, encoding="utf-8", errors="replace") as f:
                text = strip_comments(f.read())
            for lineno, line in enumerate(text.split("\n"), 1):
                m = INCLUDE.match(line)
                if m:
                    yield rel, lineno, folder, m.group(1), dirpath


def target_folder(inc, dirpath, folder):
    """The src/ folder an include names, "" for the public header, or None
    when it names no known folder."""
    if inc in PUBLIC:
        return ""
    head = inc.split("/")[0]
    if "/" in inc and head in LEVELS:
        return head
    if "/" not in inc and os.path.exists(os.path.join(dirpath, inc)):
        return folder  # a neighbour in the same directory
    return None


def shortest_path(edges, start, goal):
    """A shortest folder path start -> ... -> goal, or None (breadth first)."""
    prev, queue = {start: None}, [start]
    for node in queue:
        if node == goal:
            path = []
            while node is not None:
                path.append(node)
                node = prev[node]
            return path[::-1]
        for nxt in sorted(edges.get(node, ())):
            if nxt not in prev:
                prev[nxt] = node
                queue.append(nxt)
    return None


def cycles(edges):
    """The folder cycles, one per edge that can close one. Edges that go
    strictly down a level cannot form a cycle among themselves, so every
    cycle holds a same-level or upward edge a -> b; for each such edge on a
    cycle this gives the shortest one, a -> b -> ... -> a, once per cycle."""
    found, seen = [], set()
    for a in sorted(edges):
        for b in sorted(edges[a]):
            if LEVELS[b] < LEVELS[a]:
                continue
            back = shortest_path(edges, b, a)
            if back is None:
                continue
            cyc = [a] + back[:-1]
            low = cyc.index(min(cyc))
            cyc = cyc[low:] + cyc[:low]
            if tuple(cyc) not in seen:
                seen.add(tuple(cyc))
                found.append(cyc)
    return found


def main(argv):
    root = argv[1] if len(argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    src = os.path.join(root, "src")
    if not os.path.isdir(src):
        print(f"check_layers: no src/ folder under {root}", file=sys.stderr)
        return 2
    problems = 0
    edges = {}    # folder -> {folder: first (file, line, include)}
    folders = set()
    n_includes = 0
    for rel, line, folder, inc, dirpath in scan(src):
        n_includes += 1
        if folder not in LEVELS:
            print(f"{rel}:{line}: folder '{folder or 'src'}' has no level; add it to LEVELS "
                  f"in tools/check_layers.py")
            problems += 1
            continue
        folders.add(folder)
        to = target_folder(inc, dirpath, folder)
        if to is None:
            print(f"{rel}:{line}: includes {inc}, which names no folder of src/ "
                  f"(write it as \"folder/{inc}\")")
            problems += 1
            continue
        if to == "" or to == folder:
            continue
        folders.add(to)
        if LEVELS[to] > LEVELS[folder]:
            print(f"{rel}:{line}: includes {inc} (level {LEVELS[to]}) from level "
                  f"{LEVELS[folder]} [{folder} -> {to}]")
            problems += 1
        edges.setdefault(folder, {}).setdefault(to, (rel, line, inc))
    for cyc in cycles({a: set(b) for a, b in edges.items()}):
        hops = [(cyc[i], cyc[(i + 1) % len(cyc)]) for i in range(len(cyc))]
        where = "; ".join(f"{edges[a][b][0]}:{edges[a][b][1]} includes {edges[a][b][2]}"
                          for a, b in hops)
        print(f"cycle: {' -> '.join(cyc + [cyc[0]])} ({where})")
        problems += 1
    n_edges = sum(len(b) for b in edges.values())
    if problems:
        print(f"check_layers: {problems} problem(s) in {n_includes} includes "
              f"({len(folders)} folders, {n_edges} folder edges)")
        return 1
    print(f"check_layers: {len(folders)} folders, {n_edges} folder edges, {n_includes} "
          f"includes: all point downward, no cycles")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
