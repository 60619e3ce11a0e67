"""AsyncClient: the same surface, awaited; streams and lists are async iterators."""

from __future__ import annotations

import asyncio
import inspect
import json
from decimal import Decimal

import pytest

from songlab.client import AsyncClient, BudgetExceeded, Client, NotFound, RateLimited, WaitTimeout
from tests.client.fakes import task_body

RL = {"error": "RateLimited", "message": "slow down", "retryable": True}


def run(coro):
    return asyncio.run(coro)


def ev(seq, kind="progress", **extra):
    return {"seq": seq, "kind": kind, "task_id": "t1", **extra}


def public_methods(obj):
    return {n for n in dir(obj) if not n.startswith("_")}


@pytest.mark.parametrize(
    "attr",
    [
        "generations",
        "tools",
        "files",
        "account",
        "voice_clones",
        "song_translations",
        "workflows",
        "compat",
        "agent",
    ],
)
def test_same_surface(client, aclient, attr):
    assert public_methods(getattr(client, attr)) == public_methods(getattr(aclient, attr))
    assert public_methods(Client) - {"close"} == public_methods(AsyncClient) - {"aclose"}


def test_create_get_and_retry(aclient, fake):
    async def main():
        fake.fail_next("/v1/generations", 429, RL)
        h = await aclient.generations.create(tool_id="t-song-v5", payload={"prompt": "x"})
        task = await h.get()
        with pytest.raises(NotFound):
            await aclient.generations.get("absent")
        await aclient.aclose()
        return h, task

    h, task = run(main())
    posts = [r for r in fake.requests if r.method == "POST"]
    assert len(posts) == 2 and len({r.headers["idempotency-key"] for r in posts}) == 1
    assert isinstance(json.loads(posts[0].content)["payload_json"], str)
    assert task.status == "completed" and h.task_id == "task-1"


def test_methods_return_awaitables(aclient):
    coro = aclient.account.balance()
    assert inspect.iscoroutine(coro)
    assert run(coro).total_effective == 99993


def test_stream_resume_and_wait(aclient, fake):
    fake.tasks["t1"] = task_body("t1")
    fake.streams["t1"] = [
        [ev(1), ev(2)],
        [ev(2, dup=True), ev(3, "error", cursor=2)],
        [ev(4, "terminal", status="completed")],
    ]

    async def main():
        seqs = [e.seq async for e in aclient.generations.stream("t1")]
        fake.streams["t1"] = [[ev(1), ev(2, "terminal", status="completed")]]
        seen = []

        async def on_event(e):
            seen.append(e.seq)

        task = await aclient.task("t1").wait(on_event=on_event)
        return seqs, seen, task

    seqs, seen, task = run(main())
    assert seqs == [1, 2, 4] and seen == [1, 2] and task.status == "completed"


def test_list_is_an_async_iterator(aclient, fake):
    fake.pages = [
        {"data": [task_body("a")], "next_cursor": "1"},
        {"data": [task_body("b")], "next_cursor": None},
    ]

    async def main():
        return [t.task_id async for t in aclient.generations.list(limit=1)]

    assert run(main()) == ["a", "b"]


def test_wait_deadline(aclient, fake):
    fake.tasks["t1"] = task_body("t1", status="processing")

    async def main():
        with pytest.raises(WaitTimeout) as info:
            await aclient.generations.wait("t1", timeout=0.05, use_stream=False, poll_interval=0.01)
        return info.value

    aclient._sleep = asyncio.sleep
    assert run(main()).task_id == "t1"


def test_agent_run_and_budget(aclient, fake):
    trace = {
        "steps": [],
        "usage": {"input_tokens": 1, "output_tokens": 2},
        "agent_fee_usd": "0.01",
        "total_cost_usd": "0.01",
        "stopped_by": "budget",
    }
    orig = fake._route

    def route(request):
        resp = orig(request)
        if request.method == "POST":
            fake.tasks["task-1"] = task_body(
                "task-1", output={"text": "stopped: budget", "metadata_json": json.dumps(trace)}
            )
        return resp

    fake._route = route
    fake.streams["task-1"] = [[ev(1, "terminal", status="completed")]]

    async def main():
        with aclient.budget(usd="0.10") as b:
            with pytest.raises(BudgetExceeded):
                await aclient.agent.run(tier="pro", prompt="p", max_budget=20)
            r = await aclient.agent.run(tier="flash", prompt="p", max_budget=5)
        return r, b

    r, b = run(main())
    assert r.stopped_by == "budget" and r.trace.agent_fee_usd == Decimal("0.01")
    assert b.spent == Decimal("0.05")


def test_retries_exhausted(aclient, fake):
    fake.fail_next("/v5/generate/song", 429, RL, times=9)

    async def main():
        with pytest.raises(RateLimited):
            await aclient.compat.generate_song("v5", prompt="p")

    run(main())
    assert len([r for r in fake.requests if r.method == "POST"]) == aclient.retry.max_attempts
