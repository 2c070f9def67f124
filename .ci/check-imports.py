#!/usr/bin/env python3
"""Fails when two or more source modules import each other, directly or through others.

A module is one file under src/. An import is any `crate::a::b` path outside `#[cfg(test)]`
modules (unit tests may reach anywhere), in a `use` or fully qualified in a function body, and any
`super::` or `self::` path, read as the `crate::` path it stands for; it points at the longest
prefix that is a module file.
Prints each cycle (a strongly connected component of more than one module).
"""
import pathlib
import re
import sys

SRC = pathlib.Path(__file__).resolve().parent.parent / "src"


def module_of(path):
    rel = path.relative_to(SRC).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] in ("mod", "lib", "main"):
        parts = parts[:-1]
    return "::".join(parts)


files = {module_of(p): p for p in SRC.rglob("*.rs") if "bin" not in p.relative_to(SRC).parts}


def target(path_parts):
    for n in range(len(path_parts), 0, -1):
        name = "::".join(path_parts[:n])
        if name in files:
            return name
    return None


def absolute(text, module):
    """`super::` and `self::` paths written as the `crate::` paths they stand for."""
    parts = module.split("::") if module else []

    def repl(m):
        ups = m.group(0).count("super")
        base = parts[: len(parts) - ups] if ups else parts
        return "crate::" + "".join(p + "::" for p in base)

    return re.sub(r"(?<![\w:])(?:self::|(?:super::)+)", repl, text)


def imports(path):
    text = path.read_text()
    text = re.split(r"#\[cfg\(test\)\]\s*mod tests", text)[0]
    text = re.sub(r"//.*", "", text)
    text = absolute(text, module_of(path))
    found = set()
    for m in re.finditer(r"crate::([A-Za-z_][\w:]*)(::\{([^}]*)\})?", text):
        base = [p for p in m.group(1).split("::") if p]
        groups = [g.strip().split("::")[0] for g in (m.group(3) or "").split(",") if g.strip()]
        for g in groups or [None]:
            t = target(base + ([g] if g and g != "self" else []))
            if t:
                found.add(t)
    return found


graph = {m: imports(p) - {m} for m, p in files.items()}

# Tarjan's strongly connected components.
index, low, on, stack, sccs, counter = {}, {}, set(), [], [], [0]


def visit(v):
    index[v] = low[v] = counter[0]
    counter[0] += 1
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
            sccs.append(sorted(comp))


sys.setrecursionlimit(10000)
for v in sorted(graph):
    if v not in index:
        visit(v)
for c in sccs:
    print("import cycle: " + " <-> ".join(c))
    for m in c:
        print(f"  {m} imports " + ", ".join(sorted(graph[m] & set(c))))
print(f"check-imports: {len(files)} modules, {len(sccs)} cycles")
sys.exit(1 if sccs else 0)
