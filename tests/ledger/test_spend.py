"""Spend totals: exact decimal sums by any keys; sub-tool tasks counted inside their run."""

from __future__ import annotations

from collections import defaultdict
from decimal import Decimal
from typing import Any

import pandas as pd
import pytest

from songlab.ledger import spend, tasks_frame
from tests.ledger._util import snap


@pytest.mark.parametrize(
    "by",
    [("operation",), ("model",), ("tier",), ("day",), ("operation", "tier"), ("month", "model")],
    ids=lambda b: "+".join(b),
)
def test_groups_sum_to_the_total(records: list[dict[str, Any]], by: tuple[str, ...]) -> None:
    tasks = tasks_frame(records)
    before = tasks.copy()
    table = spend(tasks, by)
    pd.testing.assert_frame_equal(tasks, before)  # input untouched
    assert list(table.columns)[: len(by)] == list(by)
    assert table["tasks"].sum() == len(tasks)
    assert table["cost_usd"].sum() == tasks["cost_usd"].sum()
    assert table["billed_usd"].sum() == tasks["billed_usd"].sum()
    assert str(table["cost_usd"].dtype) == "decimal128(38, 8)[pyarrow]"


def test_values_match_a_python_decimal_tally(records: list[dict[str, Any]]) -> None:
    tally: dict[str, Decimal] = defaultdict(Decimal)
    counts: dict[str, int] = defaultdict(int)
    for r in records:
        counts[r["operation"]] += 1
        if r["cost_usd"] is not None:
            tally[r["operation"]] += Decimal(r["cost_usd"])
    table = spend(tasks_frame(records), "operation").set_index("operation")
    for op, total in tally.items():
        assert table.loc[op, "billed_usd"] == total
        assert table.loc[op, "tasks"] == counts[op]


def test_day_is_the_utc_date_and_estimates_are_split_out() -> None:
    tasks = tasks_frame(
        [
            snap("a", created_at="2026-11-20T23:59:00Z"),
            snap("b", created_at="2026-11-21T00:01:00Z", status="queued", cost_usd=None),
            snap("c", created_at="2026-11-21T00:02:00Z", cost_usd=None),
        ]
    )
    table = spend(tasks, "day")
    assert [str(d) for d in table["day"]] == ["2026-11-20", "2026-11-21"]
    # c completed and shows no cost: its estimate counts, labelled; b is still running
    assert table["estimated_usd"].tolist() == [Decimal(0), Decimal("0.12")]
    assert table["estimated_tasks"].tolist() == [0, 1]
    assert table["cost_usd"].tolist() == [Decimal("0.12"), Decimal("0.12")]
    assert table["pending_tasks"].tolist() == [0, 1]
    assert table["pending_usd"].tolist() == [Decimal(0), Decimal("0.12")]
    assert table["billed_tasks"].tolist() == [1, 0]


def test_sub_tool_tasks_are_not_counted_twice() -> None:
    tasks = tasks_frame(
        [
            snap("run", operation="agent", model="flash", cost_usd="0.13100000"),
            snap("sub", parent_task_id="run", cost_usd="0.12000000"),
        ]
    )
    table = spend(tasks, ())
    assert table["cost_usd"].tolist() == [Decimal("0.131")]
    assert table["tasks"].tolist() == [1]
    assert tasks.songlab.total() == Decimal("0.131")


def test_unknown_key_is_refused() -> None:
    with pytest.raises(ValueError, match="by: unknown key.*'colour'"):
        spend(tasks_frame([snap("a")]), ["operation", "colour"])


def test_empty_frame() -> None:
    table = spend(tasks_frame([]), "operation")
    assert table.empty and "cost_usd" in table.columns
