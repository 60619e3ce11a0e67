"""Exports: Excel read back exactly, CSV with exact decimal text, Parquet with its dtypes in
pandas and DuckDB."""

from __future__ import annotations

import csv
import re
import zipfile
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import openpyxl
import pandas as pd
import pyarrow as pa
import pytest

from songlab.ledger import LedgerStore, spend, tasks_frame, write_parquet
from songlab.ledger.export import MONEY_FORMAT, export_csv, export_excel
from songlab.ledger.periods import rollup
from tests.ledger._util import snap

# Amounts a float would get wrong in a sum, an Agent One fee with 8 decimals, a zero.
AMOUNTS = ["0.10000000", "0.20000000", "0.00158225", "0", "1234567.12345678"]


@pytest.fixture
def tasks() -> pd.DataFrame:
    return tasks_frame(
        [
            snap(
                f"t{i}",
                cost_usd=a,
                created_at=f"2026-11-{10 + i}T10:00:00Z",
                updated_at=f"2026-11-{10 + i}T10:00:02.5Z",
            )
            for i, a in enumerate(AMOUNTS)
        ]
    )


def _sheet_xml_values(path: Path, sheet: int) -> list[str]:
    with zipfile.ZipFile(path) as z:
        xml = z.read(f"xl/worksheets/sheet{sheet}.xml").decode()
    return re.findall(r'<c r="[A-Z]+\d+"[^>]*t="n"[^>]*><v>([^<]*)</v>', xml)


def test_excel_money_reads_back_exactly(tasks: pd.DataFrame, tmp_path: Path) -> None:
    tables = {
        "by_operation": spend(tasks, "operation"),
        "tasks": tasks.drop(columns=["metadata_json"]),
    }
    path = export_excel(tables, tmp_path / "costs.xlsx")
    wb = openpyxl.load_workbook(path)
    assert wb.sheetnames == ["by_operation", "tasks"]
    ws = wb["tasks"]
    header = [c.value for c in ws[1]]
    assert header[:3] == ["task_id", "tool_id", "operation"]
    assert "created_at (UTC)" in header and "duration (s)" in header
    col = header.index("cost_usd") + 1
    cells = [ws.cell(row=r, column=col) for r in range(2, 2 + len(AMOUNTS))]
    assert all(c.data_type == "n" and c.number_format == MONEY_FORMAT for c in cells)
    # the file stores the exact decimal text (never a float's digits) ...
    stored = _sheet_xml_values(path, 2)
    for a in AMOUNTS:
        assert f"{Decimal(a):.8f}" in stored
    # ... and each amount reads back to the same Decimal (15 significant digits or fewer)
    assert [Decimal(str(c.value)) for c in cells] == [Decimal(a) for a in AMOUNTS]
    ops = wb["by_operation"]
    total = ops.cell(row=2, column=[c.value for c in ops[1]].index("cost_usd") + 1).value
    assert Decimal(str(total)) == sum(map(Decimal, AMOUNTS)) == Decimal("1234567.42503903")
    dur = ws.cell(row=2, column=header.index("duration (s)") + 1).value
    assert Decimal(str(dur)) == Decimal("2.5")
    created = ws.cell(row=2, column=header.index("created_at (UTC)") + 1).value
    assert created.tzinfo is None and created.isoformat() == "2026-11-10T10:00:00"


def test_csv_has_exact_decimal_text(tasks: pd.DataFrame, tmp_path: Path) -> None:
    (path,) = export_csv({"by_day": rollup(tasks, "day")}, tmp_path / "csv")
    assert path.name == "by_day.csv"
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["cost_usd"] for r in rows] == [f"{Decimal(a):.8f}" for a in AMOUNTS]
    assert rows[3]["cost_usd"] == "0.00000000"  # never "0E-8"
    assert rows[-1]["cumulative_usd"] == "1234567.42503903"
    assert rows[0]["period"] == "2026-11-10"


def test_sheet_names_are_made_valid_and_unique(tmp_path: Path) -> None:
    frame = pd.DataFrame({"a": [1]})
    wb = openpyxl.load_workbook(export_excel({"a/b: c?" * 6: frame}, tmp_path / "x.xlsx"))
    (name,) = wb.sheetnames
    assert len(name) == 31 and not set(name) & set("[]:*?/\\")
    with pytest.raises(ValueError, match="tables: two tables"):
        export_excel({"a/b": frame, "a:b": frame}, tmp_path / "y.xlsx")
    assert not (tmp_path / "y.xlsx").exists()


def _assert_same_dtypes(back: pd.DataFrame, frame: pd.DataFrame) -> None:
    for col in frame.columns:
        want = frame[col].dtype
        if isinstance(want, pd.ArrowDtype) and pa.types.is_list(want.pyarrow_dtype):
            continue  # pandas cannot name list dtypes in Parquet metadata (docs/ledger/using.md)
        assert back[col].dtype == want, (col, back[col].dtype, want)


def test_parquet_reads_back_with_the_same_dtypes_in_pandas(
    records: list[dict[str, Any]], tmp_path: Path
) -> None:
    tasks = tasks_frame(records[:500])
    path = write_parquet(tasks, tmp_path / "tasks.parquet")
    back = pd.read_parquet(path)
    assert back["cost_usd"].dtype == pd.ArrowDtype(pa.decimal128(18, 8))
    _assert_same_dtypes(back, tasks)
    pd.testing.assert_frame_equal(back, tasks)
    assert back.songlab.total() == tasks.songlab.total()
    # the ledger's own month files, and the report's sum tables, too
    store = LedgerStore(tmp_path / "ledger")
    store.refresh(records[:500])
    for f in store.files():
        part = pd.read_parquet(f)
        _assert_same_dtypes(part, tasks)
    by_day = rollup(tasks, "day")
    pd.testing.assert_frame_equal(
        pd.read_parquet(write_parquet(by_day, tmp_path / "d.parquet")), by_day
    )


@pytest.mark.parametrize("backend", ["numpy_nullable", "pyarrow"])
def test_parquet_reads_with_either_pandas_dtype_backend(
    tasks: pd.DataFrame, tmp_path: Path, backend: str
) -> None:
    """``pd.read_parquet(path, dtype_backend=...)``: numpy_nullable failed on the extension
    types (pandas hashes a dtype; they were unhashable) before 27 November; pyarrow wraps
    them as they are, which the ledger's engine reads and plain pandas cannot sum."""
    path = write_parquet(tasks, tmp_path / "tasks.parquet")
    back = pd.read_parquet(path, dtype_backend=backend)
    assert len(back) == len(tasks) and back.songlab.total() == tasks.songlab.total()
    assert back.songlab.spend("operation")["cost_usd"].tolist() == (
        tasks.songlab.spend("operation")["cost_usd"].tolist()
    )
    money = pd.ArrowDtype(pa.decimal128(18, 8))
    if backend == "numpy_nullable":
        assert back["cost_usd"].dtype == money
        assert back["cost_usd"].sum() == sum(Decimal(a) for a in AMOUNTS)
    else:  # the workaround docs/ledger/using.md gives for plain pandas
        assert back["cost_usd"].astype(money).sum() == sum(Decimal(a) for a in AMOUNTS)


def test_parquet_reads_in_duckdb_as_exact_decimals(
    records: list[dict[str, Any]], tmp_path: Path
) -> None:
    tasks = tasks_frame(records[:500])
    path = write_parquet(tasks, tmp_path / "tasks.parquet")
    con = duckdb.connect()
    types = dict(
        con.execute(
            f"SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM read_parquet('{path}'))"
        ).fetchall()
    )
    assert types["cost_usd"] == "DECIMAL(18,8)" and types["billed_usd"] == "DECIMAL(18,8)"
    assert types["created_at"] == "TIMESTAMP WITH TIME ZONE"
    assert types["license"] == "TINYINT" and types["task_id"] == "VARCHAR"
    (total,) = con.execute(
        f"SELECT sum(cost_usd) FROM read_parquet('{path}') WHERE parent_task_id IS NULL"
    ).fetchone()
    assert total == tasks.songlab.total()
    arrow = (
        duckdb.connect()
        .sql(f"SELECT cost_usd, created_at FROM read_parquet('{path}')")
        .to_arrow_table()
    )
    assert arrow.schema.field("cost_usd").type == pa.decimal128(18, 8)
