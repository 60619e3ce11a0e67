"""Batches against a real sandbox: a rate limit of 100 an hour, a killed process, resuming.

Its own sandbox (the sandbox clock is moved two days forward here), high speed, cheap
text-only creates (write_lyrics v5, $0.02), each test a fresh account. ``client.batch``
returns typed rows (a :class:`BatchResult`); the frame and the bar a notebook shows are
``songlab.widgets.batch`` (tests/widgets/test_batch_display.py).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time
from decimal import Decimal

import httpx
import pytest

from songlab.client import AsyncClient, BudgetExceeded, Client, RecordStore

PRICE = Decimal("0.02")


@pytest.fixture(scope="module")
def srv():
    from songlab.sandbox.http.server import serve_in_thread

    s = serve_in_thread(db=":memory:", speed=2000.0, admin_token="batch-admin")
    try:
        yield s
    finally:
        s.stop()


@pytest.fixture
def admin(srv):
    with httpx.Client(
        base_url=srv.base_url, headers={"X-Sandbox-Admin-Token": "batch-admin"}, timeout=30
    ) as a:
        yield a


@pytest.fixture
def account(admin):
    r = admin.post("/_sandbox/accounts", json={})
    r.raise_for_status()
    return r.json()


def lyrics(n, start=0):
    return [
        {"operation": "write_lyrics", "model": "v5", "payload": {"prompt": f"verse {i}"}}
        for i in range(start, start + n)
    ]


def errors(result):
    return [(r.request, r.error) for r in result if r.error is not None]


def billed(admin, account):
    lines = admin.get(f"/_sandbox/accounts/{account['account_id']}/ledger").json()["entries"]
    return [e["task_id"] for e in lines], sum(Decimal(e["amount_usd"]) for e in lines)


def balance_usd(client):
    return Decimal(client.account.balance().total_effective) / 100


class Clock(threading.Thread):
    """Moves the sandbox clock an hour every ``every`` seconds (time passing, fast).

    With ``made`` (how many creates the batch has made so far), an hour passes only when
    the batch made nothing for ``every`` seconds: time moves while the limit holds the
    batch, never while it sends, so the limit bites however fast or loaded this machine
    is (a fixed tick outran a loaded machine, which then never met the limit)."""

    def __init__(self, admin_url, every=0.1, made=None):
        super().__init__(daemon=True)
        self.url, self.every, self.stop, self.moved = admin_url, every, threading.Event(), 0
        self.made = made

    def run(self):
        seen = -1
        with httpx.Client(headers={"X-Sandbox-Admin-Token": "batch-admin"}) as a:
            while not self.stop.wait(self.every):
                if self.made is not None:
                    now, seen = seen, self.made()
                    if now != seen:
                        continue  # the batch is sending: this hour is not over
                a.post(
                    self.url + "/_sandbox/clock", json={"advance_seconds": 3600}
                ).raise_for_status()
                self.moved += 1


@pytest.mark.slow  # 1000 creates
def test_a_thousand_creates_against_100_an_hour_all_complete_billed_once(
    srv, admin, account, capsys
):
    made = [0]
    clock = Clock(srv.base_url, every=0.3, made=lambda: made[0])
    with Client(account["api_key"], base_url=srv.base_url) as c:
        start = balance_usd(c)
        clock.start()
        try:
            res = c.batch(
                lyrics(1000),
                concurrency=16,
                pace_base_s=0.02,
                pace_max_s=0.2,
                poll_interval=0.05,
                on_progress=lambda p: made.__setitem__(0, p.created),
            )
        finally:
            clock.stop.set()
            clock.join()
        out = capsys.readouterr().out
        assert len(res) == 1000 and all(r.error is None for r in res), errors(res)[:5]
        assert all(r.status == "completed" for r in res)
        assert len({r.task_id for r in res}) == 1000
        assert not any(r.reused for r in res)
        paused = re.search(r"(\d+) rate-limit pauses", out)
        assert paused and int(paused.group(1)) > 0, out  # it was paced
        assert res.rate_limit_pauses == int(paused.group(1))
        ids, total = billed(admin, account)
        assert sorted(ids) == sorted(r.task_id for r in res) and total == 1000 * PRICE
        assert start - balance_usd(c) == 1000 * PRICE
        assert sum(r.cost_usd for r in res) == 1000 * PRICE
    assert clock.moved >= 24  # it took at least two sandbox days (500 a day for one tool)


def test_budget_refuses_to_start_and_sends_nothing(srv, admin, account):
    with Client(account["api_key"], base_url=srv.base_url) as c:
        with pytest.raises(BudgetExceeded, match=r"\$0.20.*budget_usd=\$0.19"):
            c.batch(lyrics(10), budget_usd="0.19")
        assert list(c.generations.list()) == []
        res = c.batch(lyrics(10), budget_usd="0.20")
        assert all(r.status == "completed" for r in res)


def test_the_async_client_batches_and_resumes_from_the_record(srv, admin, account, tmp_path):
    record = RecordStore(tmp_path / "r.sqlite")

    async def run(reqs):
        async with AsyncClient(
            account["api_key"], base_url=srv.base_url, record=record, quiet=True
        ) as c:
            return await c.batch(reqs, poll_interval=0.05)

    import asyncio

    first = asyncio.run(run(lyrics(20)))
    again = asyncio.run(run(lyrics(30)))  # the first 20 again, and 10 more
    assert all(r.status == "completed" for r in first) and not any(r.reused for r in first)
    assert [r.reused for r in again] == [True] * 20 + [False] * 10
    assert [r.task_id for r in again.rows[:20]] == [r.task_id for r in first]
    ids, total = billed(admin, account)
    assert len(ids) == 30 and total == 30 * PRICE


_KILLED = textwrap.dedent("""
    import sys
    from songlab.client import Client
    base_url, key = sys.argv[1], sys.argv[2]
    reqs = [{"operation": "write_lyrics", "model": "v5", "payload": {"prompt": f"verse {i}"}}
            for i in range(300)]
    with Client(key, base_url=base_url) as c:
        res = c.batch(reqs, concurrency=4, poll_interval=0.05)
        print("REUSED", sum(r.reused for r in res),
              "COMPLETED", sum(r.status == "completed" for r in res))
""")


def test_a_killed_batch_run_again_creates_every_request_exactly_once(
    srv, admin, account, tmp_path, monkeypatch
):
    record = tmp_path / "record.sqlite"
    monkeypatch.setenv("SONGLAB_RECORD", str(record))
    monkeypatch.setenv("SONGLAB_ORIGIN", str(tmp_path / "study.ipynb"))
    script = tmp_path / "study.py"
    script.write_text(_KILLED)
    clock = Clock(srv.base_url, every=0.05)  # 300 of one tool needs three sandbox hours
    clock.start()
    try:
        args = [sys.executable, str(script), srv.base_url, account["api_key"]]
        proc = subprocess.Popen(
            args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
        )
        store = RecordStore(record)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            if record.exists() and store.table().num_rows >= 120:
                break
            time.sleep(0.02)
        assert proc.poll() is None, proc.communicate()
        os.killpg(proc.pid, signal.SIGKILL)  # mid-batch: creates in flight are cut
        proc.wait()
        made_before = store.table().num_rows
        assert 120 <= made_before < 300
        done = subprocess.run(args, capture_output=True, text=True, timeout=120)
    finally:
        clock.stop.set()
        clock.join()
    assert done.returncode == 0, done.stderr
    reused = int(done.stdout.split("REUSED ")[1].split()[0])
    assert reused >= made_before and "COMPLETED 300" in done.stdout
    with Client(account["api_key"], base_url=srv.base_url, record=record) as c:
        tasks = list(c.generations.list(limit=100))
        assert len(tasks) == 300 and len({t.task_id for t in tasks}) == 300
        assert store.table().num_rows == 300
        ids, total = billed(admin, account)
        assert len(ids) == 300 and total == 300 * PRICE
        assert Decimal(1000) - balance_usd(c) == 300 * PRICE


def test_a_batch_carries_the_callers_labels_and_budget(srv, admin, account):
    from songlab.client import BudgetExceeded as Refused
    from songlab.ledger import attribution

    with Client(account["api_key"], base_url=srv.base_url, quiet=True) as c:
        with attribution(project="study", tags=["batch"]):
            c.batch(lyrics(4), wait=False)
        rows = c.record.table().to_pylist()
        assert [(r["project"], r["tags"]) for r in rows] == [("study", "batch")] * 4
        with c.budget(usd="0.05"):  # room for two creates of $0.02 at list price
            res = c.batch(lyrics(4, start=10), wait=False, concurrency=1)
        assert [r.task_id is not None for r in res] == [True, True, False, False]
        assert res.rows[2].error.startswith(Refused.__name__)
