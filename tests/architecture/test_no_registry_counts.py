"""No count of what the registry holds is written by hand: the code, the docs (outside the
tables ``scripts/docs_tables.py`` writes) and the notebooks' code say "the workflow routes",
never "the twelve workflow routes", so adding one changes no sentence."""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NUMBER = (
    r"[0-9]+|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|"
    r"fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|twenty(?:[- ]\w+)?"
)
WHAT = (
    r"workflow routes?|workflows|operations|tools|compat routes|compat paths|"
    r"dedicated routes|named methods|tool ids"
)
THINGS = re.compile(rf"\b(?:{WHAT})\b", re.IGNORECASE)
COUNT_BEFORE = re.compile(rf"\b(?:{NUMBER})\s+$", re.IGNORECASE)
GENERATED = re.compile(r"<!-- BEGIN generated:.*?<!-- END generated:[a-z-]+ -->", re.S)


def counted(text: str) -> list[str]:
    """The phrases of ``text`` that count registry things."""
    text = GENERATED.sub("", text)
    found = []
    for m in THINGS.finditer(text):  # the nouns first (few), then the word before each
        before = COUNT_BEFORE.search(text, max(0, m.start() - 30), m.start())
        if before:
            found.append(text[before.start() : m.end()])
    return found


def _sources() -> dict[str, str]:
    out = {
        str(p.relative_to(ROOT)): p.read_text(encoding="utf-8") for p in ROOT.glob("src/**/*.py")
    }
    out |= {str(p.relative_to(ROOT)): p.read_text(encoding="utf-8") for p in ROOT.glob("docs/*.md")}
    for nb in sorted(ROOT.glob("notebooks/*.ipynb")):
        cells = json.loads(nb.read_text(encoding="utf-8"))["cells"]
        code = ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]
        out[str(nb.relative_to(ROOT))] = "\n".join(code)
    return out


def test_the_check_finds_a_count_and_skips_generated_tables() -> None:
    assert counted("adds the twelve workflow routes and 22 operations; six steps") == [
        "twelve workflow routes",
        "22 operations",
    ]
    table = (
        "<!-- BEGIN generated:operations (x) -->\n22 operations\n<!-- END generated:operations -->"
    )
    assert counted(table) == []


SOURCES = _sources()


def test_every_source_counts_nothing_of_the_registry() -> None:
    assert len(SOURCES) > 200  # the code, the docs and the notebooks were found
    found = {path: counted(text) for path, text in SOURCES.items() if counted(text)}
    assert found == {}
