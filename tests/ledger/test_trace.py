"""The Agent One trace frame: one row per step plus the fee, summing to the run's total."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pandas as pd
import pytest

from songlab.ledger import TRACE, tasks_frame, trace_frame, trace_rows
from songlab.ledger.synthetic import agent_trace
from tests.ledger._util import snap


def _run(run_id: str, trace: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return snap(
        run_id,
        operation="agent",
        model="flash",
        tool_id="t-agent-flash",
        cost_usd=trace["total_cost_usd"],
        output={"text": "ok", "metadata_json": json.dumps(trace)},
        **fields,
    )


def test_rows_and_fee_row() -> None:
    trace = agent_trace("run1", sub_tools=2, failed_call=True)
    df = trace_frame([_run("run1", trace), snap("plain")])
    assert list(df.columns) == TRACE.names
    assert df["kind"].tolist() == [
        "prose",
        "tool_call",
        "tool_call",
        "tool_call",
        "verification",
        "agent_fee",
    ]
    assert df["step_index"].tolist()[:5] == [0, 1, 2, 3, 4] and pd.isna(df["step_index"].iloc[5])
    fee = df.iloc[-1]
    assert fee["cost_usd"] == Decimal(trace["agent_fee_usd"])
    assert fee["task_id"] == "run1" and fee["tool_id"] == "t-agent-flash"
    assert df["file_ids"].iloc[1] == ["run1-file0"]
    assert df["cost_usd"].sum() == Decimal(trace["total_cost_usd"])
    assert set(df["run_model"]) == {"flash"}


def test_each_run_sums_to_its_total(records: list[dict[str, Any]]) -> None:
    tasks = tasks_frame(records)
    df = trace_frame(tasks)
    runs = tasks[tasks["operation"] == "agent"].dropna(subset=["metadata_json"])
    assert len(runs) >= 2
    sums = df.groupby("run_task_id")["cost_usd"].sum()
    for run_id, billed in runs[["task_id", "billed_usd"]].itertuples(index=False):
        assert sums[run_id] == billed
    # from the frame or from the dicts: the same rows
    pd.testing.assert_frame_equal(df, trace_frame(records))


def test_no_runs_gives_the_empty_frame() -> None:
    df = trace_frame([snap("a")])
    assert df.empty and list(df.columns) == TRACE.names


@pytest.mark.parametrize(
    ("metadata", "message"),
    [
        ("{not json", "not JSON"),
        ('{"usage": {}}', "no 'steps' list"),
        ('{"steps": [{"kind": "dance"}]}', r"steps\[0\]\.kind"),
        ('{"steps": [{"kind": "tool_call", "cost_usd": 0.5}]}', r"steps\[0\]\.cost_usd"),
    ],
    ids=["json", "steps", "kind", "float-cost"],
)
def test_bad_traces_name_the_run_and_field(metadata: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        trace_rows("run9", metadata)


def test_frame_without_trace_columns_is_refused() -> None:
    with pytest.raises(ValueError, match="metadata_json"):
        trace_frame(pd.DataFrame({"task_id": ["a"], "operation": ["agent"]}))
