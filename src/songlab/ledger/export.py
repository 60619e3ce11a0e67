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
"""

from __future__ import annotations

import csv
import os
import re
import uuid
from collections.abc import Callable, Iterator, Mapping
from datetime import date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa

__all__ = ["MONEY_FORMAT", "export_csv", "export_excel", "sheet_name"]

# Excel number format of money cells: thousands, at least 2 and up to 8 decimals.
MONEY_FORMAT = "#,##0.00######"
_BAD_SHEET = re.compile(r"[\[\]:*?/\\]")


def _money_text(d: Decimal) -> str:
    return f"{d:.8f}"


def _converter(dtype: Any) -> Callable[[Any], Any]:
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


def _rows(frame: pd.DataFrame) -> Iterator[list[Any]]:
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


def _atomic(target: Path, write: Callable[[Path], None]) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{uuid.uuid4().hex}.tmp")
    try:
        write(tmp)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return target


def export_csv(tables: Mapping[str, pd.DataFrame], directory: str | os.PathLike[str]) -> list[Path]:
    """One ``NAME.csv`` per table in ``directory``; money as exact 8-place decimal text."""
    out = []
    for name, frame in tables.items():
        def write(tmp: Path, frame: pd.DataFrame = frame) -> None:
            with open(tmp, "w", newline="", encoding="utf-8") as fh:
                w = csv.writer(fh)
                w.writerow(_headers(frame))
                for row in _rows(frame):
                    w.writerow(["" if v is None else v.isoformat(sep=" ")
                                if isinstance(v, datetime) else v for v in row])  # fmt: skip

        out.append(_atomic(Path(directory) / f"{sheet_name(name)}.csv", write))
    return out


def sheet_name(name: str) -> str:
    """A valid Excel sheet name (31 characters, none of ``[]:*?/\\``)."""
    return _BAD_SHEET.sub("_", name)[:31] or "sheet"


def export_excel(tables: Mapping[str, pd.DataFrame], path: str | os.PathLike[str]) -> Path:
    """One sheet per table (header row frozen, money formatted) in an ``.xlsx`` workbook."""
    from openpyxl import Workbook
    from openpyxl.styles import Font

    wb = Workbook()
    wb.remove(wb.active)
    seen: set[str] = set()
    for name, frame in tables.items():
        title = sheet_name(name)
        if title in seen:
            raise ValueError(f"tables: two tables map to the sheet name {title!r}")
        seen.add(title)
        ws = wb.create_sheet(title)
        ws.append(_headers(frame))
        for cell in ws[1]:
            cell.font = Font(bold=True)
        ws.freeze_panes = "A2"
        for r, row in enumerate(_rows(frame), start=2):
            for c, value in enumerate(row, start=1):
                cell = ws.cell(row=r, column=c)
                if isinstance(value, Money):
                    cell._value = str(value)  # exact text, stored as a number below
                    cell.data_type = "n"
                    cell.number_format = MONEY_FORMAT
                elif isinstance(value, Decimal):
                    cell._value = f"{value:f}"
                    cell.data_type = "n"
                elif isinstance(value, date | datetime | int | float | bool) or value is None:
                    cell.value = value
                else:
                    cell.value = str(value)
        for col, header in enumerate(_headers(frame), start=1):
            width = min(40, max(10, len(header) + 2))
            ws.column_dimensions[ws.cell(row=1, column=col).column_letter].width = width
    if not wb.sheetnames:
        wb.create_sheet("empty")
    return _atomic(Path(path), lambda tmp: wb.save(tmp))
