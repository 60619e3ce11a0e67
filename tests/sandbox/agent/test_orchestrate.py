"""Running a plan against fake sub-tools: caps, costs, trace and final text (no server)."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest

from songlab.pricing import AGENT_RATES, price
from songlab.sandbox.agent import AgentRequest, Result, build_plan, run_plan
from songlab.spec import STEMS

MULTI = "Write lyrics about rain, then make a jazz song with them, split it into stems and check copyright."
TEXT_OPS = {"write_lyrics", "transcribe", "web_search", "translate_lyrics", "copyright"}


class FakeTools:
    def __init__(self, fail: tuple[str, ...] = ()) -> None:
        self.fail = fail
        self.calls: list[tuple[str, str, dict[str, Any]]] = []
        self.events: list[dict[str, Any]] = []

    def tool_id(self, operation: str, model: str) -> str:
        return f"tool:{model}/{operation}"

    def call(self, operation: str, model: str, payload: dict[str, Any]) -> Result:
        self.calls.append((operation, model, payload))
        n = len(self.calls)
        if operation in self.fail:
            return Result(
                "failed", self.tool_id(operation, model), f"t{n}", Decimal(0), error="boom"
            )
        if operation in TEXT_OPS:
            text = "rain falls on the city tonight" if operation != "copyright" else "no match"
            assets: list[tuple[str, str]] = []
        else:
            text = None
            names = STEMS[model] if operation == "separate_stems" else ("mix",)
            assets = [(name, f"f{n}_{name}") for name in names]
        return Result(
            "completed",
            self.tool_id(operation, model),
            f"t{n}",
            price(operation, model),
            assets,
            text,
        )

    def progress(self, *, step: str, phase: str, index: int, message: str, fraction: float) -> None:
        self.events.append(
            {"step": step, "phase": phase, "index": index, "message": message, "fraction": fraction}
        )


def run(prompt: str, tier: str = "standard", tools: FakeTools | None = None, **kw: Any):
    tools = tools or FakeTools()
    return run_plan(build_plan(prompt, tier), AgentRequest(prompt, **kw), tools), tools


def calls_of(trace: dict[str, Any], status: str | None = None) -> list[dict[str, Any]]:
    return [
        s
        for s in trace["steps"]
        if s["kind"] == "tool_call" and (status is None or s["status"] == status)
    ]


def test_full_run_chains_results_and_totals() -> None:
    out, tools = run(MULTI)
    assert [c[0] for c in tools.calls] == [
        "write_lyrics",
        "generate_song",
        "separate_stems",
        "copyright",
    ]
    song_payload = tools.calls[1][2]
    assert song_payload["lyrics"] == "rain falls on the city tonight"
    assert tools.calls[2][2] == {"audio": "file_id:f2_mix"}
    sub = sum((price(op, m) for op, m, _ in tools.calls), Decimal(0))
    assert out.sub_tool_cost == sub
    usage = out.trace["usage"]
    rates = AGENT_RATES["standard"]
    fee = (
        rates.input_token * usage["input_tokens"]
        + rates.output_token * usage["output_tokens"]
        + Decimal("0.004")
    )
    assert out.fee == fee
    assert out.trace["agent_fee_usd"] == f"{fee:.8f}"
    assert Decimal(out.trace["total_cost_usd"]) == fee + sub
    assert sum(Decimal(s["cost_usd"]) for s in calls_of(out.trace)) == sub
    assert out.trace["stopped_by"] is None
    stems = calls_of(out.trace)[2]
    assert stems["file_ids"] == ["f3_vocals", "f3_instrumental"] and stems["task_id"] == "t3"
    assert out.text == out.trace["steps"][-1]["text"]
    assert out.trace["steps"][-1]["kind"] == "prose"
    json.loads(out.metadata_json)


def test_progress_events_for_each_call() -> None:
    _, tools = run(MULTI)
    assert len(tools.events) == 2 * 4
    assert tools.events[0]["message"].startswith("calling write_lyrics")
    assert tools.events[-1]["fraction"] == 1.0
    assert [e["step"] for e in tools.events[::2]] == [
        "write_lyrics",
        "generate_song",
        "separate_stems",
        "copyright",
    ]
    assert [e["phase"] for e in tools.events[:2]] == ["started", "finished"]
    assert tools.events[0]["index"] == tools.events[1]["index"] == 1  # after the turn's prose


def test_budget_halts_after_the_turn_that_crossed_it_never_before_a_call() -> None:
    # turn 1 lyrics 0.02, turn 2 song 0.07 (total ~0.09 < 0.10), turn 3 stems+copyright -> 0.22
    out, tools = run(MULTI + " Then mix the stems.", max_budget=10)
    assert [c[0] for c in tools.calls] == [
        "write_lyrics",
        "generate_song",
        "separate_stems",
        "copyright",
    ]
    assert out.stopped_by == "budget" and out.trace["stopped_by"] == "budget"
    assert len(calls_of(out.trace)) == 4  # only the calls made are traced
    assert [u["tool"] for u in out.trace["not_done"]] == ["mix"]
    assert out.total > Decimal("0.10")  # spent stays spent
    assert "budget of 10 cents" in out.text
    assert "Left undone: mix the stems back down (the budget was reached)." in out.text


def test_budget_reached_in_the_first_turn_stops_after_it() -> None:
    out, tools = run(MULTI, max_budget=1)
    assert [c[0] for c in tools.calls] == ["write_lyrics"]
    assert out.stopped_by == "budget"
    assert [s["tool"] for s in calls_of(out.trace)] == ["write_lyrics"]
    assert len(out.trace["not_done"]) == 3


def test_budget_not_reached() -> None:
    out, tools = run(MULTI, max_budget=100)
    assert out.stopped_by is None and len(tools.calls) == 4


def test_budget_reached_by_the_last_turn_stops_nothing() -> None:
    out, tools = run("make a lofi beat", max_budget=1)
    assert len(tools.calls) == 1 and out.stopped_by is None


@pytest.mark.parametrize(("cap", "made"), [(1, 1), (2, 2), (3, 3), (4, 4)])
def test_step_cap(cap: int, made: int) -> None:
    out, tools = run(MULTI, max_steps=cap)
    assert len(tools.calls) == made
    traced = calls_of(out.trace)
    assert len(traced) == made == out.calls_made  # counting the trace counts the calls billed
    assert [s["task_id"] for s in traced] == [f"t{i}" for i in range(1, made + 1)]
    assert out.stopped_by == ("max_steps" if cap < 4 else None)
    assert len(out.trace.get("not_done", [])) == 4 - made
    if cap < 4:
        assert out.text.startswith(f"Stopped: the step cap of {cap} tool call")
        assert "Left undone: " in out.text
        for u in out.trace["not_done"]:
            assert u["purpose"] in out.text and u["reason"] == f"the step cap of {cap} was reached"


def test_step_cap_inside_a_turn() -> None:
    out, tools = run(MULTI, max_steps=3)
    assert [s["status"] for s in calls_of(out.trace)] == ["completed"] * 3
    assert out.trace["not_done"] == [
        {
            "tool": "copyright",
            "purpose": "check it for copyright matches",
            "reason": "the step cap of 3 was reached",
        }
    ]


def test_default_step_cap_of_flash_is_one_step() -> None:
    out, tools = run(MULTI, "flash")
    assert [c[0] for c in tools.calls] == ["generate_song"]
    assert out.stopped_by is None
    assert "Flash makes one tool call per run, so I left out: write lyrics about" in out.text


def test_failed_call_counts_for_the_fee_and_skips_its_dependants() -> None:
    tools = FakeTools(fail=("generate_song",))
    out, _ = run(MULTI, tools=tools)
    assert [c[0] for c in tools.calls] == ["write_lyrics", "generate_song"]
    statuses = [s["status"] for s in calls_of(out.trace)]
    assert statuses == ["completed", "failed"]
    assert [u["tool"] for u in out.trace["not_done"]] == ["separate_stems", "copyright"]
    assert out.calls_made == 2
    usage = out.trace["usage"]
    r = AGENT_RATES["standard"]
    assert out.fee == r.input_token * usage["input_tokens"] + r.output_token * usage[
        "output_tokens"
    ] + Decimal("0.002")
    assert out.sub_tool_cost == Decimal("0.02")
    assert "failed (boom)" in out.text


def test_pro_verification_note() -> None:
    out, tools = run(MULTI, "pro")
    assert [c[0] for c in tools.calls][-1] == "transcribe"
    ver = [s for s in out.trace["steps"] if s["kind"] == "verification"]
    assert len(ver) == 1 and "lyrics verified" in ver[0]["text"] and "100%" in ver[0]["text"]


def test_usage_grows_with_plan_length() -> None:
    short, _ = run("make a lofi beat")
    long, _ = run(MULTI)
    assert long.trace["usage"]["input_tokens"] > short.trace["usage"]["input_tokens"]
    assert long.trace["usage"]["output_tokens"] > short.trace["usage"]["output_tokens"]


def test_system_prompt_is_read() -> None:
    plain, _ = run("make a lofi beat")
    wordy, _ = run("make a lofi beat", system_prompt="You are terse. " * 20)
    assert wordy.trace["usage"]["input_tokens"] > plain.trace["usage"]["input_tokens"]


def test_workflow_build_only_calls_nothing() -> None:
    out, tools = run(MULTI, workflow_build_only=True)
    assert tools.calls == []
    assert out.sub_tool_cost == 0 and out.calls_made == 0
    assert calls_of(out.trace) == []  # nothing was called: the plan is the workflow
    wf = out.trace["workflow"]
    assert len(wf["steps"]) == 4
    assert wf["workflow_id"].startswith("wf_") and wf["workflow_id"] in out.text
    assert wf["steps"][1]["input"]["lyrics"] == "${lyrics.text}"
    assert wf["steps"][1]["depends_on"] == ["lyrics"]
    again, _ = run(MULTI, workflow_build_only=True)
    assert again.trace == out.trace
    r = AGENT_RATES["standard"]
    u = out.trace["usage"]
    assert out.fee == r.input_token * u["input_tokens"] + r.output_token * u["output_tokens"]


def test_nothing_to_do_answers_in_prose() -> None:
    out, tools = run("hello there")
    assert tools.calls == [] and "I can write lyrics" in out.text
    assert out.fee > 0 and out.sub_tool_cost == 0


@pytest.mark.parametrize("tier", ["flash", "standard", "pro"])
def test_same_prompt_same_run(tier: str) -> None:
    a, ta = run(MULTI, tier)
    b, tb = run(MULTI, tier)
    assert ta.calls == tb.calls and a.trace == b.trace
