"""The docs' tables of what the code has (operations, compat, dedicated and workflow routes,
the client's named methods, the report's tables and options) are the ones
``scripts/docs_tables.py`` makes from the code."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _tables() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_tables", ROOT / "scripts/docs_tables.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("docs_tables", module)
    spec.loader.exec_module(module)
    return module


TABLES = _tables()
BEGIN = "<!-- BEGIN generated:{} (scripts/docs_tables.py) -->\n"
END = "<!-- END generated:{} -->"


def test_every_table_of_the_docs_is_what_the_code_makes() -> None:
    assert TABLES.stale(ROOT / "docs") == [], "run .venv/bin/python scripts/docs_tables.py"


@pytest.mark.parametrize("name", sorted(TABLES.TABLES))
def test_each_table_is_in_the_docs(name: str) -> None:
    pages = [p for p in (ROOT / "docs").rglob("*.md") if BEGIN.format(name) in p.read_text()]
    assert len(pages) == 1, f"generated:{name} is in {pages}"


def test_a_stale_table_is_rewritten_and_an_unknown_one_refused() -> None:
    text = (
        "before\n" + BEGIN.format("workflow-routes") + "| old |\n" + END.format("workflow-routes")
    )
    fresh = TABLES.rewritten(text)
    assert "| old |" not in fresh and "`POST /v1/karaoke-tracks`" in fresh
    assert TABLES.rewritten(fresh) == fresh
    with pytest.raises(KeyError, match="no table called 'nope'"):
        TABLES.rewritten(BEGIN.format("nope") + END.format("nope"))


def test_the_method_table_lists_a_method_from_each_resource() -> None:
    table = TABLES.client_methods()
    for method in ("generations.transcribe", "workflows.karaoke_track", "files.upload"):
        assert f"`client.{method}`" in table


def _generated(name: str) -> str:
    """The body of the generated table ``name`` as the docs hold it."""
    for page in (ROOT / "docs").rglob("*.md"):
        text = page.read_text()
        if BEGIN.format(name) in text:
            return text.split(BEGIN.format(name), 1)[1].split(END.format(name), 1)[0]
    raise AssertionError(f"generated:{name} is in no page")


def test_the_report_tables_listed_are_the_registrys_both_ways() -> None:
    from songlab.ledger.tables import TABLES as REPORT_TABLES

    listed = re.findall(r"^\| `([a-z_]+)` \|", _generated("report-tables"), re.M)
    assert listed == [t.name for t in REPORT_TABLES]  # every table, in order, and no other


def test_the_report_options_listed_are_the_parsers_both_ways() -> None:
    from songlab.cli.report_options import parser

    listed = re.findall(r"^\| `(--[a-z-]+)`", _generated("report-options"), re.M)
    options = [a.option_strings[0] for a in parser()._actions if a.dest != "help"]
    assert listed == options
