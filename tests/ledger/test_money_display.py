"""Frames the ledger returns print money as amounts, never as ``0E-8`` (issue 28).

pandas prints an Arrow decimal through ``str(Decimal)``: a zero with 8 places is ``0E-8``
and 0.00000005 is ``5E-8``. Every money column of a ledger frame is a ``MoneyDtype`` (equal
to ``pd.ArrowDtype`` of its decimal type) whose array prints amounts. Checked in the three
ways a notebook shows a frame (``repr``, ``to_string``, ``_repr_html_``), on every kind of
ledger frame, after the pandas operations a user applies, and after a Parquet round trip.
"""

from __future__ import annotations

import pickle
import re
from decimal import Decimal
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest

from songlab.client import BatchResult, BatchRow
from songlab.ledger import (
    MoneyDtype,
    batch_frame,
    periods,
    spend,
    tables,
    tasks_frame,
    tier_comparison,
    trace_frame,
    write_parquet,
)
from songlab.ledger.reconcile import reconcile
from tests.ledger._util import snap

E_NOTATION = re.compile(r"\d[eE][-+]?\d")
SUB_CENT = Decimal("0.00000005")  # 5E-8 as str(Decimal)


def _shown(frame: pd.DataFrame) -> list[str]:
    with pd.option_context("display.max_columns", None, "display.width", 10_000):
        return [repr(frame), frame.to_string(), frame._repr_html_() or ""]


def _assert_amounts(frame: pd.DataFrame, *expected: str) -> None:
    money = [c for c in frame.columns if isinstance(frame[c].dtype, MoneyDtype)]
    assert money, f"no money column in {list(frame.columns)}"
    for text in _shown(frame):
        assert not E_NOTATION.search(text), text
        for amount in expected:
            assert amount in text, (amount, text)
    for c in money:  # each column alone, as a Series prints
        assert not E_NOTATION.search(repr(frame[c])), repr(frame[c])


@pytest.fixture(scope="module")
def tasks() -> pd.DataFrame:
    fee = "0.00000005"
    trace = {
        "steps": [
            {"index": 0, "kind": "prose", "text": "plan", "cost_usd": "0"},
            {
                "index": 1,
                "kind": "tool_call",
                "tool": "generate_song",
                "tool_id": "t-song-v7",
                "status": "completed",
                "cost_usd": "0.12000000",
                "task_id": "sub-1",
            },
        ],
        "agent_fee_usd": fee,
        "stopped_by": "done",
    }
    import json

    return tasks_frame(
        [
            snap("free", cost_usd="0.00000000"),  # a zero billed cost
            snap("tiny", cost_usd=fee),  # a sub-cent one
            snap("failed", status="failed", cost_usd=None),  # released: 0
            snap(
                "run",
                tool_id="t-agent-flash",
                operation="agent",
                model="flash",
                cost_usd="0.12000005",
                output={"metadata_json": json.dumps(trace)},
            ),
        ]
    )


def test_the_tasks_frame_prints_zero_and_sub_cent_amounts(tasks: pd.DataFrame) -> None:
    _assert_amounts(tasks[["task_id", "cost_usd", "billed_usd"]], "0.00000000", "0.00000005")
    assert tasks["cost_usd"].dtype == pd.ArrowDtype(pa.decimal128(18, 8))
    assert pd.ArrowDtype(pa.decimal128(18, 8)) == tasks["cost_usd"].dtype
    assert str(tasks["cost_usd"].dtype) == "decimal128(18, 8)[pyarrow]"
    assert repr(tasks["cost_usd"].array).count("Decimal('0.00000000')") >= 1


def test_every_ledger_frame_prints_amounts(tasks: pd.DataFrame) -> None:
    _assert_amounts(spend(tasks, ["cost_source"]), "0.00000000", "0.12000010")
    _assert_amounts(spend(tasks, ()), "0.00000000")
    _assert_amounts(tier_comparison(tasks), "0.00000005")
    _assert_amounts(periods.rollup(tasks, "day"), "0.00000000")
    _assert_amounts(trace_frame(tasks), "0.00000000", "0.00000005")
    data = tables.build(tasks)
    for name, frame in data.tables.items():
        if any(isinstance(frame[c].dtype, MoneyDtype) for c in frame.columns):
            for text in _shown(frame):
                assert not E_NOTATION.search(text), (name, text)


def test_pandas_operations_keep_the_amounts(tasks: pd.DataFrame) -> None:
    cost = tasks[["task_id", "cost_usd"]]
    _assert_amounts(cost[cost["cost_usd"] < Decimal("0.01")], "0.00000000", "0.00000005")
    _assert_amounts(cost.sort_values("cost_usd"), "0.00000000")
    _assert_amounts(pd.concat([cost, cost]), "0.00000000")
    _assert_amounts(cost.assign(double=cost["cost_usd"] * 2), "0.00000010")
    _assert_amounts(cost.assign(zero=cost["cost_usd"] - cost["cost_usd"]), "0.00000000")
    by = tasks.groupby("status")["cost_usd"].sum().to_frame()
    _assert_amounts(by, "0.00000000")
    _assert_amounts(pickle.loads(pickle.dumps(cost)), "0.00000000", "0.00000005")
    assert cost["cost_usd"].sum() == Decimal("0.12000010")  # still exact Decimals
    assert isinstance(cost["cost_usd"].sum(), Decimal)


def test_a_parquet_round_trip_prints_amounts(tasks: pd.DataFrame, tmp_path: Path) -> None:
    path = tmp_path / "tasks.parquet"
    write_parquet(tasks, path)
    back = pd.read_parquet(path)
    assert isinstance(back["cost_usd"].dtype, MoneyDtype)
    _assert_amounts(back[["task_id", "cost_usd"]], "0.00000000", "0.00000005")
    pd.testing.assert_frame_equal(back, tasks)


def test_the_batch_frame_and_reconciliation_print_amounts() -> None:
    row: dict[str, Any] = {
        "request": 0,
        "task_id": "t",
        "status": "failed",
        "reused": False,
        "take": 1,
        "tool_id": "t1",
        "billed_usd": None,
        "estimate_usd": Decimal("0.07"),
        "file_ids": (),
        "error": None,
    }
    frame = batch_frame(BatchResult((BatchRow(**row),), 1, 0, 0, 0, Decimal(0)))
    _assert_amounts(frame, "0.00000000")
    t = tasks_frame([snap("a", cost_usd="0.00000000"), snap("b", cost_usd="0.01")])
    t["seen_at"] = pd.array(
        [pd.Timestamp("2026-11-20T11:00Z")] * 2, dtype=pd.ArrowDtype(pa.timestamp("us", "UTC"))
    )
    balances = pa.table(
        {
            "taken_at": pa.array(
                [pd.Timestamp("2026-11-20T10:30Z"), pd.Timestamp("2026-11-20T11:00Z")],
                pa.timestamp("us", "UTC"),
            ),
            "total_effective": pa.array([100, 99], pa.int64()),
        }
    )
    _assert_amounts(reconcile(t, balances), "0.00000000", "0.01000000")


def test_other_columns_print_as_pandas_prints_them() -> None:
    money = MoneyDtype(pa.decimal128(18, 8))
    s = pd.Series(pd.array([Decimal(0), None], dtype=money))
    assert "<NA>" in repr(s) and "0.00000000" in repr(s)
    flags = s.isna()
    assert not isinstance(flags.dtype, MoneyDtype) and repr(flags).count("True") == 1
