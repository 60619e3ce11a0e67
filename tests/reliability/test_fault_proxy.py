"""A misbehaving proxy between the client and the sandbox (``_proxy.FaultProxy``): connections
reset mid-body after the service acted, HTML 502/504 pages, 503 with ``Retry-After`` and a
blackhole window. Generations created and waited through it lose and repeat nothing; an
answer no retry can change still fails at once."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from songlab.client import Client, InvalidApiKey, NotFound, RetryPolicy, UnknownTool
from songlab.sandbox.http.server import serve_in_thread
from tests.reliability._proxy import FaultProxy
from tests.reliability._storm import STORM_RETRY, events_from_store, run_storm

ADMIN = "proxy-admin-token"
N = 30
CLIENT_TIMEOUT = httpx.Timeout(1.5)  # so blackholed requests time out and are retried quickly


@pytest.fixture(scope="module")
def upstream():
    with serve_in_thread(db=":memory:", speed=4.0, admin_token=ADMIN) as srv:
        yield srv


@pytest.mark.parametrize("mode", ["async", "threads"])
def test_generations_through_a_faulty_proxy_lose_and_repeat_nothing(upstream, mode, capsys):
    with FaultProxy(upstream.port, seed=11 if mode == "async" else 12) as proxy:

        async def blackhole() -> None:
            await asyncio.sleep(1.0)
            proxy.blackhole(2.0)

        res = asyncio.run(
            run_storm(
                proxy.base_url,
                ADMIN,
                N,
                admin_url=upstream.base_url,
                faults={},
                per_account=N,
                stored_events=events_from_store(upstream.sandbox.store),
                wait=True,
                concurrency=N,
                threads=10 if mode == "threads" else 0,
                stagger_s=0.1,
                retry=STORM_RETRY,
                timeout=CLIENT_TIMEOUT,
                disrupt=blackhole,
            )
        )
        fates = dict(proxy.fates)
    with capsys.disabled():
        print(f"\nfault proxy ({mode}): {res.summary()} | fates {fates}")
    assert res.problems == [], res.problems[:5]
    assert res.completed == res.billed_once == res.streams_exact == N
    assert res.tasks_listed == N and res.ledger_lines == N
    assert res.balance_moved_usd == res.prices_usd > 0
    assert set(fates) == {"pass", "reset", "html502", "html504", "retry_after", "blackhole"}
    assert res.counts["create:502"] + res.counts["create:504"] > 0  # creates met the pages
    assert (
        res.counts["create:ReadTimeout"]
        + res.counts["get:ReadTimeout"]
        + res.counts["stream:ReadTimeout"]
        > 0
    )  # and the blackhole


def test_an_answer_no_retry_can_change_fails_at_once(upstream):
    with FaultProxy(upstream.port, weights={"pass": 1.0}) as proxy:
        sleeps: list[float] = []
        key = "sk-sandbox-demo"
        with Client(key, base_url=proxy.base_url, retry=RetryPolicy()) as c:
            c._sleep = sleeps.append
            with pytest.raises(NotFound):
                c.generations.get("no-such-task")
            with pytest.raises(UnknownTool):
                c.generations.create(tool_id="no-such-tool", payload={"prompt": "x"})
        with Client("sk-wrong", base_url=proxy.base_url, retry=RetryPolicy()) as bad:
            bad._sleep = sleeps.append
            with pytest.raises(InvalidApiKey):
                bad.account.balance()
        assert sleeps == [] and proxy.fates["pass"] == 4  # tools listing, get, create, balance
