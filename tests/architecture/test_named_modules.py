"""Every songlab module or name that pyproject.toml and the Makefile name exists (a mypy
override, a warning filter's note, a comment saying why a dependency is there)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"
DOTTED = re.compile(r"\bsonglab(?:\.[A-Za-z_][A-Za-z0-9_]*)+")


def named(text: str) -> set[str]:
    """The dotted songlab names in ``text`` (``songlab.widgets.*`` names the package)."""
    return set(DOTTED.findall(text))


def _module_file(dotted: str) -> Path | None:
    base = SRC.joinpath(*dotted.split("."))
    for path in (base / "__init__.py", base.with_suffix(".py")):
        if path.is_file():
            return path
    return None


def _defines(path: Path, name: str) -> bool:
    """The module at ``path`` binds ``name`` at its top level (read with ``ast``)."""
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            if node.name == name:
                return True
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                return True
        elif isinstance(node, ast.Import | ast.ImportFrom):
            if any((a.asname or a.name.split(".")[0]) == name for a in node.names):
                return True
    return False


def resolves(dotted: str) -> bool:
    """``dotted`` is a module of the source tree, or a name one binds at its top level
    (``songlab.ledger.display.finance``); read from the files, nothing imported."""
    if _module_file(dotted) is not None:
        return True
    module, _, name = dotted.rpartition(".")
    path = _module_file(module)
    return path is not None and _defines(path, name)


def test_the_check_finds_a_missing_module() -> None:
    assert named("# (songlab.ledger._spark) and songlab.widgets.* here") == {
        "songlab.ledger._spark",
        "songlab.widgets",
    }
    assert not resolves("songlab.ledger._spark")
    assert resolves("songlab.ledger.spark") and resolves("songlab.spec.REGISTRY")


@pytest.mark.parametrize("file", ["pyproject.toml", "Makefile"])
def test_every_songlab_name_there_exists(file: str) -> None:
    found = named((ROOT / file).read_text(encoding="utf-8"))
    assert found, f"{file} names no songlab module (the pattern broke?)"
    assert sorted(n for n in found if not resolves(n)) == []
