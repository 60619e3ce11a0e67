"""A ``client.batch`` result as a frame (moved here from tests/client/test_batch_state.py
with the code: the client returns typed rows, the ledger makes the frame)."""

from __future__ import annotations

from decimal import Decimal

import pyarrow as pa

from songlab.client import BatchResult, BatchRow
from songlab.ledger import batch_frame

COLUMNS = [
    "request",
    "task_id",
    "status",
    "reused",
    "take",
    "tool_id",
    "cost_usd",
    "cost_source",
    "file_ids",
    "error",
]


def _row(i: int, **kw: object) -> BatchRow:
    base: dict[str, object] = {
        "request": i,
        "task_id": f"task-{i}",
        "status": "completed",
        "reused": False,
        "take": 1,
        "tool_id": "t1",
        "cost_usd": Decimal("0.07"),
        "cost_source": "service",
        "file_ids": ("f-1", "f-2"),
        "error": None,
    }
    return BatchRow(**{**base, **kw})  # type: ignore[arg-type]


def test_an_empty_batch_is_an_empty_frame_with_the_columns():
    df = batch_frame(BatchResult((), 0, 0, 0, 0, Decimal(0)))
    assert len(df) == 0 and list(df.columns) == COLUMNS


def test_rows_keep_exact_money_lists_and_failures():
    rows = (
        _row(0),
        _row(1, reused=True, cost_usd=Decimal("0.12345678"), cost_source="estimate"),
        _row(
            2,
            task_id=None,
            status="not created",
            cost_usd=None,
            cost_source=None,
            file_ids=(),
            error="InvalidGenerationInput: payload: bad",
        ),
    )
    df = batch_frame(BatchResult(rows, 1, 1, 1, 0, Decimal("0.07")))
    assert list(df.columns) == COLUMNS and list(df["request"]) == [0, 1, 2]
    assert df["cost_usd"].dtype.pyarrow_dtype == pa.decimal128(18, 8)
    assert sum(df["cost_usd"].dropna()) == Decimal("0.19345678")  # exact, never a float
    assert list(df["file_ids"][0]) == ["f-1", "f-2"] and list(df["file_ids"][2]) == []
    assert list(df["reused"]) == [False, True, False]
    assert df["task_id"].isna().tolist() == [False, False, True]
    assert df["error"][2].startswith("InvalidGenerationInput")
