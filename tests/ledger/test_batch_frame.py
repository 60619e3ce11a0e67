"""A ``client.batch`` result as a frame (moved here from tests/client/test_batch_state.py
with the code: the client returns typed rows, the ledger makes the frame)."""

from __future__ import annotations

from decimal import Decimal

import pandas as pd
import pyarrow as pa

from songlab.client import BatchResult, BatchRow
from songlab.ledger import _schema, batch_frame

COLUMNS = [
    "request",
    "task_id",
    "status",
    "reused",
    "take",
    "tool_id",
    "cost_usd",
    "cost_source",
    "billed_usd",
    "estimate_usd",
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
        "billed_usd": Decimal("0.07"),
        "estimate_usd": Decimal("0.07"),
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
        _row(1, reused=True, billed_usd=None, estimate_usd=Decimal("0.12345678")),
        _row(
            2,
            task_id=None,
            status="not created",
            billed_usd=None,
            estimate_usd=Decimal("0.07"),
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
    # the ledger's vocabulary; a request never created has no cost and no source
    assert df["cost_source"].tolist()[:2] == ["billed", "estimate"]
    assert df["cost_source"].isna().tolist() == [False, False, True]


def test_cost_and_source_follow_the_ledgers_one_rule():
    """The same words and amounts as a tasks frame gives the same tasks (``_schema.cost_of``):
    billed wins; a completed task without a cost counts its estimate; a failed one is 0
    (unbilled); a running one is pending (null); one that cannot be priced is unknown (null,
    never 0); a task lost while followed is unknown."""
    rows = (
        _row(0, billed_usd=Decimal("0.05")),  # billed wins over the estimate
        _row(1, billed_usd=None),
        _row(2, status="failed", billed_usd=None),
        _row(3, status="processing", billed_usd=None),
        _row(4, billed_usd=None, estimate_usd=None),
        _row(5, status="unknown", billed_usd=None, error="TimeoutError"),
    )
    df = batch_frame(BatchResult(rows, 6, 0, 0, 0, Decimal("0.42")))
    assert df["cost_source"].tolist() == [
        "billed",
        "estimate",
        "unbilled",
        "pending",
        "unknown",
        "unknown",
    ]
    cost = df["cost_usd"].tolist()
    assert cost[:3] == [Decimal("0.05"), Decimal("0.07"), Decimal(0)]
    assert all(pd.isna(v) for v in cost[3:])
    assert set(df["cost_source"]) <= set(_schema.COST_SOURCES)
