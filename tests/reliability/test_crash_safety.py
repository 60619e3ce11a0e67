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
from dataclasses import dataclass, field
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


@dataclass
class Workload:
    """The creates sent, and what the caller saw acknowledged before the kill."""

    work: list[tuple[str, dict[str, Any]]] = field(default_factory=_workload)
    acked: dict[str, str] = field(default_factory=dict)  # key -> task id: creates seen 201
    files: dict[str, str] = field(default_factory=dict)  # file id -> sha256: uploads seen 201
    stop: threading.Event = field(default_factory=threading.Event)

    @property
    def keys(self) -> list[str]:
        return [f"crash-{i}" for i in range(len(self.work))]


def _send_until_cut_off(base_url: str, api_key: str, w: Workload) -> None:
    """Keep sending creates and uploads until the kill cuts it off."""
    keys = w.keys
    with key_client(base_url, api_key) as c:
        for i, (what, body) in enumerate(w.work):
            if w.stop.is_set():
                return
            try:
                r = _send(c, what, body, keys[i])
                assert r.status_code == 201, r.text
                w.acked[keys[i]] = r.json()["task_id"]
                if i % 4 == 0:
                    data = tone(1.0, freq=200.0 + i)
                    w.files[upload(c, data)] = hashlib.sha256(data).hexdigest()
            except httpx.TransportError:
                return  # the kill: this request's outcome is unknown


def _kill_mid_workload(db: str, w: Workload) -> tuple[str, str, list[tuple], list[str]]:
    """Run the workload on a sandbox process and SIGKILL it once some tasks are done and
    others in flight: (account id, API key, the ledger lines seen, the tasks in flight)."""
    first = SandboxProcess(db, speed=SPEED)
    try:
        with admin_client(first.base_url) as admin:
            account_id, api_key = new_account(admin, balance_tokens=OPENING_TOKENS)
        sender = threading.Thread(
            target=_send_until_cut_off, args=(first.base_url, api_key, w), daemon=True
        )
        sender.start()
        with key_client(first.base_url, api_key) as c, admin_client(first.base_url) as admin:
            deadline = time.monotonic() + 60
            while True:  # kill once some tasks are done and others are in flight
                statuses = [t["status"] for t in all_tasks(c)]
                if (
                    statuses.count("completed") >= 2
                    and ("processing" in statuses or "queued" in statuses)
                    and len(w.acked) >= 8
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
        w.stop.set()
        first.kill()
    sender.join(timeout=30)
    assert in_flight and seen_lines, "the kill did not land mid-workload"
    return account_id, api_key, seen_lines, in_flight


def _nothing_acknowledged_is_lost(
    c: httpx.Client, admin: httpx.Client, account_id: str, w: Workload, seen_lines: list[tuple]
) -> None:
    """Every acknowledged task and file (bytes intact) and every ledger line seen is there."""
    for task_id in w.acked.values():
        assert c.get(f"/v1/generations/{task_id}").status_code == 200
    for file_id, sha in w.files.items():
        link = c.get(f"/v1/files/{file_id}/url")
        assert link.status_code == 200, link.text
        assert hashlib.sha256(httpx.get(link.json()["url"]).content).hexdigest() == sha
    after_lines = [_line(e) for e in ledger(admin, account_id)]
    assert set(seen_lines) <= set(after_lines)


def _resent_creates_are_one_task_each(c: httpx.Client, w: Workload) -> list[dict[str, Any]]:
    """Every create, re-sent with its key, is one task (the acknowledged one if any); then
    nothing stays queued or processing: the tasks, all completed."""
    by_key = {}
    for key, (what, body) in zip(w.keys, w.work, strict=True):
        r = _send(c, what, body, key)
        assert r.status_code == 201, r.text
        by_key[key] = r.json()["task_id"]
        if key in w.acked:
            assert by_key[key] == w.acked[key]
    tasks = all_tasks(c)
    assert sorted(t["task_id"] for t in tasks) == sorted(by_key.values())
    deadline = time.monotonic() + 90
    while any(t["status"] in ("queued", "processing") for t in tasks):
        assert time.monotonic() < deadline, [t["status"] for t in tasks]
        time.sleep(0.1)
        tasks = all_tasks(c)
    assert {t["status"] for t in tasks} == {"completed"}, [t.get("failure") for t in tasks]
    return tasks


def _billed_exactly_once(
    c: httpx.Client, admin: httpx.Client, account_id: str, tasks: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The expected line per task, its assets reachable, the balance = opening - ledger;
    returns the ledger."""
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
    return entries


def test_sigkill_mid_workload_loses_nothing_and_bills_nothing_twice(db, capsys):
    w = Workload()
    account_id, api_key, seen_lines, in_flight = _kill_mid_workload(db, w)

    with (
        SandboxProcess(db, speed=200.0) as second,
        key_client(second.base_url, api_key) as c,
        admin_client(second.base_url) as admin,
    ):
        _nothing_acknowledged_is_lost(c, admin, account_id, w, seen_lines)
        tasks = _resent_creates_are_one_task_each(c, w)
        entries = _billed_exactly_once(c, admin, account_id, tasks)
        with capsys.disabled():
            print(
                f"\ncrash: {len(w.acked)} creates and {len(w.files)} uploads acknowledged "
                f"before SIGKILL, {len(in_flight)} tasks queued/processing and "
                f"{len(seen_lines)} ledger lines at the kill; after restart {len(tasks)} tasks "
                f"all completed, {len(entries)} ledger lines (one per task), 0 lost"
            )
        # the stream of a task that was in flight at the kill: seqs increase, ends terminal
        r = c.get(f"/v1/generations/{in_flight[0]}/stream")
        seqs = [int(line[4:]) for line in r.text.splitlines() if line.startswith("id: ")]
        assert seqs == sorted(set(seqs)) and "event: terminal" in r.text
