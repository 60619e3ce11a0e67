"""The batch's pure decisions: per-tool pacing, the queue, retries, the budget check, and
the typed rows it returns (its progress display moved to tests/widgets/test_batch_display.py,
its frame to tests/ledger/test_batch_frame.py, with the code)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from songlab.client import BudgetExceeded, RateLimited, ValidationError
from songlab.client._batch import (
    BatchItem,
    BatchState,
    Pacer,
    check_budget,
    check_request,
    result_of,
)
from songlab.client._cost_estimate import Estimate
from songlab.client._create import route_request
from songlab.client._exceptions import CreateUnconfirmed, InvalidGenerationInput


def item(i, tool="t1", usd="0.07", recorded=False):
    est = None if usd is None else Estimate(Decimal(usd), True, "write_lyrics", "v5")
    request = route_request("/v1/generations", {"tool_id": tool}, est, payload="{}", tool_id=tool)
    return BatchItem(i, request, 1, tool, recorded=recorded)


def limited():
    return RateLimited("rate limit of 100 per hour", status_code=429)


def test_pacer_backs_off_multiplicatively_and_recovers_gradually():
    p = Pacer(base_s=0.1, max_s=1.0)
    assert p.delay(0.0) == 0.0
    p.rate_limited(10.0)
    assert p.interval == 0.1 and p.delay(10.0) == pytest.approx(0.1)
    for _ in range(6):
        p.rate_limited(10.0)
    assert p.interval == 1.0 and p.limited == 7  # capped
    p.sent(11.0)
    assert p.next_at == pytest.approx(12.0)  # sends are spaced by the interval
    p.rate_limited(11.5, sent_at=10.5)  # sent before the last refusal: holds, no doubling
    assert p.interval == 1.0 and p.limited == 8
    p2 = Pacer(base_s=0.1, max_s=10.0)
    p2.rate_limited(1.0, sent_at=0.9)
    p2.rate_limited(1.01, sent_at=0.95)  # another create of the same burst
    assert p2.interval == 0.1
    p2.rate_limited(1.3, sent_at=1.2)  # sent after it: a new refusal, doubles
    assert p2.interval == pytest.approx(0.2)
    p.accepted()
    assert p.interval == pytest.approx(0.5)
    for _ in range(4):
        p.accepted()
    assert p.interval == 0.0  # unpaced again a few accepted creates after the limit lets go


def test_state_caps_concurrency_and_holds_only_the_limited_tool():
    s = BatchState(
        [item(0), item(1, "t2"), item(2), item(3, "t2"), item(4)],
        concurrency=2,
        base_s=0.5,
        max_s=4.0,
    )
    ready, _ = s.take_ready(0.0)
    assert [i.index for i in ready] == [0, 1] and s.in_flight == 2
    assert s.take_ready(0.0)[0] == []  # the cap
    s.on_error(ready[0], limited(), 0.0)  # t1 is rate limited: it waits, t2 goes on
    ready2, wait = s.take_ready(0.1)
    assert [i.index for i in ready2] == [3] and wait == pytest.approx(0.4)
    s.on_created(ready[1], "task-1", reused=False)
    s.on_created(ready2[0], "task-3", reused=False)
    assert s.take_ready(0.2)[0] == []  # t1 still held, nothing of t2 left
    ready3, wait = s.take_ready(0.6)
    assert [i.index for i in ready3] == [0] and wait == pytest.approx(0.5)  # first in line
    assert ready3[0].tries == 1  # a 429 is pacing, not a failed try
    assert [i.index for i in s.take_ready(1.1)[0]] == [2]  # spaced by the learned interval


def test_transient_failures_are_retried_then_become_rows():
    s = BatchState([item(0)], concurrency=1, base_s=0.0, max_s=0.0)
    it = s.items[0]
    for _ in range(8):
        (got,), _ = s.take_ready(100.0)
        s.on_error(
            got,
            CreateUnconfirmed(
                "reset", method="POST", path="/v1/generations", idempotency_key="k", attempts=1
            ),
            100.0,
        )
    assert s.finished and s.failed == 1 and it.status == "not created"
    assert it.error.startswith("CreateUnconfirmed")
    s2 = BatchState([item(0)], concurrency=1)
    (got,), _ = s2.take_ready(0.0)
    s2.on_error(got, InvalidGenerationInput("payload: bad", status_code=422), 0.0)
    assert s2.finished and s2.failed == 1  # not retried
    (row,) = result_of(s2).rows
    assert row.status == "not created" and "InvalidGenerationInput" in row.error
    assert row.task_id is None


def test_budget_refuses_before_anything_is_sent_and_names_it():
    items = [item(0, usd="0.07"), item(1, usd="0.07"), item(2, usd="1.00", recorded=True)]
    assert check_budget(items, None) == Decimal("0.14")
    assert check_budget(items, "0.14") == Decimal("0.14")  # recorded ones cost nothing
    with pytest.raises(BudgetExceeded, match=r"budget_usd=\$0.10.*nothing was sent"):
        check_budget(items, "0.10")
    with pytest.raises(BudgetExceeded, match="no list price"):
        check_budget([item(0, usd=None)], "5")
    with pytest.raises(ValidationError, match="budget_usd"):
        check_budget(items, "-1")


def test_requests_are_checked_naming_the_index_and_field():
    with pytest.raises(ValidationError, match=r"requests\[2\]\.prompt"):
        check_request(2, {"prompt": "x", "payload": {}})
    with pytest.raises(ValidationError, match=r"requests\[0\]\.payload"):
        check_request(0, {"operation": "generate_song"})
    with pytest.raises(ValidationError, match=r"requests\[1\]"):
        check_request(1, "generate a song")


def test_an_empty_batch_has_no_rows_and_is_finished():
    state = BatchState([], concurrency=4)
    assert state.finished and len(result_of(state)) == 0


def test_the_result_counts_and_rows_come_from_the_state():
    s = BatchState([item(0), item(1, usd="0.10"), item(2)], concurrency=3)
    ready, _ = s.take_ready(0.0)
    s.on_created(ready[0], "task-0", reused=False)
    s.on_created(ready[1], "task-1", reused=True)
    s.on_error(ready[2], InvalidGenerationInput("payload: bad", status_code=422), 0.0)
    result = result_of(s)
    assert (result.created, result.reused, result.failed) == (1, 1, 1)
    assert result.spent_usd == Decimal("0.07")  # the re-attached one costs nothing again
    assert [r.request for r in result] == [0, 1, 2] and result.rows[1].reused
    assert result.rows[0].tool_id == "t1" and result.rows[0].take == 1
    assert "1 created, 1 re-attached" in result.summary()
