"""Crash safety: SIGKILL the sandbox in the middle of a busy workload, restart it on the same file.

The sandbox runs as a child process (``python -m songlab.sandbox --db FILE``).
While creates and uploads are still being sent and tasks are queued and
processing, it is killed with SIGKILL (no shutdown code runs) and started again
on the same SQLite file. Then: every acknowledged task and file is still there
(bytes intact), every ledger line seen before the kill is still there, every
create re-sent with its Idempotency-Key maps to one task, every task ends
(nothing stays processing), each completed task is billed exactly once, and the
balance equals the opening balance minus the ledger.
"""

from __future__ import annotations

import hashlib
import threading
import time
from decimal import Decimal
from typing import Any

import httpx
import pytest

from songlab.pricing import price
from songlab.sandbox.storage.billing import to_units, usd
from tests.reliability._util import (
    SandboxProcess,
    admin_client,
    all_tasks,
    create,
    key_client,
    ledger,
    new_account,
    tone,
    upload,
    usd_sum,
)

OPENING_TOKENS = 100_000
SPEED = 8.0  # slow enough that tasks are queued and processing at the kill


def _workload() -> list[tuple[str, dict[str, Any]]]:
    """(tool, payload) of each create: short generations of three tools."""
    out: list[tuple[str, dict[str, Any]]] = []
    for i in range(18):
        if i % 4 == 0:
            out.append(("generate_music/v5", {"prompt": f"crash {i}", "duration_seconds": 5}))
        elif i % 2 == 1:
            out.append(("write_lyrics/v5", {"prompt": f"crash {i}"}))
        else:
            out.append(("sfx_gen/v5", {"prompt": f"door {i}", "duration_seconds": 1}))
    return out


def _send(c: httpx.Client, what: str, body: dict[str, Any], key: str) -> httpx.Response:
    op, model = what.split("/")
    return create(c, op, model, body, key=key)


def billing_usd(amount: Decimal) -> str:
    return usd(to_units(amount))


def _line(e: dict[str, Any]) -> tuple:
    return (e["task_id"], e["kind"], e["operation"], e["amount_usd"], e["created_at"])


@pytest.fixture
def db(tmp_path) -> str:
    return str(tmp_path / "crash.sqlite3")


def test_sigkill_mid_workload_loses_nothing_and_bills_nothing_twice(db, capsys):
    work = _workload()
    keys = [f"crash-{i}" for i in range(len(work))]
    acked: dict[str, str] = {}  # key -> task id, creates whose 201 the caller saw
    files: dict[str, str] = {}  # file id -> sha256, uploads whose 201 the caller saw
    stop = threading.Event()

    first = SandboxProcess(db, speed=SPEED)
    try:
        with admin_client(first.base_url) as admin:
            account_id, api_key = new_account(admin, balance_tokens=OPENING_TOKENS)

        def busy() -> None:  # keeps sending creates and uploads until the kill cuts it off
            with key_client(first.base_url, api_key) as c:
                for i, (what, body) in enumerate(work):
                    if stop.is_set():
                        return
                    try:
                        r = _send(c, what, body, keys[i])
                        assert r.status_code == 201, r.text
                        acked[keys[i]] = r.json()["task_id"]
                        if i % 4 == 0:
                            data = tone(1.0, freq=200.0 + i)
                            files[upload(c, data)] = hashlib.sha256(data).hexdigest()
                    except httpx.TransportError:
                        return  # the kill: this request's outcome is unknown

        sender = threading.Thread(target=busy, daemon=True)
        sender.start()
        with key_client(first.base_url, api_key) as c, admin_client(first.base_url) as admin:
            deadline = time.monotonic() + 60
            while True:  # kill once some tasks are done and others are in flight
                statuses = [t["status"] for t in all_tasks(c)]
                if (
                    statuses.count("completed") >= 2
                    and ("processing" in statuses or "queued" in statuses)
                    and len(acked) >= 8
                ):
                    break
                assert time.monotonic() < deadline, f"workload never got busy: {statuses}"
                time.sleep(0.02)
            seen_lines = [_line(e) for e in ledger(admin, account_id)]
            in_flight = [
                t["task_id"] for t in all_tasks(c) if t["status"] in ("queued", "processing")
            ]
        first.kill()
    finally:
        stop.set()
        first.kill()
    sender.join(timeout=30)
    assert in_flight and seen_lines, "the kill did not land mid-workload"

    with (
        SandboxProcess(db, speed=200.0) as second,
        key_client(second.base_url, api_key) as c,
        admin_client(second.base_url) as admin,
    ):
        # nothing acknowledged is lost
        for task_id in acked.values():
            assert c.get(f"/v1/generations/{task_id}").status_code == 200
        for file_id, sha in files.items():
            link = c.get(f"/v1/files/{file_id}/url")
            assert link.status_code == 200, link.text
            assert hashlib.sha256(httpx.get(link.json()["url"]).content).hexdigest() == sha
        after_lines = [_line(e) for e in ledger(admin, account_id)]
        assert set(seen_lines) <= set(after_lines)

        # every create, re-sent with its key, is one task (the acknowledged one if any)
        by_key = {}
        for i, (what, body) in enumerate(work):
            r = _send(c, what, body, keys[i])
            assert r.status_code == 201, r.text
            by_key[keys[i]] = r.json()["task_id"]
            if keys[i] in acked:
                assert by_key[keys[i]] == acked[keys[i]]
        tasks = all_tasks(c)
        assert sorted(t["task_id"] for t in tasks) == sorted(by_key.values())

        # nothing stays queued or processing
        deadline = time.monotonic() + 90
        while any(t["status"] in ("queued", "processing") for t in tasks):
            assert time.monotonic() < deadline, [t["status"] for t in tasks]
            time.sleep(0.1)
            tasks = all_tasks(c)
        assert {t["status"] for t in tasks} == {"completed"}, [t.get("failure") for t in tasks]

        # billed exactly once: the expected lines per task, the balance = opening - ledger
        entries = ledger(admin, account_id)
        for t in tasks:
            lines = [e for e in entries if e["task_id"] == t["task_id"]]
            assert len(lines) == 1, (t["operation"], lines)
            assert lines[0]["amount_usd"] == billing_usd(price(t["operation"], t["model"], 1))
            assert usd_sum(lines) == Decimal(t["cost_usd"])
            for asset in t["output"].get("assets", []):
                assert c.get(f"/v1/files/{asset['file_id']}/url").status_code == 200
        assert {e["task_id"] for e in entries} == {t["task_id"] for t in tasks}
        bal = c.get("/v1/account/balance").json()
        assert Decimal(bal["total_effective"]) == OPENING_TOKENS - usd_sum(entries) * 100

        with capsys.disabled():
            print(
                f"\ncrash: {len(acked)} creates and {len(files)} uploads acknowledged before "
                f"SIGKILL, {len(in_flight)} tasks queued/processing and {len(seen_lines)} "
                f"ledger lines at the kill; after restart {len(tasks)} tasks all completed, "
                f"{len(entries)} ledger lines (one per task), 0 lost"
            )
        # the stream of a task that was in flight at the kill: seqs increase, ends terminal
        r = c.get(f"/v1/generations/{in_flight[0]}/stream")
        seqs = [int(line[4:]) for line in r.text.splitlines() if line.startswith("id: ")]
        assert seqs == sorted(set(seqs)) and "event: terminal" in r.text
