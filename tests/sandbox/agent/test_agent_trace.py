"""The trace has design.md's shape; money is an 8-decimal string, never a float."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from songlab.sandbox.agent.trace import Trace, money

STEP_KEYS = [
    "index",
    "kind",
    "tool",
    "tool_id",
    "status",
    "cost_usd",
    "task_id",
    "file_ids",
    "text",
]


@pytest.mark.parametrize(
    ("amount", "text"),
    [
        (Decimal("0.07"), "0.07000000"),
        (Decimal("0.00123456"), "0.00123456"),
        (Decimal(0), "0.00000000"),
        (Decimal("0E-8"), "0.00000000"),
        (Decimal("12"), "12.00000000"),
    ],
)
def test_money(amount: Decimal, text: str) -> None:
    assert money(amount) == text


def test_money_refuses_floats_and_extra_decimals() -> None:
    with pytest.raises(TypeError):
        money(0.07)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="8 decimals"):
        money(Decimal("0.000000001"))


def test_trace_shape() -> None:
    t = Trace()
    t.prose("I'll write lyrics first.")
    t.tool_call(
        tool="write_lyrics",
        tool_id="tid",
        status="completed",
        cost=Decimal("0.02"),
        task_id="t1",
        text="la la",
    )
    t.tool_call(tool="generate_song", tool_id="tid2", status="failed", text="failed: boom")
    t.verification("Verification: ok.")
    out = t.finish(
        usage={"input_tokens": 10, "output_tokens": 5},
        agent_fee=Decimal("0.00001"),
        total_cost=Decimal("0.02001"),
        stopped_by="budget",
    )
    assert list(out) == ["steps", "usage", "agent_fee_usd", "total_cost_usd", "stopped_by"]
    assert [list(s) for s in out["steps"]] == [STEP_KEYS] * 4
    assert [s["index"] for s in out["steps"]] == [0, 1, 2, 3]
    assert [s["kind"] for s in out["steps"]] == ["prose", "tool_call", "tool_call", "verification"]
    assert out["steps"][1]["cost_usd"] == "0.02000000"
    assert out["steps"][2]["cost_usd"] == "0.00000000"
    assert out["steps"][0]["tool"] is None and out["steps"][0]["task_id"] is None
    assert out["agent_fee_usd"] == "0.00001000"
    assert out["total_cost_usd"] == "0.02001000"
    assert json.loads(Trace.dumps(out)) == out


def test_trace_refuses_unknown_status_and_stop_reason() -> None:
    t = Trace()
    for status in ("weird", "skipped", "planned"):  # only calls made are traced
        with pytest.raises(ValueError, match="status"):
            t.tool_call(tool="x", tool_id=None, status=status)
    with pytest.raises(ValueError, match="stopped_by"):
        t.finish(
            usage={"input_tokens": 0, "output_tokens": 0},
            agent_fee=Decimal(0),
            total_cost=Decimal(0),
            stopped_by="time",
        )
