"""The layers hold: no import cycle, the sandbox reached only through the connect module,
private modules kept to their package (docs/architecture.md)."""

from __future__ import annotations

import pytest

from tests.architecture._graph import Graph, build

# the only modules outside songlab/sandbox/ that may import it
SANDBOX_DOORS = {"songlab._connect"}
# layers, lowest first: a module may import its own layer and the ones below
LAYERS: list[set[str]] = [
    {"songlab.spec", "songlab.localfiles", "songlab.params"},
    {"songlab.pricing", "songlab.codec"},
    {"songlab.client"},
    {"songlab.audio", "songlab.ledger", "songlab.listening"},
    {"songlab.widgets"},
    {"songlab._connect", "songlab.cli", "songlab.notebooks", "songlab"},
]


@pytest.fixture(scope="module")
def graph() -> Graph:
    return build()


def _package(name: str) -> str:
    """``songlab.client._base`` -> ``songlab.client``; top-level modules are their own."""
    parts = name.split(".")
    return ".".join(parts[:2])


def test_the_walk_sees_in_function_imports_and_skips_type_checking(tmp_path) -> None:
    pkg = tmp_path / "demo"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from demo import c\n"
        "def f():\n    from demo import b\n"
    )
    (pkg / "b.py").write_text("import demo.a\n")
    (pkg / "c.py").write_text("from .a import f\n")
    g = build(tmp_path, "demo")
    assert g.edges["demo.a"] == {"demo", "demo.b"}
    assert g.edges["demo.c"] == {"demo.a"}
    assert g.cycles() == [["demo.a", "demo.b"]]


def test_no_import_cycle(graph: Graph) -> None:
    assert len(graph.files) > 150  # the walk found the package
    assert graph.cycles() == []


def test_only_the_connect_module_imports_the_sandbox(graph: Graph) -> None:
    outside = {
        name: sorted(targets)
        for name, targets in graph.importers_of("songlab.sandbox").items()
        if not name.startswith("songlab.sandbox") and name not in SANDBOX_DOORS
    }
    assert outside == {}
    assert "songlab._connect" in graph.importers_of("songlab.sandbox")


def test_private_modules_stay_in_their_package(graph: Graph) -> None:
    """``songlab.P._x`` (or anything under ``songlab.P._sub``) is imported only inside P."""
    leaks = {}
    for name, targets in graph.edges.items():
        for target in targets:
            parts = target.split(".")
            private = any(p.startswith("_") and not p.startswith("__") for p in parts[2:])
            if private and _package(target) != _package(name):
                leaks.setdefault(name, []).append(target)
    assert leaks == {}


def test_layers_point_one_way(graph: Graph) -> None:
    rank = {pkg: level for level, pkgs in enumerate(LAYERS) for pkg in pkgs}
    upward = {}
    for name, targets in graph.edges.items():
        here = rank.get(_package(name) if name != "songlab" else name)
        if here is None:
            continue
        for target in targets:
            there = rank.get(_package(target) if target != "songlab" else target)
            if there is not None and there > here:
                upward.setdefault(name, []).append(target)
    assert upward == {}


def test_every_module_belongs_to_a_layer_or_the_sandbox(graph: Graph) -> None:
    known = {pkg for layer in LAYERS for pkg in layer}
    strays = sorted(
        name
        for name in graph.files
        if _package(name) not in known
        and name != "songlab"
        and not name.startswith("songlab.sandbox")
    )
    assert strays == []
