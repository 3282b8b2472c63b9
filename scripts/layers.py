#!/usr/bin/env python3
"""Print the floor plan of a Rust crate's modules: which file imports which, the floors they stand
on, and every circle.

Usage: python3 scripts/layers.py [SRC_DIR] [--check]

SRC_DIR defaults to core/src. Every `crate::`, `super::` and `self::` path in code, and every bare
path into a child module (`guard::register(m)` in lib.rs; comments and `#[cfg(test)]` modules left
out) is an arrow from the file that writes it to the file that defines
the item it names, following `pub use` re-exports to the defining file (so `crate::identity::X`,
re-exported by identity/mod.rs from identity/handle.rs, is an arrow to handle.rs). An arrow to a
module itself (`crate::sys::procfs`) points at that module's file.

Printed: the files by floor (floor 0 imports nothing of the crate; a file stands one floor above
the highest file it imports), the arrows that run back up (the back edges of a depth-first walk:
turn those imports around and no circle is left), and the circles (strongly connected sets of two or more files),
for files and for top-level modules. With --check, the exit status is 1 when there is any circle.
"""

import os
import re
import sys
from collections import defaultdict

ITEM = re.compile(
    r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:unsafe\s+)?(?:async\s+)?(?:const\s+)?"
    r"(?:struct|enum|fn|trait|type|const|static|union|macro_rules!)\s+([A-Za-z_][A-Za-z0-9_]*)",
    re.M,
)
MOD_DECL = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+([A-Za-z_][A-Za-z0-9_]*)\s*;", re.M)
INLINE_MOD = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+([A-Za-z_][A-Za-z0-9_]*)\s*\{", re.M)
USE = re.compile(r"\b(pub(?:\([^)]*\))?\s+)?use\s+([^;]+);")
PATH = re.compile(r"\b(crate|super|self)((?:::[A-Za-z_][A-Za-z0-9_]*)+)")
# A path that starts with a bare name (not after `::`, `crate`, `self` or `super`).
BARE = re.compile(r"(?<![:\w])([a-z_][a-z0-9_]*)((?:::[A-Za-z_][A-Za-z0-9_]*)+)")


def strip(text):
    """Remove comments, string literals and `#[cfg(test)]` items (a test module's `super::*` is
    the file itself)."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r'r#*"(?:.|\n)*?"#*|"(?:\\.|[^"\\])*"', '""', text)
    out, i = [], 0
    for m in re.finditer(r"#\[cfg\(test\)\]", text):
        if m.start() < i:
            continue
        out.append(text[i:m.start()])
        j = text.find("{", m.end())
        semi = text.find(";", m.end())
        if j < 0 or (0 <= semi < j):
            i = semi + 1 if semi >= 0 else len(text)
            continue
        depth = 0
        for k in range(j, len(text)):
            if text[k] == "{":
                depth += 1
            elif text[k] == "}":
                depth -= 1
                if depth == 0:
                    i = k + 1
                    break
        else:
            i = len(text)
    out.append(text[i:])
    return "".join(out)


def expand(tree):
    """Expand a use tree `a::{b, c::{d, e}}` into paths ["a::b", "a::c::d", "a::c::e"]."""
    tree = re.sub(r"\s+", "", tree)
    depth, start = 0, None
    for i, ch in enumerate(tree):
        if ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                prefix, inner, rest = tree[:start], tree[start + 1:i], tree[i + 1:]
                parts, d, s = [], 0, 0
                for j, c in enumerate(inner):
                    if c == "{":
                        d += 1
                    elif c == "}":
                        d -= 1
                    elif c == "," and d == 0:
                        parts.append(inner[s:j])
                        s = j + 1
                parts.append(inner[s:])
                res = []
                for p in parts:
                    if not p:
                        continue
                    for e in expand(p):
                        res.append(prefix + e + rest if e != "self" else prefix.rstrip(":"))
                return res
    return [re.sub(r"\bas\b.*$", "", tree)] if tree else []


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    check = "--check" in sys.argv
    src = os.path.abspath(args[0] if args else "core/src")
    files = {}  # module path tuple -> file (relative)
    for dirpath, _, names in os.walk(src):
        for n in names:
            if not n.endswith(".rs"):
                continue
            rel = os.path.relpath(os.path.join(dirpath, n), src)
            parts = rel[:-3].split(os.sep)
            if parts[-1] in ("mod", "lib"):
                parts = parts[:-1]
            files[tuple(parts)] = rel
    code = {m: strip(open(os.path.join(src, f), encoding="utf-8").read()) for m, f in files.items()}
    # Inline modules (`mod beneath { … }`) belong to their file: a path into one names the file,
    # and `super::` inside one is the file's own module.
    inline, regions = {}, []  # regions: (module the code is in, its file's module, code)
    for m, text in code.items():
        rest, i = [], 0
        for im in INLINE_MOD.finditer(text):
            if im.start() < i:
                continue
            depth, j = 0, im.end() - 1
            for k in range(j, len(text)):
                depth += {"{": 1, "}": -1}.get(text[k], 0)
                if depth == 0:
                    break
            inline[m + (im.group(1),)] = m
            regions.append((m + (im.group(1),), m, text[im.end():k]))
            rest.append(text[i:im.start()])
            i = k + 1
        rest.append(text[i:])
        regions.append((m, m, "".join(rest)))
    items = defaultdict(set)
    for m, _, text in regions:
        items[m] |= set(ITEM.findall(text))
    reexports = defaultdict(dict)  # module -> name -> absolute path tuple

    def absolute(mod, path):
        segs = path.split("::")
        if segs[0] == "crate":
            base, segs = (), segs[1:]
        elif segs[0] == "self":
            base, segs = mod, segs[1:]
        elif segs[0] == "super":
            base = mod
            while segs and segs[0] == "super":
                base, segs = base[:-1], segs[1:]
        else:
            # A bare path in a use: a child module of `mod`, or an external crate.
            if mod + (segs[0],) in files or mod + (segs[0],) in inline:
                base = mod
            else:
                return None
        return base + tuple(s for s in segs if s and s != "*")

    for m, _, text in regions:
        for u in USE.finditer(text):
            if not u.group(1):
                continue
            for p in expand(u.group(2)):
                a = absolute(m, p)
                if a:
                    reexports[m][a[-1]] = a

    def resolve(path, seen=0):
        """The file (module key) that defines what `path` names."""
        for cut in range(len(path), -1, -1):
            mod = path[:cut]
            if mod in files or mod in inline:
                rest = path[cut:]
                if not rest or seen > 8:
                    return inline.get(mod, mod)
                name = rest[0]
                if name in items.get(mod, ()):
                    return inline.get(mod, mod)
                if name in reexports[mod]:
                    target = reexports[mod][name] + rest[1:]
                    return resolve(target, seen + 1)
                return inline.get(mod, mod)
        return None

    edges = defaultdict(set)
    for m, fm, text in regions:
        paths = []
        for u in USE.finditer(text):
            paths += [p for p in expand(u.group(2))]
        for p in PATH.finditer(text):
            paths.append(p.group(1) + p.group(2))
        # A bare path into a child module (`guard::register(m)` in lib.rs) is an import too,
        # unless a `use` of another crate brought that name in (`use pidguard::guard;`).
        shadowed = set()
        for u in USE.finditer(text):
            for q in expand(u.group(2)):
                segs = q.split("::")
                if segs[0] not in ("crate", "self", "super") and absolute(m, q) is None:
                    shadowed.add(segs[-1])
        for b in BARE.finditer(text):
            name = b.group(1)
            if name not in shadowed and (m + (name,) in files or m + (name,) in inline):
                paths.append("self::" + name + b.group(2))
        for p in paths:
            a = absolute(m, p)
            if a is None:
                continue
            t = resolve(a)
            if t is not None and t != fm:
                edges[fm].add(t)

    def report(nodes, edges, name):
        # Tarjan's strongly connected components.
        index, low, stack, on, sccs, counter = {}, {}, [], set(), [], [0]

        def visit(v):
            index[v] = low[v] = counter[0]
            counter[0] += 1
            stack.append(v)
            on.add(v)
            for w in sorted(edges.get(v, ())):
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
                sccs.append(comp)

        sys.setrecursionlimit(10000)
        for v in sorted(nodes):
            if v not in index:
                visit(v)
        comp_of = {v: i for i, c in enumerate(sccs) for v in c}
        floor = {}
        for i, c in enumerate(sccs):  # Tarjan emits components in reverse topological order
            deps = {comp_of[w] for v in c for w in edges.get(v, ()) if comp_of[w] != i}
            floor[i] = 1 + max((floor[d] for d in deps), default=-1)
        arrows = sum(len(edges.get(v, ())) for v in nodes)
        # Arrows that run back up: the back edges of a depth-first walk (sorted, so the same every
        # run). Taking them away leaves no circle; each names one import to turn around.
        up, state = [], {}

        def walk(v):
            state[v] = 1
            for w in sorted(edges.get(v, ())):
                if state.get(w) == 1:
                    up.append((v, w))
                elif w not in state:
                    walk(w)
            state[v] = 2

        for v in sorted(nodes):
            if v not in state:
                walk(v)
        circles = [c for c in sccs if len(c) > 1]
        print(f"== {name}: {len(nodes)} nodes, {1 + max(floor.values(), default=-1)} floors, "
              f"{arrows} arrows, {len(up)} running back up, {len(circles)} circles ==")
        by_floor = defaultdict(list)
        for v in nodes:
            by_floor[floor[comp_of[v]]].append(v)
        for f in sorted(by_floor):
            print(f"  floor {f}: " + ", ".join(sorted(by_floor[f])))
        for c in circles:
            print("  circle: " + " <-> ".join(sorted(c)))
        for v, w in sorted(up):
            print(f"  back up: {v} -> {w}")
        return len(circles)

    label = {m: files[m] for m in files}
    fnodes = set(label.values())
    fedges = {label[m]: {label[t] for t in ts} for m, ts in edges.items()}
    n = report(fnodes, fedges, "files")
    top = lambda m: m[0] if m else "lib"  # noqa: E731
    tnodes = {top(m) for m in files}
    tedges = defaultdict(set)
    for m, ts in edges.items():
        for t in ts:
            if top(m) != top(t) and top(m) != "lib" and top(t) != "lib":
                tedges[top(m)].add(top(t))
    n += report(tnodes - {"lib"}, tedges, "top-level modules")
    if check and n:
        sys.exit(1)


if __name__ == "__main__":
    main()
