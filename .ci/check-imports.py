#!/usr/bin/env python3
"""Fails when modules import each other, directly or through others, outside one module's subtree.

A module is one file under src/. An import is, outside `#[cfg(test)]` modules (unit tests may reach
anywhere):
- any `crate::` path, in a `use` (grouped imports too, nested to any depth:
  `use crate::{index::{copies, paragraphs}, plan::Plan}`) or fully qualified in a body;
- any `super::` or `self::` path, read as the `crate::` path it stands for;
- a bare path into a child module the file declares (`mod compact;` then `compact::run(..)`).
Each points at the longest prefix that is a module file.

A cycle (a strongly connected component of more than one module) is allowed only through one
module's subtree root: a folder's `mod.rs` and the modules under it may call each other (a parent
runs its children, which share its helpers). The cycles left among the children once their parent
is taken out are checked the same way, so two siblings that call each other (directly, or
through a third) fail even when both also call their parent. Any other cycle (across folders,
or between siblings) is printed, and the script fails.
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


def use_tree(text, i):
    """The paths of the use tree at text[i:] (after `crate::`): each a list of segments."""
    out, path = [], []
    while i < len(text):
        m = re.match(r"\s*([A-Za-z_]\w*)\s*", text[i:])
        if m:
            path.append(m.group(1))
            i += m.end()
            if text.startswith("::", i):
                i += 2
                continue
            alias = re.match(r"as\s+\w+\s*", text[i:])
            i += alias.end() if alias else 0
            out.append(path)
            return out, i
        if text.startswith("{", i):
            i += 1
            while True:
                sub, i = use_tree(text, i)
                out.extend(path + s for s in sub)
                i += len(text[i:]) - len(text[i:].lstrip())
                if text.startswith(",", i):
                    i += 1
                    i += len(text[i:]) - len(text[i:].lstrip())
                    if text.startswith("}", i):
                        return out, i + 1
                    continue
                if text.startswith("}", i):
                    return out, i + 1
                return out, i
        if text.startswith("*", i) or not path:
            out.append(path)
            return out, i + 1
        out.append(path)
        return out, i
    return out, i


def imports(path):
    module = module_of(path)
    text = path.read_text()
    text = re.split(r"#\[cfg\(test\)\]\s*(?:pub\(crate\) )?mod tests", text)[0]
    text = re.sub(r"//.*", "", text)
    children = re.findall(r"^\s*(?:pub(?:\([\w:]+\))? )?mod (\w+);", text, re.M)
    for c in children:
        if module_of_child(module, c) in files:
            text = re.sub(rf"(?<![\w:]){c}::", f"crate::{module_of_child(module, c)}::", text)
    text = absolute(text, module)
    found = set()
    for m in re.finditer(r"crate::", text):
        paths, _ = use_tree(text, m.end())
        for p in paths:
            p = [s for s in p if s != "self"]
            t = target(p)
            if t:
                found.add(t)
    return found


def module_of_child(module, child):
    return f"{module}::{child}" if module else child


graph = {m: imports(p) - {m} for m, p in files.items()}

def cycles(nodes):
    """Strongly connected components of more than one module among `nodes` (Tarjan)."""
    index, low, on, stack, sccs, counter = {}, {}, set(), [], [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v] & nodes:
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

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return sccs


def subtree_root(comp):
    """The module of the cycle that holds all the others under it, if one does."""
    return next((r for r in comp if all(m == r or m.startswith(r + "::") for m in comp)), None)


def outside_one_subtree(comp):
    """The cycles of `comp` not allowed: itself when no module of it holds the rest; else those
    left among the others once that root is taken out, checked the same way."""
    root = subtree_root(comp)
    if root is None:
        return [comp]
    return [bad for c in cycles(set(comp) - {root}) for bad in outside_one_subtree(c)]


sys.setrecursionlimit(10000)
sccs = cycles(set(graph))
bad = [b for c in sccs for b in outside_one_subtree(c)]
for c in bad:
    print("import cycle outside one module's subtree: " + " <-> ".join(c))
    for m in c:
        print(f"  {m} imports " + ", ".join(sorted(graph[m] & set(c))))
edges = sum(len(v) for v in graph.values())
print(
    f"check-imports: {len(files)} modules, {edges} imports, {len(sccs)} cycles through a subtree's "
    f"root, {len(bad)} outside one"
)
sys.exit(1 if bad else 0)
