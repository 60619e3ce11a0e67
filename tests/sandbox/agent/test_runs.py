"""Agent One over HTTP against the real sandbox: sub-tasks, ledger, caps, floor, trace, stream."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import httpx
import pytest

from tests.sandbox.agent._agent_http import (
    MULTI,
    api,
    create,
    ledger,
    lines_of,
    run,
    tool_calls,
    total,
    wait,
)


@pytest.fixture
def acct(new_account: Any) -> Any:
    return new_account(balance_tokens=1000)


@pytest.fixture
def client(sandbox: Any, acct: Any) -> Any:
    with api(sandbox, acct) as c:
        yield c


def test_multi_step_run_makes_real_billed_subtasks(
    sandbox: Any, admin: httpx.Client, acct: Any, client: httpx.Client, new_account: Any
) -> None:
    snap, trace = run(client, "standard", prompt=MULTI)
    run_id = snap["task_id"]
    calls = tool_calls(trace)
    assert [s["tool"] for s in calls] == [
        "write_lyrics",
        "generate_song",
        "separate_stems",
        "copyright",
    ]
    assert all(s["status"] == "completed" for s in calls)
    assert trace["stopped_by"] is None
    assert snap["output"]["text"] == trace["steps"][-1]["text"]

    # each call is a real task of the same account, child of the run, billed at its own price
    for step in calls:
        r = client.get(f"/v1/generations/{step['task_id']}")
        assert r.status_code == 200
        sub = r.json()
        assert sub["status"] == "completed"
        assert sub["parent_task_id"] == run_id
        assert sub["operation"] == step["tool"] and sub["tool_id"] == step["tool_id"]
        assert Decimal(sub["cost_usd"]) == Decimal(step["cost_usd"]) > 0

    lines = lines_of(admin, acct.account_id, run_id)
    subs = [e for e in lines if e["kind"] == "agent_sub_tool"]
    assert sorted(e["task_id"] for e in subs) == sorted(s["task_id"] for s in calls)
    assert all(e["parent_task_id"] == run_id for e in subs)
    by_task = {e["task_id"]: Decimal(e["amount_usd"]) for e in subs}
    assert all(by_task[s["task_id"]] == Decimal(s["cost_usd"]) for s in calls)
    fee = [e for e in lines if e["kind"] == "agent_fee"]
    assert len(fee) == 1 and fee[0]["task_id"] == run_id
    assert Decimal(fee[0]["amount_usd"]) == Decimal(trace["agent_fee_usd"]) > 0
    # the ledger adds up to the run's reported cost, everywhere it is reported
    assert total(lines) == Decimal(trace["total_cost_usd"]) == Decimal(snap["cost_usd"])
    assert len(lines) == len(calls) + 1

    # the files are the account's: they resolve through the link route, for it only
    file_ids = [f for s in calls for f in s["file_ids"]]
    assert file_ids
    with api(sandbox, new_account()) as other:
        for fid in file_ids:
            link = client.get(f"/v1/files/{fid}/url")
            assert link.status_code == 200 and link.json()["file_id"] == fid
            assert other.get(f"/v1/files/{fid}/url").json()["error"] == "ResourceNotFound"

    balance = client.get("/v1/account/balance").json()
    assert balance["total_effective"] == int((Decimal(10) - total(lines)) / Decimal("0.01"))


def test_fee_is_tokens_at_the_tier_rates_plus_a_tenth_of_a_cent_per_call(
    client: httpx.Client,
) -> None:
    from songlab.pricing import AGENT_RATES

    _, trace = run(client, "pro", prompt="make a lofi beat")
    r = AGENT_RATES["pro"]
    u = trace["usage"]
    calls = len(tool_calls(trace))
    assert calls == 2  # the beat and pro's copyright verification
    expected = (
        r.input_token * u["input_tokens"]
        + r.output_token * u["output_tokens"]
        + Decimal("0.001") * calls
    )
    assert Decimal(trace["agent_fee_usd"]) == expected
    assert [s["kind"] for s in trace["steps"]].count("verification") == 1


def test_stream_shows_each_step(sandbox: Any, client: httpx.Client) -> None:
    snap, trace = run(client, "standard", prompt=MULTI)
    with client.stream("GET", f"/v1/generations/{snap['task_id']}/stream") as r:
        frames = [json.loads(line[5:]) for line in r.iter_lines() if line.startswith("data:")]
    progress = [f for f in frames if f["kind"] == "progress" and "message" in f]
    assert progress[0]["step"] == "plan"
    assert progress[0]["message"].startswith(
        "I'll write lyrics about a rainy night in Lisbon first, then "
    )
    calls = tool_calls(trace)
    started = [f for f in progress if f.get("phase") == "started"]
    finished = [f for f in progress if f.get("phase") == "finished"]
    assert [f["step"] for f in started] == [s["tool"] for s in calls]
    assert [f["index"] for f in started] == [s["index"] for s in calls]
    assert [f["message"] for f in finished] == [f"{s['tool']} completed" for s in calls]
    assert all(0 <= f["progress"] < 1 for f in progress)
    assert frames[-1]["kind"] == "terminal"


def test_budget_halts_after_the_turn_that_crossed_it(
    admin: httpx.Client, acct: Any, client: httpx.Client
) -> None:
    # turns: lyrics 0.02 | song 0.07 | stems 0.10 + copyright 0.03 | mix 0.03
    # ~0.10 after turn 2 (< 0.15): turn 3 runs whole although it will cross, then the run halts
    snap, trace = run(client, "standard", prompt=MULTI + " Then mix the stems.", max_budget=15)
    made = [s["tool"] for s in tool_calls(trace) if s["status"] == "completed"]
    assert made == ["write_lyrics", "generate_song", "separate_stems", "copyright"]
    assert len(tool_calls(trace)) == 4  # the mix was never called: not a step
    assert [u["tool"] for u in trace["not_done"]] == ["mix"]
    assert trace["stopped_by"] == "budget"
    assert snap["status"] == "completed"
    assert snap["output"]["text"].startswith("Stopped: the budget of 15 cents")
    lines = lines_of(admin, acct.account_id, snap["task_id"])
    assert len([e for e in lines if e["kind"] == "agent_sub_tool"]) == 4
    assert total(lines) == Decimal(trace["total_cost_usd"]) > Decimal("0.15")  # spent stays charged


def test_budget_is_never_checked_before_a_call(client: httpx.Client) -> None:
    # a budget of 1 cent is below the first call's price: that turn still runs
    snap, trace = run(client, "standard", prompt=MULTI, max_budget=1)
    assert [s["status"] for s in tool_calls(trace)] == ["completed"]
    assert len(trace["not_done"]) == 3
    assert trace["stopped_by"] == "budget"


def test_step_cap(admin: httpx.Client, acct: Any, client: httpx.Client) -> None:
    snap, trace = run(client, "standard", prompt=MULTI, max_steps=2)
    calls = tool_calls(trace)
    assert [s["status"] for s in calls] == ["completed", "completed"]  # only calls made
    assert trace["stopped_by"] == "max_steps"
    text = snap["output"]["text"]
    assert text.startswith("Stopped: the step cap of 2 tool calls was reached, so I made 2")
    assert "Left undone: split it into two stems" in text and "check it for copyright" in text
    subs = [
        e
        for e in lines_of(admin, acct.account_id, snap["task_id"])
        if e["kind"] == "agent_sub_tool"
    ]
    assert len(subs) == 2


@pytest.mark.parametrize(
    ("tier", "tokens", "status"),
    [
        ("flash", 0, 402),
        ("flash", 1, 201),
        ("standard", 1, 402),
        ("standard", 2, 201),
        ("pro", 4, 402),
        ("pro", 5, 201),
    ],
)
def test_reserve_floor(
    sandbox: Any, admin: httpx.Client, new_account: Any, tier: str, tokens: int, status: int
) -> None:
    acct = new_account(balance_tokens=tokens)
    with api(sandbox, acct) as c:
        r = create(c, tier, prompt="hello there")
        assert r.status_code == status, r.text
        if status == 402:
            assert r.json()["error"] == "InsufficientFunds"
            assert c.get("/v1/generations").json()["data"] == []
            assert ledger(admin, acct.account_id) == []
        else:
            assert wait(c, r.json()["task_id"])["status"] == "completed"


def test_sub_tool_refused_mid_run_is_a_failed_call_counted_for_the_fee(
    sandbox: Any, admin: httpx.Client, new_account: Any
) -> None:
    acct = new_account(balance_tokens=5)  # exactly pro's floor: nothing left for a song
    with api(sandbox, acct) as c:
        snap, trace = run(c, "pro", prompt="make a lofi beat")
    calls = tool_calls(trace)
    assert calls[0]["status"] == "failed" and "InsufficientFunds" in calls[0]["text"]
    assert calls[0]["cost_usd"] == "0.00000000" and calls[0]["task_id"] is None
    assert len(calls) == 1  # the copyright check had no audio: never called
    assert trace["not_done"][0]["tool"] == "copyright"
    assert "its input is missing" in trace["not_done"][0]["reason"]
    lines = lines_of(admin, acct.account_id, snap["task_id"])
    assert [e["kind"] for e in lines] == ["agent_fee"]
    from songlab.pricing import AGENT_RATES

    r, u = AGENT_RATES["pro"], trace["usage"]
    assert Decimal(lines[0]["amount_usd"]) == r.input_token * u[
        "input_tokens"
    ] + r.output_token * u["output_tokens"] + Decimal("0.001")


@pytest.mark.parametrize(
    "payload",
    [{"prompt": "a song", "studio": {"x": 1}}, {"prompt": "a song", "visualizer_theme": "dark"}],
    ids=["studio", "visualizer"],
)
def test_studio_fields_refused(
    admin: httpx.Client, acct: Any, client: httpx.Client, payload: dict
) -> None:
    r = create(client, "standard", **payload)
    assert r.status_code == 422
    body = r.json()
    field = next(k for k in payload if k != "prompt")
    assert body["error"] == "InvalidGenerationInput" and field in body["message"]
    assert ledger(admin, acct.account_id) == []


def test_agent_tools_are_the_three_tiers_and_there_is_no_default(client: httpx.Client) -> None:
    tools = client.get("/v1/tools").json()["data"]
    assert sorted(t["model"] for t in tools if t["operation"] == "agent") == [
        "flash",
        "pro",
        "standard",
    ]
    r = client.post("/v1/generations", json={"payload_json": json.dumps({"prompt": "a song"})})
    assert r.status_code == 400 and r.json()["error"] == "UnknownTool"


def test_internal_tools_refused_when_called_directly(
    admin: httpx.Client, acct: Any, client: httpx.Client
) -> None:
    from songlab.pricing import PRICES
    from songlab.sandbox.catalog import tool_id
    from songlab.spec import INTERNAL_OPERATIONS

    listed = {t["id"] for t in client.get("/v1/tools").json()["data"]}
    internal = {op: tool_id(op, model) for (op, model) in PRICES if op in INTERNAL_OPERATIONS}
    assert set(internal) == set(INTERNAL_OPERATIONS)
    for op, tid in internal.items():
        assert tid not in listed
        r = client.post(
            "/v1/generations", json={"tool_id": tid, "payload_json": json.dumps({"query": "x"})}
        )
        assert r.status_code == 400, op
        assert r.json() == {
            "error": "UnknownTool",
            "message": r.json()["message"],
            "retryable": False,
        }
    # ... but Agent One calls them, and they bill as sub-tool lines
    snap, trace = run(client, "standard", prompt="search what's trending in reggae")
    (step,) = tool_calls(trace)
    assert (step["tool"], step["tool_id"], step["status"]) == (
        "web_search",
        internal["web_search"],
        "completed",
    )
    assert Decimal(step["cost_usd"]) == Decimal("0.01")
    line = next(
        e
        for e in lines_of(admin, acct.account_id, snap["task_id"])
        if e["kind"] == "agent_sub_tool"
    )
    assert Decimal(line["amount_usd"]) == Decimal("0.01") and line["task_id"] == step["task_id"]


def _shape(trace: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [
        (s["kind"], s["tool"], s["tool_id"], s["status"], s["cost_usd"], len(s["file_ids"]))
        for s in trace["steps"]
    ]


def test_same_prompt_plans_the_same_steps_twice(client: httpx.Client) -> None:
    a_snap, a = run(client, "standard", prompt=MULTI)
    b_snap, b = run(client, "standard", prompt=MULTI)
    assert a_snap["task_id"] != b_snap["task_id"]
    assert _shape(a) == _shape(b)
    assert a["usage"] == b["usage"] and a["total_cost_usd"] == b["total_cost_usd"]
    # the sub-tasks are new tasks, but the song is the same song (seed from the prompt)
    songs = [next(s for s in t["steps"] if s["tool"] == "generate_song") for t in (a, b)]
    assert songs[0]["task_id"] != songs[1]["task_id"]
    hashes = [
        client.get(f"/v1/generations/{s['task_id']}").json()["output"]["assets"][0]["blob_hash"]
        for s in songs
    ]
    assert hashes[0] == hashes[1]


def test_flash_does_a_single_step(client: httpx.Client) -> None:
    snap, trace = run(client, "flash", prompt=MULTI)
    assert [s["tool"] for s in tool_calls(trace)] == ["generate_song"]
    assert "Flash makes one tool call per run, so I left out: " in snap["output"]["text"]


def test_workflow_build_only_runs_nothing(
    admin: httpx.Client, acct: Any, client: httpx.Client
) -> None:
    snap, trace = run(client, "standard", prompt=MULTI, workflow_build_only=True)
    assert tool_calls(trace) == []  # nothing was called
    assert len(trace["workflow"]["steps"]) == 4
    assert trace["workflow"]["workflow_id"] in snap["output"]["text"]
    lines = lines_of(admin, acct.account_id, snap["task_id"])
    assert [e["kind"] for e in lines] == ["agent_fee"]
    assert (
        Decimal(lines[0]["amount_usd"])
        == Decimal(trace["total_cost_usd"])
        == Decimal(trace["agent_fee_usd"])
    )
    listing = client.get("/v1/generations").json()["data"]
    assert [t["task_id"] for t in listing] == [snap["task_id"]]
