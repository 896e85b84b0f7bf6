"""The import graph of y9's packages, read from the source with ``ast`` (nothing is imported).

``build_graph(root, packages) -> Graph``: one ``Edge`` per import statement target. Targets are resolved the way
Python resolves them: relative imports against the importing module's package, ``from pkg import name`` to the
submodule ``pkg.name`` when that is a module of the tree (else to ``pkg``), ``import a.b.c`` to the longest
prefix that is a module of the tree. Imports of other packages (numpy, torch) keep their top-level name.
An import inside a function (at any depth) is ``lazy``; imports under ``if TYPE_CHECKING:`` never run and are
left out, unless ``build_graph(..., typing=True)`` keeps them as ``typing`` edges (a cycle through annotations is
still a knot a reader has to untie). Not seen: imports by string (``importlib.import_module(name)``,
``y9deploy.__init__``'s lazy names) and the implicit import of a module's parent packages.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

PACKAGES = ("y9", "y9core", "y9train", "y9deploy", "y9cli")


@dataclass(frozen=True)
class Edge:
    """``source`` imports ``target`` (a module of the tree, or an outside package's top-level name)."""

    source: str
    target: str
    lazy: bool
    line: int
    typing: bool = False  # under ``if TYPE_CHECKING:``: never runs

    def __str__(self) -> str:
        how = ", type checking only" if self.typing else ", lazy" if self.lazy else ""
        return f"{self.source} -> {self.target} (line {self.line}{how})"


@dataclass
class Graph:
    modules: dict[str, Path]
    edges: list[Edge] = field(default_factory=list)

    def internal(self, *, lazy: bool, typing: bool = False) -> dict[str, set[str]]:
        """Adjacency between modules of the tree: module-level imports, lazy ones too when ``lazy``, and those
        under ``if TYPE_CHECKING:`` too when ``typing``."""
        adj: dict[str, set[str]] = {m: set() for m in self.modules}
        for e in self.edges:
            if e.target in self.modules and (lazy or not e.lazy) and (typing or not e.typing):
                adj[e.source].add(e.target)
        return adj


def module_files(root: Path, packages: Iterable[str]) -> dict[str, Path]:
    """Dotted module name -> file for every ``.py`` under ``root/<package>`` (``__init__.py`` is the package)."""
    out = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.Module) -> list[tuple[ast.Import | ast.ImportFrom, bool, bool]]:
    """Every import statement with whether it sits inside a function and whether under ``if TYPE_CHECKING:``."""
    found: list[tuple[ast.Import | ast.ImportFrom, bool, bool]] = []

    def visit(node: ast.AST, in_function: bool, typing: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                for other in child.body:
                    visit_one(other, in_function, True)
                for other in child.orelse:
                    visit_one(other, in_function, typing)
                continue
            visit_one(child, in_function, typing)

    def visit_one(node: ast.AST, in_function: bool, typing: bool) -> None:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append((node, in_function, typing))
        visit(node, in_function or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)), typing)

    visit(tree, False, False)
    return found


def _longest_module(name: str, modules: dict[str, Path]) -> str:
    parts = name.split(".")
    for n in range(len(parts), 0, -1):
        if ".".join(parts[:n]) in modules:
            return ".".join(parts[:n])
    return parts[0]  # an outside package: its top-level name


def _targets(node: ast.Import | ast.ImportFrom, module: str, is_package: bool, modules: dict[str, Path]) -> list[str]:
    if isinstance(node, ast.Import):
        return [_longest_module(alias.name, modules) for alias in node.names]
    if node.level:
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        prefix = ".".join(base + ([node.module] if node.module else []))
    else:
        prefix = node.module or ""
    out = []
    for alias in node.names:
        sub = f"{prefix}.{alias.name}"
        out.append(sub if sub in modules else _longest_module(prefix, modules))
    return out


def build_graph(root: Path, packages: Iterable[str] = PACKAGES, *, typing: bool = False) -> Graph:
    """The import graph of ``packages`` (folders under ``root``); with ``typing``, the imports under
    ``if TYPE_CHECKING:`` too (flagged ``typing``)."""
    graph = Graph(module_files(root, packages))
    for module, path in graph.modules.items():
        tree = ast.parse(path.read_text(), str(path))
        is_package = path.name == "__init__.py"
        for node, lazy, type_only in _imports(tree):
            if type_only and not typing:
                continue
            for target in _targets(node, module, is_package, graph.modules):
                if target != module:
                    graph.edges.append(Edge(module, target, lazy, node.lineno, type_only))
    return graph


def cycles(adj: dict[str, set[str]]) -> list[list[str]]:
    """One cycle (a list of modules, first == last) for each strongly connected group of more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def strongconnect(v: str) -> None:  # Tarjan's algorithm, iterative over each node's successors
        work = [(v, iter(sorted(adj[v])))]
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        while work:
            node, successors = work[-1]
            for w in successors:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(adj[w]))))
                    break
                if w in on_stack:
                    low[node] = min(low[node], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        group.append(w)
                        if w == node:
                            break
                    if len(group) > 1:
                        groups.append(sorted(group))

    for v in sorted(adj):
        if v not in index:
            strongconnect(v)
    return sorted(_one_cycle(group, adj) for group in groups)


def _one_cycle(group: list[str], adj: dict[str, set[str]]) -> list[str]:
    """A shortest cycle through the first module of a strongly connected ``group`` (breadth-first)."""
    members, start = set(group), group[0]
    parent: dict[str, str] = {}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(adj[v] & members):
                if w == start:
                    chain = [v]  # v, its parent, ... back to start
                    while chain[-1] != start:
                        chain.append(parent[chain[-1]])
                    return [*reversed(chain), start]
                if w not in parent:
                    parent[w] = v
                    nxt.append(w)
        frontier = nxt
    raise AssertionError(f"{group} is not strongly connected")


def in_package(module: str, prefixes: Iterable[str]) -> bool:
    """``module`` is one of ``prefixes`` or inside one of them (dotted components, not text prefixes)."""
    return any(module == p or module.startswith(p + ".") for p in prefixes)
