"""The sandbox is assembled in one place: build() wires the parts; no module reaches back.

The import rule of issue 23 for the sandbox, checked on the source: no import cycle,
counting in-function imports (``TYPE_CHECKING`` ones aside) and counting ``from pkg
import x`` as importing ``pkg``'s ``__init__`` (so no sandbox module may import the
``songlab.sandbox`` package, whose ``__init__`` imports the server, and no engine
module may import a sibling through the engine package).
"""

from __future__ import annotations

import ast
import pathlib

import songlab.sandbox
from songlab.sandbox import Sandbox, build
from songlab.sandbox.config import DEMO_ACCOUNT_ID, DEMO_API_KEY, SandboxConfig
from songlab.sandbox.tasks.creates import Creates

ROOT = pathlib.Path(songlab.sandbox.__file__).parent


def _module_name(path: pathlib.Path) -> str:
    parts = path.relative_to(ROOT.parent.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in ROOT.rglob("*.py")}


def _under_type_checking(node: ast.If) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
        isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING"
    )


def _edges(name: str, path: pathlib.Path) -> set[str]:
    """The sandbox modules ``name`` imports, in-function ones too (TYPE_CHECKING aside);
    ``from pkg import x`` imports ``pkg`` (its ``__init__``) and ``pkg.x`` if a module."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _under_type_checking(node):
            for n in node.orelse:
                visit(n)
            return
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            base = node.module
            if node.level:
                pkg = name if path.name == "__init__.py" else name.rpartition(".")[0]
                for _ in range(node.level - 1):
                    pkg = pkg.rpartition(".")[0]
                base = f"{pkg}.{node.module}"
            found.add(base)
            found.update(f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in MODULES)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text()))
    out = set()
    for mod in found:
        while mod and mod not in MODULES:
            mod = mod.rpartition(".")[0]
        if mod and mod != name:
            out.add(mod)
    return out


def test_public_names_are_sorted_and_importable():
    assert songlab.sandbox.__all__ == sorted(songlab.sandbox.__all__)
    assert {"SandboxServer", "serve_in_thread", "build", "Sandbox"} <= set(songlab.sandbox.__all__)
    for name in songlab.sandbox.__all__:
        assert getattr(songlab.sandbox, name) is not None


def test_the_sandbox_imports_have_no_cycle():
    graph = {name: _edges(name, path) for name, path in MODULES.items()}
    done: set[str] = set()

    def walk(name: str, trail: list[str]) -> None:
        if name in trail:
            raise AssertionError(
                "import cycle: " + " -> ".join([*trail[trail.index(name) :], name])
            )
        if name in done:
            return
        for dep in sorted(graph[name]):
            walk(dep, [*trail, name])
        done.add(name)

    assert "songlab.sandbox.tasks.worker" in graph and "songlab.sandbox.engine" in graph
    assert "songlab.sandbox.http.server" in graph["songlab.sandbox"]  # the public entry point
    for name in sorted(graph):
        walk(name, [])


def test_build_wires_the_parts_without_starting_them():
    sb = build(SandboxConfig(host="127.0.0.1", port=9))
    try:
        assert isinstance(sb, Sandbox) and isinstance(sb.creates, Creates)
        assert sb.accounts.authenticate(f"Bearer {DEMO_API_KEY}") == DEMO_ACCOUNT_ID
        assert sb.links.base_url == "http://127.0.0.1:9"
        sb.set_address("127.0.0.1", 4242)
        url, _ = sb.links.signed_url("f")
        assert url.startswith("http://127.0.0.1:4242/_signed/f.")
        before = sb.clock.now()
        sb.clock.advance(3600)  # persisted by the listener build() installed
        assert sb.store.get_meta("clock_offset") == repr(sb.clock.offset)
        assert sb.clock.now() - before >= 3600 - 1
        assert sb.worker.runners["agent"].__name__ == "run_agent"
    finally:
        sb.close()


def test_the_hot_path_and_the_route_give_one_answer_for_a_task():
    """GET /v1/generations/{id} through the raw-ASGI hot path (what uvicorn serves) and
    through the FastAPI route alone: the same status and bytes, for every case."""
    import asyncio
    import json

    import httpx

    from songlab.sandbox.catalog import tool_id
    from songlab.sandbox.http.app import create_app

    sb = build(SandboxConfig())  # not started: the task stays queued
    try:
        _, other_key = sb.accounts.create_account("other", 1000, 0)
        demo = {"Authorization": f"Bearer {DEMO_API_KEY}"}

        async def calls() -> list[tuple[int, bytes]]:
            out = []
            for app in (sb.asgi, create_app(sb)):
                transport = httpx.ASGITransport(app=app)
                async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
                    if not out:
                        r = await c.post(
                            "/v1/generations",
                            headers=demo,
                            json={
                                "tool_id": tool_id("write_lyrics", "v5"),
                                "payload_json": json.dumps({"prompt": "rain"}),
                            },
                        )
                        assert r.status_code == 201
                        task = r.json()["task_id"]
                    for headers, path in (
                        (demo, task),
                        ({"Authorization": f"Bearer {other_key}"}, task),
                        (demo, "no-such-task"),
                        ({}, task),
                        ({"Authorization": "Bearer sk-wrong"}, task),
                    ):
                        r = await c.get(f"/v1/generations/{path}", headers=headers)
                        out.append((r.status_code, r.content))
            return out

        answers = asyncio.run(calls())
        hot, route = answers[:5], answers[5:]
        assert hot == route
        assert [s for s, _ in hot] == [200, 403, 404, 401, 401]
        assert json.loads(hot[0][1])["status"] == "queued"
    finally:
        sb.close()
