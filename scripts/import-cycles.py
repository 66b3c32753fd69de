#!/usr/bin/env python3
"""Finds import cycles between the modules of each Rust library of the
workspace (crates/core, ffi, expo, exporter, push and testkit, and
bindings/node) and of the Python package, and exits 1 naming each one (0
when the graphs are acyclic).

    scripts/import-cycles.py [-v]      -v also prints every edge

Eight graphs are checked, each on its own:

- Each Rust library's src (`RUST_CRATES`), one graph each: a node is a
  module of the crate root (`mod x;` in lib.rs: the file x.rs, or
  every file of the directory module x/, which its `mod` declarations
  reach, `#[path]` ones included), plus lib.rs itself. A module
  depends on another when its code (outside comments and strings)
  names it by path: `use crate::x::…`, `crate::x::f()`, `use
  crate::{x, y::…}`, `$crate::x`, or a `super::` chain that climbs to
  the crate root. A name lib.rs re-exports (`crate::Error`, from `pub
  use error::Error`) counts as the module that defines it; one lib.rs
  defines itself counts as lib.rs. lib.rs depends on every module it
  declares. Test modules (inline `mod tests` included) count like any
  other code. A glob from the root (`use crate::*`, in ffi's tests)
  names no module in particular and is not followed.
- The Python package, bindings/python: its modules (python/shmetrics,
  subpackages included; a package is its __init__), with every import
  of one by another, function-local ones included (they still run, and
  still bind the two modules together); and the Rust modules of
  bindings/python/src, where lib.rs is `shmetrics._native`. A Python
  module depends on src/lib.rs when it imports shmetrics._native; a
  Rust module depends on the others it names by path (as above), and on
  each Python module of the package whose dotted name, a string
  literal, it passes to an import (`.import(py, "shmetrics.registry",
  …)`, `PyModule::import(py, "…")`).

Importing `shmetrics.x` runs the package's __init__ first; that implicit
edge to `shmetrics` is not counted (the package imports everything, so
every module would be in one cycle with it), nor are imports by a name
computed at run time (importlib.import_module(variable)).

The cycles are the strongly connected components of more than one node
(Tarjan); for each, every edge inside it is listed with where it comes
from, so the cycle can be read off and cut."""

from __future__ import annotations

import ast
import os
import re
import sys
from typing import Dict, Iterator, List, Optional, Set, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (source node, target node) -> ["file:line", ...]
Edges = Dict[Tuple[str, str], List[str]]


# --- Rust ------------------------------------------------------------------

def strip_rust(text: str) -> Tuple[str, List[Tuple[int, str]]]:
    """``text`` with comments and string/char literals blanked (newlines
    kept, so offsets and line numbers stay), and the string literals'
    contents with their offsets."""
    out = list(text)
    strings: List[Tuple[int, str]] = []
    i, n = 0, len(text)

    def blank(a: int, b: int) -> None:
        for k in range(a, b):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            blank(i, j)
            i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            blank(i, j)
            i = j
        elif (m := re.compile(r'b?r(#*)"').match(text, i)) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            end = '"' + m.group(1)
            j = text.find(end, m.end())
            j = n if j < 0 else j
            strings.append((i, text[m.end():j]))
            blank(i, j + len(end))
            i = j + len(end)
        elif c == '"':
            j, buf = i + 1, []
            while j < n and text[j] != '"':
                if text[j] == "\\":
                    buf.append(text[j:j + 2])
                    j += 2
                else:
                    buf.append(text[j])
                    j += 1
            strings.append((i, "".join(buf)))
            blank(i, j + 1)
            i = j + 1
        elif c == "'":
            # A char literal ('x', '\n', '\u{1F600}', '"'), else a lifetime.
            if i + 1 < n and text[i + 1] == "\\":
                j = text.find("'", i + 3)
                blank(i, j + 1)
                i = j + 1
            elif i + 2 < n and text[i + 2] == "'":
                blank(i, i + 3)
                i += 3
            else:
                i += 1
        else:
            i += 1
    return "".join(out), strings


IDENT = r"(?:r#)?[A-Za-z_][A-Za-z0-9_]*"


def tree_heads(text: str, pos: int) -> List[str]:
    """The first segment of each path of the use tree (or path) that starts
    at ``pos``: ``x::y`` gives x, ``{x::y, z, self}`` gives x, z, self."""
    m = re.compile(r"\s*(" + IDENT + r"|\{|\*)").match(text, pos)
    if not m:
        return []
    if m.group(1) == "*":
        return ["*"]
    if m.group(1) != "{":
        return [m.group(1).removeprefix("r#")]
    heads: List[str] = []
    j, depth, start = m.end(), 1, m.end()
    while j < len(text) and depth:
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
        if depth == 1 and text[j] == "," or depth == 0:
            part = re.compile(r"\s*(" + IDENT + r"|\*)").match(text, start)
            if part:
                heads.append(part.group(1).removeprefix("r#"))
            start = j + 1
        j += 1
    return heads


def inline_mod_depth(text: str) -> List[int]:
    """For each offset of stripped ``text``, how many inline ``mod x { }``
    blocks enclose it."""
    depth_at = [0] * (len(text) + 1)
    opens = {m.end() - 1 for m in re.finditer(r"\bmod\s+" + IDENT + r"\s*\{", text)}
    stack: List[bool] = []
    depth = 0
    for i, c in enumerate(text):
        if c == "{":
            stack.append(i in opens)
            depth += i in opens
        elif c == "}" and stack:
            depth -= stack.pop()
        depth_at[i + 1] = depth
    return depth_at


class RustCrate:
    """The module files of one crate's src directory, by top-level module."""

    def __init__(self, src: str, label: str) -> None:
        self.src = src
        self.label = label
        self.lib = os.path.join(src, "lib.rs")
        # file -> (node, module depth: lib.rs 0, a top-level module 1, ...)
        self.files: Dict[str, Tuple[str, int]] = {}
        # top-level module name -> node
        self.modules: Dict[str, str] = {}
        self.texts: Dict[str, Tuple[str, List[Tuple[int, str]], str]] = {}
        self.files[self.lib] = ("lib.rs", 0)
        self._walk(self.lib, "lib.rs", 0, is_mod_rs=True)
        # Names lib.rs defines or re-exports -> node.
        self.root_names: Dict[str, str] = {}
        self._root_names()

    def read(self, path: str) -> Tuple[str, List[Tuple[int, str]], str]:
        if path not in self.texts:
            with open(path, encoding="utf-8") as f:
                raw = f.read()
            stripped, strings = strip_rust(raw)
            self.texts[path] = (stripped, strings, raw)
        return self.texts[path]

    def node_name(self, name: str, path: str) -> str:
        rel = os.path.relpath(path, self.src)
        return rel if os.path.basename(path) != "mod.rs" else os.path.dirname(rel) + "/"

    def _walk(self, path: str, node: str, depth: int, is_mod_rs: bool) -> None:
        stripped, _, raw = self.read(path)
        inline = inline_mod_depth(stripped)
        paths = {m.group(2): m.group(1) for m in re.finditer(
            r'#\[path\s*=\s*"([^"]+)"\][^;{]*?\bmod\s+(' + IDENT + r")\s*;", raw)}
        base = os.path.dirname(path) if is_mod_rs else os.path.splitext(path)[0]
        for m in re.finditer(r"\bmod\s+(" + IDENT + r")\s*;", stripped):
            if inline[m.start()]:
                continue  # a file module inside an inline one: none here
            name = m.group(1).removeprefix("r#")
            if name in paths:
                child, child_mod_rs = os.path.join(os.path.dirname(path), paths[name]), False
            elif os.path.exists(os.path.join(base, name + ".rs")):
                child, child_mod_rs = os.path.join(base, name + ".rs"), False
            else:
                child, child_mod_rs = os.path.join(base, name, "mod.rs"), True
            child_node = node
            if depth == 0:
                child_node = self.node_name(name, child)
                self.modules[name] = child_node
            self.files[child] = (child_node, depth + 1)
            self._walk(child, child_node, depth + 1, child_mod_rs)

    def _root_names(self) -> None:
        stripped, _, _ = self.read(self.lib)
        for m in re.finditer(r"\bpub(?:\([^)]*\))?\s+use\s+(?:crate::)?", stripped):
            self._reexports(stripped, m.end())
        for m in re.finditer(r"\bpub(?:\([^)]*\))?\s+(?:const|static|fn|struct|enum|type|trait|union)\s+(" + IDENT + ")",
                             stripped):
            self.root_names.setdefault(m.group(1), "lib.rs")
        for name, node in self.modules.items():
            self.root_names[name] = node

    def _reexports(self, text: str, pos: int) -> None:
        """Adds the names that ``pub use <tree>;`` at ``pos`` brings into the
        root, each with the top-level module it comes from."""
        end = text.find(";", pos)
        tree = text[pos:end]
        head = re.match(r"\s*(" + IDENT + ")", tree)
        if not head or head.group(1) not in self.modules:
            return
        node = self.modules[head.group(1)]
        for leaf in re.findall(r"(" + IDENT + r")\s*(?:as\s+(" + IDENT + r"))?\s*(?=[,}]|$)", tree):
            self.root_names[(leaf[1] or leaf[0]).removeprefix("r#")] = node

    def resolve_root(self, head: str) -> Optional[str]:
        """The node a path from the crate root whose first segment is
        ``head`` leads to (None: outside the crate, or a glob)."""
        if head in ("self", "super", "*"):
            return None
        return self.root_names.get(head, "lib.rs" if head else None)

    def edges(self, edges: Edges, prefix: str = "") -> None:
        for path, (node, depth) in self.files.items():
            stripped, _, _ = self.read(path)
            inline = inline_mod_depth(stripped)
            rel = os.path.relpath(path, ROOT)

            def add(target: Optional[str], offset: int) -> None:
                if target is None or target == node:
                    return
                line = stripped.count("\n", 0, offset) + 1
                edges.setdefault((prefix + node, prefix + target), []).append(f"{rel}:{line}")

            for m in re.finditer(r"(?<![A-Za-z0-9_])\$?crate\s*::", stripped):
                for head in tree_heads(stripped, m.end()):
                    add(self.resolve_root(head), m.start())
            for m in re.finditer(r"(?<![A-Za-z0-9_:])((?:super\s*::\s*)+)", stripped):
                climbs = m.group(1).count("super")
                if depth + inline[m.start()] - climbs == 0:
                    for head in tree_heads(stripped, m.end()):
                        add(self.resolve_root(head), m.start())
            if depth == 0:
                # lib.rs names its modules directly: `mod x;`, `pub use x::…`.
                for name, target in self.modules.items():
                    for m in re.finditer(r"(?<![A-Za-z0-9_:])" + re.escape(name) + r"\s*::|\bmod\s+" + re.escape(name) + r"\s*;",
                                         stripped):
                        add(target, m.start())


# --- Python ----------------------------------------------------------------

def python_modules(pkg_dir: str, pkg: str) -> Dict[str, str]:
    """Dotted module name -> file, for every .py file of the package."""
    mods: Dict[str, str] = {}
    parent = os.path.dirname(pkg_dir)
    for dirpath, _, files in os.walk(pkg_dir):
        for f in files:
            if not f.endswith(".py"):
                continue
            path = os.path.join(dirpath, f)
            parts = os.path.relpath(path, parent)[:-3].split(os.sep)
            if parts[-1] == "__init__":
                parts.pop()
            mods[".".join(parts)] = path
    return mods


def python_edges(edges: Edges, mods: Dict[str, str], native: str, native_node: str) -> None:
    known = set(mods) | {native}

    def node(mod: str) -> str:
        return native_node if mod == native else mod

    for mod, path in mods.items():
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        is_pkg = os.path.basename(path) == "__init__.py"
        rel = os.path.relpath(path, ROOT)

        def add(target: str, line: int) -> None:
            if target in known and target != mod:
                edges.setdefault((node(mod), node(target)), []).append(f"{rel}:{line}")

        for stmt in ast.walk(tree):
            if isinstance(stmt, ast.Import):
                for alias in stmt.names:
                    add(alias.name, stmt.lineno)
            elif isinstance(stmt, ast.ImportFrom):
                if stmt.level:
                    base = mod.split(".")
                    base = base[: len(base) - stmt.level + (1 if is_pkg else 0)]
                    origin = ".".join(base + ([stmt.module] if stmt.module else []))
                else:
                    origin = stmt.module or ""
                # `from . import x` names the submodule x; the package
                # itself only for a name that is no submodule of it.
                subs = [f"{origin}.{a.name}" for a in stmt.names if f"{origin}.{a.name}" in known]
                for sub in subs:
                    add(sub, stmt.lineno)
                if len(subs) < len(stmt.names):
                    add(origin, stmt.lineno)


def rust_to_python_edges(edges: Edges, crate: RustCrate, mods: Dict[str, str], prefix: str) -> None:
    """A Rust module imports a Python module of the package when it passes
    its name, a string literal, to an import: within the call of a function
    or method named import* (``PyModule::import(py, "shmetrics.x")``,
    ``cell.import(py, "shmetrics.x", "name")``, ``py.import(intern!(py,
    "shmetrics.x"))``), in the same statement."""
    for path, (node, _) in crate.files.items():
        stripped, strings, _ = crate.read(path)
        for offset, s in strings:
            start = max(stripped.rfind(c, 0, offset) for c in ";{}")
            if s in mods and re.search(r"\bimport\w*\s*\(", stripped[start + 1:offset]):
                line = stripped.count("\n", 0, offset) + 1
                edges.setdefault((prefix + node, s), []).append(f"{os.path.relpath(path, ROOT)}:{line}")


# --- cycles ----------------------------------------------------------------

def components(edges: Edges) -> List[List[str]]:
    """Tarjan's strongly connected components of more than one node."""
    graph: Dict[str, Set[str]] = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
        graph.setdefault(b, set())
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    on_stack: Set[str] = set()
    stack: List[str] = []
    found: List[List[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def shortest_cycle(edges: Edges, members: Set[str]) -> List[str]:
    """A shortest cycle through the first of ``members`` (breadth first),
    as its nodes with the first one again at the end."""
    start = min(members)
    succ: Dict[str, List[str]] = {}
    for a, b in sorted(edges):
        if a in members and b in members:
            succ.setdefault(a, []).append(b)
    prev: Dict[str, str] = {}
    queue = [start]
    for v in queue:
        for w in succ.get(v, []):
            if w == start:
                path = [v]
                while path[-1] != start:
                    path.append(prev[path[-1]])
                return path[::-1] + [start]
            if w not in prev:
                prev[w] = v
                queue.append(w)
    return [start]


def report(title: str, edges: Edges, verbose: bool) -> int:
    comps = components(edges)
    nodes = {n for e in edges for n in e}
    print(f"{title}: {len(nodes)} modules, {len(edges)} edges, "
          + (f"{len(comps)} cycle(s)" if comps else "no cycle"))
    if verbose:
        for (a, b), where in sorted(edges.items()):
            print(f"  {a} -> {b}  ({where[0]}{', …' if len(where) > 1 else ''})")
    for comp in comps:
        members = set(comp)
        print(f"  cycle among {len(comp)} modules: {', '.join(comp)}")
        print(f"    e.g. {' -> '.join(shortest_cycle(edges, members))}")
        for (a, b), where in sorted(edges.items()):
            if a in members and b in members:
                more = f" (+{len(where) - 1} more)" if len(where) > 1 else ""
                print(f"    {a} -> {b}  at {where[0]}{more}")
    return len(comps)


# Every Rust library of the workspace but the Python binding's, which is
# checked with the Python package.
RUST_CRATES = (
    "crates/core",
    "crates/ffi",
    "crates/expo",
    "crates/exporter",
    "crates/push",
    "crates/testkit",
    "bindings/node",
)


def main(argv: List[str]) -> int:
    verbose = "-v" in argv
    cycles = 0
    for crate_dir in RUST_CRATES:
        crate = RustCrate(os.path.join(ROOT, crate_dir, "src"), crate_dir)
        edges: Edges = {}
        crate.edges(edges)
        cycles += report(f"{crate_dir}/src", edges, verbose)
    py = os.path.join(ROOT, "bindings/python")
    mods = python_modules(os.path.join(py, "python/shmetrics"), "shmetrics")
    crate = RustCrate(os.path.join(py, "src"), "bindings/python")
    edges = {}
    crate.edges(edges, prefix="src/")
    rust_to_python_edges(edges, crate, mods, prefix="src/")
    python_edges(edges, mods, "shmetrics._native", "src/lib.rs")
    cycles += report("bindings/python (shmetrics, src/)", edges, verbose)
    if cycles:
        print(f"import-cycles: {cycles} cycle(s); cut each by moving what both sides need "
              "into a module that depends on neither")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
