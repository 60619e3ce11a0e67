"""Exports of the report's tables: CSV files and one Excel workbook (a sheet per table).

Money is never a float on the way out:

- CSV: the exact decimal text with all 8 places (``0.07000000``, never ``0E-8``);
- Excel: a **numeric** cell whose stored text is that exact decimal (written
  by hand, not through a Python float), so a spreadsheet can sum and format
  it. Excel itself holds numbers as IEEE doubles of 15 significant digits:
  every amount below $10,000,000 keeps all 8 of its decimals. We chose exact
  decimals over integer cents because the price list has sub-cent prices
  (Agent One token fees such as 0.00000067): cents would round them.

Timestamps are written in UTC without an offset (Excel has no time zones; the
column header says UTC), durations as seconds, list columns joined by ``,``.
Files are written to a temporary name and renamed into place.

**Safe to open.** Labels are set by anyone on the team and tool names, prompts
and Agent One text come from the service, so no text is ever written as a
formula (CWE-1236, OWASP "CSV injection"): songlab writes no formula cell at
all. In Excel every text cell is a string cell, and one that starts with
``=``, ``+``, ``-``, ``@``, tab or CR also carries the *quote prefix* style
(Excel shows the text as typed and never evaluates it, even once edited); in
CSV such text gets a leading ``'`` (OWASP's advice), which a spreadsheet shows
as text. Numbers (money, counts, negative differences) stay numbers.

**Always opens.** A prompt may hold any character. XML 1.0 cannot hold most control
characters (NUL, ESC, ...), lone surrogates, U+FFFE or U+FFFF, and one of them made
an ``.xlsx`` nobody could open. Every Excel text cell goes through :func:`xml_text`,
which shows each as a visible stand-in (ESC as ``␛``, NUL as ``␀``: the Unicode
control pictures; ``�`` for the others), never dropping it. CSV keeps every
character as it is; a cell that starts with a control character also gets the
leading ``'``.
"""

from __future__ import annotations

import csv
import os
import re
from collections.abc import Callable, Iterator, Mapping
from datetime import date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa

import songlab.localfiles as localfiles

__all__ = [
    "FORMULA_START",
    "MONEY_FORMAT",
    "atomic",
    "export_csv",
    "export_excel",
    "inert",
    "is_formula_like",
    "sheet_name",
    "xml_text",
]

# Excel number format of money cells: thousands, at least 2 and up to 8 decimals.
MONEY_FORMAT = "#,##0.00######"
_BAD_SHEET = re.compile(r"[\[\]:*?/\\]")
# Text a spreadsheet would evaluate: it starts with one of these (OWASP, CSV injection).
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def is_formula_like(text: str) -> bool:
    """Whether a spreadsheet would read ``text`` as a formula (or a DDE command)."""
    return text.startswith(FORMULA_START)


def inert(text: str) -> str:
    """``text`` as a CSV cell no spreadsheet evaluates: a leading ``'`` if it looks like a
    formula (OWASP) or starts with a control character (a reader that drops it must not
    find a formula behind it), else unchanged. Control characters are kept as they are."""
    starts_with_control = bool(text) and text[0] < " "
    return "'" + text if is_formula_like(text) or starts_with_control else text


def _money_text(d: Decimal) -> str:
    return f"{d:.8f}"


def _converter(dtype: object) -> Callable[[Any], Any]:
    t = dtype.pyarrow_dtype if isinstance(dtype, pd.ArrowDtype) else None
    if t is not None and pa.types.is_decimal(t):
        return lambda v: Money(_money_text(v)) if v is not None else None
    if t is not None and pa.types.is_timestamp(t):
        return lambda v: v.replace(tzinfo=None) if v is not None else None
    if t is not None and pa.types.is_duration(t):
        return lambda v: Decimal(v // timedelta(microseconds=1)) / 10**6 if v is not None else None
    if t is not None and pa.types.is_list(t):
        return lambda v: ",".join(map(str, v)) if v is not None else None
    return lambda v: v


class Money(str):
    """An exact amount as text, written as a number (never through a float)."""


def _rows(frame: pd.DataFrame) -> Iterator[list[object]]:
    convs = [_converter(frame[c].dtype) for c in frame.columns]
    cols = [frame[c].astype(object).where(frame[c].notna(), None).tolist() for c in frame.columns]
    for values in zip(*cols, strict=True):
        yield [f(v) for f, v in zip(convs, values, strict=True)]


def _headers(frame: pd.DataFrame) -> list[str]:
    out = []
    for c in frame.columns:
        t = frame[c].dtype
        is_ts = isinstance(t, pd.ArrowDtype) and pa.types.is_timestamp(t.pyarrow_dtype)
        is_dur = isinstance(t, pd.ArrowDtype) and pa.types.is_duration(t.pyarrow_dtype)
        out.append(f"{c} (UTC)" if is_ts else f"{c} (s)" if is_dur else str(c))
    return out


def atomic(target: Path, write: Callable[[Path], None]) -> Path:
    """``write(tmp)`` fills a private temporary file that is then renamed over ``target``
    (0600, new folders 0700: :func:`songlab.localfiles.replace_atomically`)."""
    return localfiles.replace_atomically(target, write)


def export_csv(
    tables: Mapping[str, pd.DataFrame],
    directory: str | os.PathLike[str],
    *,
    skip: tuple[str, ...] = (),
) -> list[Path]:
    """One ``NAME.csv`` per table in ``directory`` (but ``skip``); money as exact 8-place
    decimal text; text that looks like a formula made inert."""
    out = []
    for name, frame in tables.items():
        if name in skip:
            continue

        def write(tmp: Path, frame: pd.DataFrame = frame) -> None:
            with open(tmp, "w", newline="", encoding="utf-8") as fh:
                w = csv.writer(fh)
                w.writerow(_headers(frame))
                for row in _rows(frame):
                    w.writerow([_csv_cell(v) for v in row])

        out.append(atomic(Path(directory) / f"{sheet_name(name)}.csv", write))
    return out


def _csv_cell(v: object) -> object:
    if v is None:
        return ""
    if isinstance(v, datetime):
        return v.isoformat(sep=" ")
    if isinstance(v, Money):  # a number (it may start with "-")
        return str(v)
    if isinstance(v, str):
        return inert(v)
    return v


def sheet_name(name: str) -> str:
    """A valid Excel sheet name (31 characters, none of ``[]:*?/\\``)."""
    return _BAD_SHEET.sub("_", name)[:31] or "sheet"


def export_excel(tables: Mapping[str, pd.DataFrame], path: str | os.PathLike[str]) -> Path:
    """One sheet per table (header row frozen, money formatted) in an ``.xlsx`` workbook.

    Written in openpyxl's streaming mode; no cell is a formula, text is a string cell
    (quote-prefixed when it looks like a formula), money an exact number.
    """
    from openpyxl import Workbook
    from openpyxl.cell import WriteOnlyCell
    from openpyxl.styles import Font

    wb = Workbook(write_only=True)
    seen: set[str] = set()
    for name in tables:
        title = sheet_name(name)
        if title in seen:
            raise ValueError(f"tables: two tables map to the sheet name {title!r}")
        seen.add(title)
    bold = Font(bold=True)
    for name, frame in tables.items():
        ws = wb.create_sheet(sheet_name(name))
        headers = _headers(frame)
        for col, header in enumerate(headers, start=1):
            width = min(40, max(10, len(header) + 2))
            ws.column_dimensions[_letter(col)].width = width
        ws.freeze_panes = "A2"
        head = []
        for h in headers:
            cell = WriteOnlyCell(ws)
            _text_cell(cell, h)
            cell.font = bold
            head.append(cell)
        ws.append(head)
        for row in _rows(frame):
            ws.append([_excel_cell(ws, WriteOnlyCell, v) for v in row])
    if not tables:
        wb.create_sheet("empty")
    return atomic(Path(path), lambda tmp: wb.save(tmp))


def _letter(col: int) -> str:
    from openpyxl.utils import get_column_letter

    return str(get_column_letter(col))


# What XML 1.0 cannot hold (section 2.2): C0 controls but tab, LF and CR; lone surrogates;
# U+FFFE and U+FFFF
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
# text Excel would read as its own escape (_x0041_ is shown as "A"): its "_" is escaped
_OOXML_ESCAPE = re.compile(r"_(x[0-9A-Fa-f]{4}_)")


def _shown(m: re.Match[str]) -> str:
    c = ord(m.group())
    return chr(0x2400 + c) if c < 0x20 else "\ufffd"


def xml_text(text: str) -> str:
    """``text`` as an Excel text cell shows it, every character XML 1.0 forbids replaced by
    a visible one: a C0 control by its Unicode control picture (ESC -> ``␛``, NUL -> ``␀``),
    a lone surrogate, U+FFFE or U+FFFF by ``�``. A CR (XML reads it back as LF) is written
    as LF, and text that looks like OOXML's own escape (``_x0041_``) is kept as typed."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _NOT_XML.sub(_shown, text)
    return _OOXML_ESCAPE.sub(r"_x005F_\1", text)


def _text_cell(cell: Any, text: str) -> None:  # an openpyxl cell (openpyxl: no types)
    quote = is_formula_like(text)
    # songlab's own cleaning: openpyxl escapes only 0x01-0x19, so NUL and 0x1A-0x1F
    # (ESC among them) made a file no reader opens
    text = xml_text(text)
    cell._value = text  # a string cell, whatever it starts with: never a formula
    cell.data_type = "s"
    if quote:
        cell.quotePrefix = True


def _excel_cell(ws: Any, make: Any, value: object) -> object:  # openpyxl's
    if value is None or isinstance(value, bool | int | float | date | datetime):
        return value
    cell = make(ws)
    if isinstance(value, Money):
        cell._value = str(value)  # exact text, stored as a number
        cell.data_type = "n"
        cell.number_format = MONEY_FORMAT
    elif isinstance(value, Decimal):
        cell._value = f"{value:f}"
        cell.data_type = "n"
    else:
        _text_cell(cell, str(value))
    return cell
