"""The layers hold: no import cycle, the sandbox reached only through the connect module,
private modules and private names kept to their package, a client that knows no frame, no
screen and no plot (docs/architecture.md)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from tests.architecture._graph import Graph, build

# the only modules outside songlab/sandbox/ that may import it
SANDBOX_DOORS = {"songlab._connect"}
# layers, lowest first: a module may import its own layer and the ones below
LAYERS: list[set[str]] = [
    {"songlab.spec", "songlab.localfiles", "songlab.params", "songlab.lazy", "songlab.figures"},
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
    (pkg / "d.py").write_text(
        "import pandas.api\n"
        "from demo.a import f, _hidden\n"
        "def g():\n    from IPython import display\n"
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    import matplotlib\n"
    )
    g = build(tmp_path, "demo")
    assert g.edges["demo.a"] == {"demo", "demo.b"}
    assert g.edges["demo.c"] == {"demo.a"}
    assert g.cycles() == [["demo.a", "demo.b"]]
    assert g.external["demo.d"] == {"pandas", "IPython", "typing"}  # in-function too
    assert g.names["demo.d"] == {("demo.a", "f"), ("demo.a", "_hidden")}
    assert g.reachable({"demo.c"}) == {"demo", "demo.a", "demo.b", "demo.c"}


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


# What the client never needs: it returns typed results, and the widgets (screens), the
# ledger (frames) and audio (plots) above it subscribe to its events (issue 29).
NOT_IN_THE_CLIENT = {"pandas", "ipywidgets", "IPython", "matplotlib"}


def test_the_client_imports_no_frame_screen_or_plot(graph: Graph) -> None:
    """No module of songlab.client, nor any songlab module it reaches, imports pandas,
    ipywidgets, IPython or matplotlib, at module level or inside a function."""
    client = {name for name in graph.files if _package(name) == "songlab.client"}
    assert len(client) > 20
    found = {
        name: sorted(graph.external[name] & NOT_IN_THE_CLIENT)
        for name in sorted(graph.reachable(client))
        if graph.external[name] & NOT_IN_THE_CLIENT
    }
    assert found == {}


def test_using_the_client_loads_no_frame_screen_or_plot() -> None:
    """The same, as run: a create, a wait and a batch on a scripted transport, then none of
    those packages is in ``sys.modules`` (a lazy import the walk could not see would be)."""
    script = textwrap.dedent(
        """
        import sys, httpx
        from songlab.client import Client
        def answer(request):
            if request.url.path == "/v1/tools":
                tool = {"id": "t", "model": "v5", "operation": "write_lyrics"}
                return httpx.Response(200, json={"data": [tool]})
            if request.method == "POST":
                return httpx.Response(201, json={"task_id": "task-1", "status": "queued"})
            return httpx.Response(200, json={"task_id": "task-1", "status": "completed"})
        c = Client("sk-x", base_url="http://svc.test", transport=httpx.MockTransport(answer),
                   record=False, cache=False, quiet=True)
        c.generations.create(operation="write_lyrics", model="v5", payload={"prompt": "x"})
        c.generations.wait("task-1", use_stream=False)
        rows = c.batch([{"operation": "write_lyrics", "model": "v5",
                         "payload": {"prompt": "y"}}], on_progress=print)
        assert rows.rows[0].status == "completed", rows
        print(sorted(m for m in ("pandas", "ipywidgets", "IPython", "matplotlib")
                     if m in sys.modules))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    ).stdout
    assert out.strip().splitlines()[-1] == "[]", out


def test_no_module_imports_a_private_name_of_another_package(graph: Graph) -> None:
    """``from songlab.P import _name`` (a function, a class, a constant) only inside P, as
    with private modules; a private module taken by name is the rule above."""
    leaks = {}
    for name, taken in graph.names.items():
        for module, imported in taken:
            private = imported.startswith("_") and not imported.startswith("__")
            is_module = f"{module}.{imported}" in graph.files
            if private and not is_module and _package(module) != _package(name):
                leaks.setdefault(name, []).append(f"{module}.{imported}")
    assert leaks == {}
