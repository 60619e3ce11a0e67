"""Typed below the surface: ``Any`` stays under a budget per 1,000 lines of code in each
package of :data:`BUDGETS` (20 for the client, the sandbox and the ledger; httpx has about
12 by the same count, see docs/architecture.md).

The count, written once here and used for every figure in the docs:

- an ``Any`` is the name ``Any`` in code (``typing.Any`` however imported, in annotations,
  aliases and casts), or in a string that is a Python expression (a quoted annotation such
  as ``"dict[str, Any]"``); not in comments, docstrings or messages;
- a line of code is a line holding a token that is not a comment, a docstring or blank.

``Any`` is left only where a value is truly arbitrary JSON (the service's answers as
decoded, a task's ``raw`` dict, an error's body, a payload as the caller sent it) and in the
generic plumbing that must say "any type here" (a coroutine's send and yield types).
"""

from __future__ import annotations

import ast
import io
import tokenize
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
# package -> the most ``Any`` per 1,000 lines of code it may hold
BUDGETS: dict[str, int] = {"client": 20, "ledger": 20, "sandbox": 20}


def _docstring_lines(tree: ast.AST) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (
            isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            lines.update(range(body[0].lineno, (body[0].end_lineno or body[0].lineno) + 1))
    return lines


def _anys_in_string(text: str) -> int:
    """``Any`` names in a string literal that is itself a Python expression (a quoted type)."""
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return 0
    if not isinstance(value, str):
        return 0
    try:
        expr = ast.parse(value, mode="eval")
    except (SyntaxError, ValueError):  # ValueError: a lone surrogate, a NUL: not source code
        return 0
    return sum(1 for n in ast.walk(expr) if isinstance(n, ast.Name) and n.id == "Any")


def count(source: str) -> tuple[int, int]:
    """(``Any`` names, lines of code) of one module's source."""
    docs = _docstring_lines(ast.parse(source))
    anys = 0
    code: set[int] = set()
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type in skip or tok.type == tokenize.ENDMARKER or tok.start[0] in docs:
            continue
        code.update(range(tok.start[0], tok.end[0] + 1))
        if tok.type == tokenize.NAME and tok.string == "Any":
            anys += 1
        elif tok.type == tokenize.STRING:
            anys += _anys_in_string(tok.string)
    return anys, len(code)


def density(package: Path) -> tuple[int, int, float]:
    """(``Any`` names, lines of code, ``Any`` per 1,000 lines) over a package's modules."""
    anys = lines = 0
    for path in sorted(package.rglob("*.py")):
        a, n = count(path.read_text(encoding="utf-8"))
        anys, lines = anys + a, lines + n
    return anys, lines, 1000 * anys / max(lines, 1)


def test_the_count_reads_code_not_prose() -> None:
    source = (
        '"""A module about Any thing."""\n'
        "from typing import Any  # Any\n"
        "\n"
        "X: 'dict[str, Any]' = {}\n"
        "\n"
        "def f(a: Any) -> list[Any]:\n"
        '    """Any in a docstring."""\n'
        '    return ["Any value is fine", a]\n'
    )
    # the import, the quoted annotation, the parameter and the return: 4; 4 lines of code
    assert count(source) == (4, 4)


def test_a_string_that_is_not_source_code_counts_nothing() -> None:
    """A regex or message holding a lone surrogate (ledger/export.py has one) or a NUL is
    not a quoted type: it counts 0, where the count used to crash."""
    source = 'PATTERN = "[\\ud800-\\udfff]"\nNUL = "a\\x00b"\nX: "list[Any]" = []\n'
    assert count(source) == (1, 3)


@pytest.mark.parametrize("package", sorted(BUDGETS))
def test_any_stays_under_its_budget(package: str) -> None:
    anys, lines, per_1000 = density(SRC / "songlab" / package)
    assert lines > 1000  # the package was found
    assert per_1000 < BUDGETS[package], (
        f"songlab.{package} has {anys} Any in {lines} lines of code: {per_1000:.1f} per 1,000 "
        f"(at most {BUDGETS[package]}); type it (object, a TypedDict, the dataclass) unless "
        "the value is truly arbitrary JSON"
    )
