"""The ledger's journeys through every answer profile, the spec profile above all.

In the spec profile the service shows a task's ``task_id``, ``status`` and ``output``
only: the ledger must still read an Agent One run's trace from the run however it is
named (its handle, its ``Task``, a tasks frame), and a task known only from a run's trace
must get its operation and model from the tool listing and its time from the run, each
fact with its ``*_source``. The report and the notebook accessor must agree on the money.
"""

from __future__ import annotations

import warnings
from decimal import Decimal
from typing import Any

import pandas as pd
import pytest

from songlab import ledger
from songlab.ledger import engine, tables
from songlab.ledger.trace import TraceWarning
from tests._profiles import ProfileSandbox

pytestmark = pytest.mark.slow  # a sandbox process per profile


@pytest.fixture(scope="module")
def client(profile_sandbox: ProfileSandbox) -> Any:
    c = profile_sandbox.client()
    yield c
    c.close()


@pytest.fixture(scope="module")
def run(client: Any) -> Any:
    """One finished Agent One run (flash) that made songs with a listed tool."""
    handle = client.agent.start(
        tier="flash", prompt="write lyrics about rain and make a short song", max_budget=200
    )
    handle.wait(timeout=180)
    return handle


def _steps(task: Any) -> int:
    trace = task.trace
    assert trace is not None and trace.steps, "the run shows its trace in metadata_json"
    return len(trace.steps)


def test_trace_is_read_from_the_handle_the_task_and_a_frame(client: Any, run: Any) -> None:
    task = run.get()
    n = _steps(task) + 1  # every step, then the run's own fee
    with warnings.catch_warnings():
        warnings.simplefilter("error", TraceWarning)  # no run dropped without a word
        views = {
            "handle": ledger.trace_frame(run),
            "task": ledger.trace_frame(task),
            "[task]": ledger.trace_frame([task]),
            "frame": ledger.trace_frame(ledger.tasks_frame(client)),
        }
    for name, frame in views.items():
        mine = frame[frame["run_task_id"] == task.task_id]
        assert len(mine) == n, name
        assert mine["cost_usd"].sum() == task.trace.total_cost_usd, name  # to the last digit
        model = mine["run_model"].iloc[0]
        assert pd.isna(model) or model == "flash", name  # the tier, where anything says it


def test_a_finished_run_without_a_trace_is_named(client: Any) -> None:
    snapshot = {"task_id": "t-quiet", "status": "completed", "operation": "agent", "output": {}}
    with pytest.warns(TraceWarning, match="t-quiet"):
        assert ledger.trace_frame([snapshot]).empty


def test_a_task_known_only_from_the_trace_gets_operation_model_and_time(
    profile_sandbox: ProfileSandbox, client: Any, run: Any
) -> None:
    task = run.get()
    calls = [s for s in task.trace.tool_calls if s.task_id]
    assert calls, "the run called a tool that made a task"
    frame = ledger.tasks_frame(client).set_index("task_id")
    listing = {t.id: t for t in client.tools.list()}
    for step in calls:
        row = frame.loc[step.task_id]
        assert row["parent_task_id"] == task.task_id
        tool = listing.get(row["tool_id"])
        if tool is None:  # an internal tool (web search): not listed, so not named
            assert pd.isna(row["operation"]) or row["operation_source"] == "service"
            continue
        assert (row["operation"], row["model"]) == (tool.operation, tool.model)
        assert row["operation_source"] == row["model_source"] == "service"  # the listing's
        assert pd.notna(row["created_at"]), "its time is the run's"
        if profile_sandbox.profile == "spec":
            run_row = frame.loc[task.task_id]
            assert row["created_at"] == run_row["created_at"]
            assert row["created_at_source"] == run_row["created_at_source"] == "record"
            assert row["tool_id_source"] == "service"  # from the trace the service shows


def test_report_and_accessor_agree_on_three_songs(
    profile_sandbox: ProfileSandbox, client: Any
) -> None:
    """The issue's journey: v6 and v7 standard and v7 sync; the report read $0 before."""
    handles = [
        client.generations.create(
            operation="generate_song",
            model=m,
            license=lic,
            payload={"prompt": f"ledger journey {m} {lic}", "duration_seconds": 5, "seed": 77},
        )
        for m, lic in (("v6", "standard"), ("v7", "standard"), ("v7", "sync"))
    ]
    ids = {h.wait(timeout=120).task_id for h in handles}
    frame = ledger.tasks_frame(client)
    mine = frame[frame["task_id"].isin(ids)]
    want = Decimal("0.15") + Decimal("0.25") + Decimal("0.67")
    comparison = ledger.tier_comparison(mine)
    assert comparison["tasks"].tolist() == [3] * 5
    assert comparison["actual_usd"].iloc[0] == want
    d = tables.build(mine)
    assert d.tables["tier_comparison"]["tasks"].tolist() == [3] * 5
    assert d.tables["tier_comparison"]["actual_usd"].iloc[0] == want == d.figures["spend"]
    assert mine.songlab.total() == want == engine.spend(mine, ()).iloc[0]["cost_usd"]
    label = "estimate" if profile_sandbox.profile == "spec" else "billed"
    assert set(mine["cost_source"]) == {label}  # labelled as an estimate where not billed
