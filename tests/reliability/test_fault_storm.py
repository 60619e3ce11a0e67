"""Faults: generations through the AsyncClient under 429/503, dropped streams and latency.

A small storm (the full 1,000 is ``benchmarks/fault_storm.py``): every generation
ends completed, is billed exactly once (one ledger line per task; the balance
moved by exactly the sum of prices) and every stream delivered every stored
event once, in order. The sandbox is this test's own (faults are global to a
sandbox), in-process, so its store gives the reference event log.
"""

from __future__ import annotations

import asyncio

import pytest

from songlab.sandbox.http.server import serve_in_thread
from tests.reliability._storm import DEFAULT_FAULTS, events_from_store, run_storm

STORM_N = 48
ADMIN = "storm-admin-token"


@pytest.fixture(scope="module")
def storm_sandbox():
    with serve_in_thread(db=":memory:", speed=2000.0, admin_token=ADMIN) as srv:
        yield srv


def test_fault_storm_loses_and_repeats_nothing(storm_sandbox, capsys):
    res = asyncio.run(
        run_storm(
            storm_sandbox.base_url,
            ADMIN,
            STORM_N,
            concurrency=16,
            per_account=STORM_N // 2,
            stored_events=events_from_store(storm_sandbox.sandbox.store),
        )
    )
    with capsys.disabled():
        print("\nfault storm:", res.summary())
    assert DEFAULT_FAULTS["rate_limited"] == 0.3 and DEFAULT_FAULTS["drop_stream_after"] == 3
    assert res.problems == []
    assert res.completed == res.billed_once == res.streams_exact == STORM_N
    assert res.balance_moved_usd == res.prices_usd > 0
    # the faults really fired: refused creates were retried, streams were cut and resumed
    assert res.counts["create:201"] == STORM_N
    assert res.counts["create:429"] > 0 and res.counts["create:503"] > 0
    connections = sum(v for k, v in res.counts.items() if k.startswith("stream:"))
    assert connections >= 2 * STORM_N  # 7 events per task, cut every 3
