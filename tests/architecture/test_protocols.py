"""A listening protocol lives in one module (docs/architecture.md, "Where to add things").

Each protocol is one module of ``songlab.listening.protocols``, listed in the registry, and
implements every hook of the protocol contract (trials, controls, answers, rater checks,
results, statistics of one listener and of a panel, the summary, the scripted listener). Nothing
else in songlab names a protocol: no string constant equal to its name, no page script or
panel that knows it, no import of its module but the registry's (and the package's
re-export of the three historical protocols). So adding one takes its module and one line
in the registry.
"""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import pytest

from songlab.listening._page_template import TEMPLATE
from songlab.listening.registry import PROTOCOLS
from songlab.listening.session import ListeningSession
from tests.architecture._graph import SRC, build

PACKAGE = "songlab.listening.protocols"
HOOKS = (
    "_check_options",
    "_design",
    "_labels",
    "controls",
    "_check_answer",
    "_check_plan",
    "_passed",
    "_expected",
    "_rows",
    "_frame",
    "_stats",
    "panel_stats",
    "_summary",
    "_scripted",
    "_right_answer",
)
# who may import a protocol module: the registry, and the package that re-exports
# preference/abx/mushra under their old names
IMPORTERS = {"songlab.listening.registry", "songlab.listening"}


def _strings(path: Path) -> set[str]:
    """Every string constant of a module but its docstrings and its ``__all__`` (names)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                docs.add(id(body[0].value))
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AnnAssign):
            targets = [node.target]
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            docs.update(id(n) for n in ast.walk(node))
    return {
        n.value
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs
    }


def test_every_protocol_is_one_module_of_the_protocols_package() -> None:
    modules = sorted(
        p.stem for p in (SRC / "songlab/listening/protocols").glob("*.py") if p.stem != "__init__"
    )
    assert sorted(cls.__module__ for cls in PROTOCOLS.values()) == [
        f"{PACKAGE}.{m}" for m in modules
    ]
    assert len(PROTOCOLS) >= 4
    for kind, cls in PROTOCOLS.items():
        assert cls.kind == kind
        module = inspect.getmodule(cls)
        sessions = [
            obj
            for obj in vars(module).values()
            if inspect.isclass(obj)
            and issubclass(obj, ListeningSession)
            and obj.__module__ == module.__name__
        ]
        assert sessions == [cls], f"{module.__name__} defines one protocol"


@pytest.mark.parametrize("kind", sorted(PROTOCOLS))
def test_a_protocol_implements_every_hook_itself(kind: str) -> None:
    cls = PROTOCOLS[kind]
    missing = [h for h in HOOKS if getattr(cls, h) is getattr(ListeningSession, h)]
    assert missing == [], f"{kind} does not implement {missing}"


def test_nothing_outside_its_module_names_a_protocol() -> None:
    graph = build()
    own = {cls.__module__: kind for kind, cls in PROTOCOLS.items()}
    named = {}
    for name, path in graph.files.items():
        found = sorted(_strings(path) & set(PROTOCOLS) - {own.get(name)})
        if found:
            named[name] = found
    assert named == {}, "modules naming a protocol (branching on a kind string?)"
    importers = {
        name
        for name, targets in graph.edges.items()
        if any(t.startswith(PACKAGE + ".") for t in targets) and not name.startswith(PACKAGE)
    }
    assert importers <= IMPORTERS


def test_the_page_script_and_the_panel_know_no_protocol() -> None:
    panel = (SRC / "songlab/widgets/listening.py").read_text(encoding="utf-8")
    for kind in PROTOCOLS:
        word = re.compile(rf"\b{re.escape(kind)}\b", re.IGNORECASE)
        assert not word.search(TEMPLATE), f"the page script names {kind}"
        assert not word.search(panel), f"the panel names {kind}"


def test_the_rules_see_a_protocol_named_elsewhere(tmp_path) -> None:
    """The scan is not blind: a module that branches on a kind string is found."""
    path = tmp_path / "m.py"
    path.write_text('"""acr: the docstring may say it."""\nif kind == "acr":\n    pass\n')
    assert _strings(path) == {"acr"}
    path.write_text('"""Only the docstring says acr."""\n__all__ = ["acr"]\n')
    assert _strings(path) == set()
