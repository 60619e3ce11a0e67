"""songlab's import graph, read from the source with ``ast`` (nothing is imported).

Every ``import`` and ``from ... import`` statement counts, at module level or inside a
function; only those under ``if TYPE_CHECKING:`` are left out (they never run).
``from pkg import name`` is an edge to ``pkg`` (its ``__init__`` runs) and, when ``name`` is a
submodule, to ``pkg.name`` too. ``from pkg.mod import name`` is an edge to ``pkg.mod`` only:
the parents' ``__init__`` files run first as well, but a package importing its own
submodules is how packages work, not a cycle.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"


@dataclass
class Graph:
    """Modules by dotted name, with the songlab modules each one imports (``edges``), the
    top-level outside packages it imports (``external``: ``pandas`` for ``import pandas.api``)
    and the names it takes from songlab modules (``names``: ``(module, name)`` of each
    ``from songlab.x import name``)."""

    files: dict[str, Path] = field(default_factory=dict)
    packages: set[str] = field(default_factory=set)
    edges: dict[str, set[str]] = field(default_factory=dict)
    external: dict[str, set[str]] = field(default_factory=dict)
    names: dict[str, set[tuple[str, str]]] = field(default_factory=dict)

    def reachable(self, roots: set[str]) -> set[str]:
        """``roots`` and every songlab module they import, directly or not."""
        seen, todo = set(roots), list(roots)
        while todo:
            for child in self.edges.get(todo.pop(), ()):
                if child not in seen:
                    seen.add(child)
                    todo.append(child)
        return seen

    def cycles(self) -> list[list[str]]:
        """The strongly connected components of more than one module (Tarjan), sorted."""
        index: dict[str, int] = {}
        low: dict[str, int] = {}
        stack: list[str] = []
        on_stack: set[str] = set()
        found: list[list[str]] = []
        counter = 0

        def visit(root: str) -> None:
            # iterative Tarjan: a deep package would overflow the recursion limit
            nonlocal counter
            work = [(root, iter(sorted(self.edges[root])))]
            index[root] = low[root] = counter
            counter += 1
            stack.append(root)
            on_stack.add(root)
            while work:
                node, children = work[-1]
                for child in children:
                    if child not in index:
                        index[child] = low[child] = counter
                        counter += 1
                        stack.append(child)
                        on_stack.add(child)
                        work.append((child, iter(sorted(self.edges[child]))))
                        break
                    if child in on_stack:
                        low[node] = min(low[node], index[child])
                else:
                    work.pop()
                    if work:
                        parent = work[-1][0]
                        low[parent] = min(low[parent], low[node])
                    if low[node] == index[node]:
                        component = []
                        while True:
                            member = stack.pop()
                            on_stack.discard(member)
                            component.append(member)
                            if member == node:
                                break
                        if len(component) > 1 or node in self.edges[node]:
                            found.append(sorted(component))

        for name in sorted(self.edges):
            if name not in index:
                visit(name)
        return sorted(found)

    def importers_of(self, prefix: str) -> dict[str, set[str]]:
        """Modules importing ``prefix`` or anything under it, with what they import."""
        out: dict[str, set[str]] = {}
        for name, targets in self.edges.items():
            hit = {t for t in targets if t == prefix or t.startswith(prefix + ".")}
            if hit:
                out[name] = hit
        return out


class _Imports(ast.NodeVisitor):
    def __init__(self) -> None:
        self.nodes: list[ast.Import | ast.ImportFrom] = []

    def visit_If(self, node: ast.If) -> None:
        test = node.test
        if (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
            isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
        ):
            for child in node.orelse:
                self.visit(child)
            return
        self.generic_visit(node)

    def visit_Import(self, node: ast.Import) -> None:
        self.nodes.append(node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        self.nodes.append(node)


def _known(graph: Graph, dotted: str) -> str | None:
    """The module ``dotted`` names, or the nearest songlab module above it."""
    while dotted and dotted not in graph.files:
        dotted = dotted.rpartition(".")[0]
    return dotted or None


def build(src: Path = SRC, top: str = "songlab") -> Graph:
    graph = Graph()
    for path in sorted((src / top).rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
            graph.packages.add(".".join(parts))
        graph.files[".".join(parts)] = path
    for name, path in graph.files.items():
        visitor = _Imports()
        visitor.visit(ast.parse(path.read_text(encoding="utf-8"), str(path)))
        here = name.split(".") if name in graph.packages else name.split(".")[:-1]
        targets: set[str] = set()
        outside: set[str] = set()
        taken: set[tuple[str, str]] = set()
        for node in visitor.nodes:
            if isinstance(node, ast.Import):
                candidates = [alias.name for alias in node.names]
            else:
                if node.level:
                    base = here[: len(here) - node.level + 1]
                    module = ".".join(base + ([node.module] if node.module else []))
                else:
                    module = node.module or ""
                if module == top or module.startswith(top + "."):
                    taken |= {(module, alias.name) for alias in node.names}
                candidates = [module] + [f"{module}.{alias.name}" for alias in node.names]
                candidates = [candidates[0]] + [c for c in candidates[1:] if c in graph.files]
            outside |= {
                c.split(".")[0]
                for c in candidates
                if c and c != top and not c.startswith(top + ".")
            }
            for candidate in candidates:
                if candidate == top or candidate.startswith(top + "."):
                    known = _known(graph, candidate)
                    if known and known != name:
                        targets.add(known)
        graph.edges[name] = targets
        graph.external[name] = outside
        graph.names[name] = taken
    return graph
