"""Concurrency: one Idempotency-Key from 50 threads, and parallel creates near an empty balance."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal

import pytest

from songlab.pricing import price
from tests.reliability._util import balance, create, key_client, ledger, usd_sum, wait

THREADS = 50


def _burst(n: int, fn) -> list:
    """Run ``fn(i)`` in ``n`` threads released together by a barrier."""
    barrier = threading.Barrier(n)

    def go(i: int):
        barrier.wait(timeout=30)
        return fn(i)

    with ThreadPoolExecutor(max_workers=n) as pool:
        return list(pool.map(go, range(n)))


ROUTES = {
    "native": lambda c, key: create(c, "write_lyrics", "v5", {"prompt": "same"}, key=key),
    "compat": lambda c, key: c.post(
        "/v5/generate/song",
        headers={"Idempotency-Key": key},
        json={"prompt": "same", "lyrics": "la la", "duration_seconds": 5},
    ),
}


@pytest.mark.parametrize("route", sorted(ROUTES))
def test_fifty_threads_one_key_make_one_task_and_one_line(sandbox, admin, new_account, route):
    acct = new_account()
    clients = [key_client(sandbox.base_url, acct.api_key) for _ in range(THREADS)]
    try:
        answers = _burst(THREADS, lambda i: ROUTES[route](clients[i], f"same-key-{route}"))
    finally:
        for c in clients:
            c.close()
    assert {r.status_code for r in answers} == {201}, {r.text for r in answers}
    assert len({r.json()["task_id"] for r in answers}) == 1
    assert len({r.content for r in answers}) == 1  # the same body every time
    task_id = answers[0].json()["task_id"]
    with key_client(sandbox.base_url, acct.api_key) as c:
        snap = wait(c, task_id)
        assert snap["status"] == "completed"
        listing = c.get("/v1/generations", params={"limit": 100}).json()["data"]
    assert [t["task_id"] for t in listing] == [task_id]
    lines = ledger(admin, acct.account_id)
    assert [e["task_id"] for e in lines] == [task_id]
    assert usd_sum(lines) == price(snap["operation"], snap["model"], 1)
    assert balance(admin, acct.account_id)["total_effective"] == 100_000 - int(usd_sum(lines) * 100)


def test_parallel_creates_near_empty_balance_never_go_below_zero(sandbox, admin, new_account):
    unit = price("write_lyrics", "v5", 1)  # $0.02 = 2 tokens
    acct = new_account(balance_tokens=7, extra_tokens=4)  # room for exactly 5 ($0.10 of $0.11)
    store = sandbox.sandbox.store
    seen_negative: list[tuple[int, int]] = []
    done = threading.Event()

    def watch() -> None:  # the raw balance, in units, never dips below zero at any moment
        while not done.is_set():
            row = store.one(
                "SELECT base_units, extra_units FROM accounts WHERE id = ?", (acct.account_id,)
            )
            if row[0] < 0 or row[1] < 0:
                seen_negative.append((row[0], row[1]))
            time.sleep(0.0005)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    clients = [key_client(sandbox.base_url, acct.api_key) for _ in range(30)]
    try:
        answers = _burst(
            30,
            lambda i: create(
                clients[i], "write_lyrics", "v5", {"prompt": f"p{i}"}, key=f"near-empty-{i}"
            ),
        )
        codes = sorted(r.status_code for r in answers)
        assert codes.count(201) == 5 and codes.count(402) == 25, codes
        for r in answers:
            if r.status_code == 402:
                assert r.json()["error"] == "InsufficientFunds"
                assert r.json()["retryable"] is False
        for r in answers:
            if r.status_code == 201:
                assert wait(clients[0], r.json()["task_id"])["status"] == "completed"
    finally:
        done.set()
        watcher.join(timeout=10)
        for c in clients:
            c.close()
    assert seen_negative == []
    lines = ledger(admin, acct.account_id)
    assert len(lines) == 5 and usd_sum(lines) == 5 * unit
    bal = balance(admin, acct.account_id)
    assert bal["total_effective"] == 1 and bal["base_effective"] == 0 and bal["extra_tokens"] == 1
    # one more create cannot fit: refused cleanly, nothing billed
    with key_client(sandbox.base_url, acct.api_key) as c:
        r = create(c, "write_lyrics", "v5", {"prompt": "one more"})
    assert r.status_code == 402 and r.json()["error"] == "InsufficientFunds"
    assert usd_sum(ledger(admin, acct.account_id)) == Decimal("0.10")


def test_concurrent_distinct_keys_each_bill_once(sandbox, admin, new_account):
    """20 threads x the same 5 keys: 5 tasks, 5 lines, whatever the interleaving."""
    acct = new_account()
    clients = [key_client(sandbox.base_url, acct.api_key) for _ in range(20)]
    try:
        answers = _burst(
            20,
            lambda i: create(
                clients[i], "write_lyrics", "v5", {"prompt": f"k{i % 5}"}, key=f"five-{i % 5}"
            ),
        )
    finally:
        for c in clients:
            c.close()
    assert {r.status_code for r in answers} == {201}
    by_key: dict[int, set[str]] = {}
    for i, r in enumerate(answers):
        by_key.setdefault(i % 5, set()).add(r.json()["task_id"])
    assert all(len(ids) == 1 for ids in by_key.values())
    with key_client(sandbox.base_url, acct.api_key) as c:
        for ids in by_key.values():
            assert wait(c, next(iter(ids)))["status"] == "completed"
    assert len(ledger(admin, acct.account_id)) == 5


def test_shared_client_is_safe_across_threads(sandbox, new_account):
    """One httpx-backed songlab Client used from many threads: one task per key, no mix-ups."""
    from songlab.client import Client

    acct = new_account()
    with Client(acct.api_key, base_url=sandbox.base_url) as client:
        handles = _burst(
            16,
            lambda i: client.generations.create(
                operation="write_lyrics",
                model="v5",
                payload={"prompt": f"t{i % 4}"},
                idempotency_key=f"shared-{i % 4}",
            ),
        )
        assert len({h.task_id for h in handles}) == 4
        for h in handles:
            assert h.wait(timeout=60).status == "completed"
