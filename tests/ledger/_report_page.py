"""Reading a cost report as a person does: its text, its headline cards and its tables."""

from __future__ import annotations

import html
import re
from decimal import Decimal
from html.parser import HTMLParser


class _Tables(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tables: list[list[list[str]]] = []
        self._row: list[str] | None = None
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self._row = []
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None and self._row is not None:
            self._row.append("".join(self._cell).strip())
            self._cell = None
        elif tag == "tr" and self._row is not None:
            self.tables[-1].append(self._row)
            self._row = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def tables(page: str) -> list[list[dict[str, str]]]:
    """Every table of ``page`` as a list of rows (header -> cell text)."""
    parser = _Tables()
    parser.feed(page)
    out = []
    for t in parser.tables:
        if not t:
            continue
        head, *rows = t
        out.append([dict(zip(head, r, strict=False)) for r in rows])
    return out


def table_with(page: str, *columns: str) -> list[dict[str, str]]:
    """The first table of ``page`` that has all of ``columns``."""
    for t in tables(page):
        if t and all(c in t[0] for c in columns):
            return t
    raise AssertionError(f"no table with {columns}")


def text(fragment: str) -> str:
    """The text of an HTML fragment, spaces collapsed."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", fragment)).split())


def section(page: str, section_id: str) -> str:
    start = page.index(f'<section id="{section_id}">')
    return page[start : page.index("</section>", start)]


def card(page: str, key: str) -> str:
    """The figure of the headline card ``data-figure=key`` and its detail, as one text
    (``$9.28 as of 2027-01-14 14:09:29 UTC``), without the card's label."""
    start = page.index(f'data-figure="{key}"')
    box = page[start : page.index("</div>", start)]
    return text(box[box.index('<dd class="value">') :])


def usd(s: str) -> Decimal:
    """``$1,234.50`` or ``1,234.50`` (or ``-1.53``) as a Decimal."""
    return Decimal(s.replace("$", "").replace(",", "").strip())
