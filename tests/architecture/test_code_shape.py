"""Units one can hold: no function is over 80 lines (decorators and docstring included),
anywhere in src, tests, benchmarks or scripts. ruff holds the rest of the shape
(pyproject.toml: C901 at 15, PLR0915, BLE, RUF100)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MAX_LINES = 80


def long_functions(source: str) -> dict[str, int]:
    """Each function (or method) over :data:`MAX_LINES` lines -> its length."""
    out = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            length = (node.end_lineno or node.lineno) - start + 1
            if length > MAX_LINES:
                out[node.name] = length
    return out


def test_the_count_includes_decorators_and_nested_bodies() -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_LINES - 2))
    at_limit = f"@decorator\ndef f():\n{body}\n"
    assert long_functions(at_limit) == {}
    assert long_functions(at_limit + "    return 1\n") == {"f": MAX_LINES + 1}


@pytest.mark.slow  # parses every Python file of the checkout (a few CPU-seconds)
def test_no_function_over_80_lines() -> None:
    found: dict[str, dict[str, int]] = {}
    for folder in ("src", "tests", "benchmarks", "scripts"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            long = long_functions(path.read_text(encoding="utf-8"))
            if long:
                found[str(path.relative_to(ROOT))] = long
    assert found == {}, "split them: each function at most 80 lines"
