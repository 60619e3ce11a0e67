"""The record keeps, per create, when the client first saw the task end (its own clock),
the status it ended with, and how it saw it (issue 30's "waiting per model" reads these).

The service shows no timestamps it promises (the spec profile has none), so the client's
clock is the measure: ``sent_at`` and ``accepted_at`` at the create, ``finished_at`` at the
first terminal event, poll or get that shows the task ended.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from datetime import UTC, datetime

import httpx
import pytest

from songlab.client import AsyncClient, Client, RecordStore
from tests.client.fakes import API_KEY, BASE, FAST_RETRY, Fake, task_body

LYRICS = {"operation": "write_lyrics", "model": "v5", "payload": {"prompt": "a verse"}}


def _row(store: RecordStore, task_id: str) -> dict[str, object]:
    (row,) = [r for r in store.table().to_pylist() if r["task_id"] == task_id]
    return row


@pytest.fixture
def store(tmp_path):
    return RecordStore(tmp_path / "record.sqlite")


def _fake_client(fake: Fake, store: RecordStore) -> Client:
    c = Client(
        API_KEY,
        base_url=BASE,
        transport=httpx.MockTransport(fake),
        retry=FAST_RETRY,
        record=store,
        quiet=True,
    )
    c._sleep = lambda s: None
    return c


def _song(c: Client) -> str:
    return c.generations.create(
        operation="generate_song", model="v5", payload={"prompt": "p"}
    ).task_id


def test_a_terminal_event_sets_the_time_and_a_later_poll_fills_a_status_it_lacked(fake, store):
    c = _fake_client(fake, store)
    task_id = _song(c)
    assert _row(store, task_id)["finished_at"] is None  # accepted, not seen ended yet
    # the spec shows no event fields beyond the cursor: a terminal event without a status
    fake.streams[task_id] = [
        [{"seq": 1, "kind": "progress"}, {"seq": 2, "kind": "terminal"}],
    ]
    fake.tasks[task_id] = task_body(task_id, "processing")
    seen: dict[str, datetime] = {}

    def on_event(event):
        if event.kind == "terminal":
            seen["at"] = datetime.now(UTC)
            fake.tasks[task_id] = task_body(task_id, "completed")

    before = datetime.now(UTC)
    assert c.generations.wait(task_id, on_event=on_event).status == "completed"
    row = _row(store, task_id)
    assert row["finished_via"] == "stream" and row["final_status"] == "completed"
    # the time is the terminal event's arrival (before on_event ran), not the poll after it
    assert before <= row["finished_at"] <= seen["at"]
    assert row["accepted_at"] <= row["finished_at"]


def test_the_first_sighting_keeps_its_time_and_how(fake, store):
    c = _fake_client(fake, store)
    task_id = _song(c)
    fake.tasks[task_id] = task_body(task_id, "failed", failure={"error": "X", "message": "m"})
    assert c.generations.wait(task_id, use_stream=False, raise_on_failure=False).status == "failed"
    first = _row(store, task_id)
    assert (first["final_status"], first["finished_via"]) == ("failed", "poll")
    time.sleep(0.01)
    other = _fake_client(fake, store)  # another client (a later kernel) reads it again
    other.generations.get(task_id)
    again = _row(store, task_id)
    assert again["finished_at"] == first["finished_at"] and again["finished_via"] == "poll"
    assert again["final_status"] == "failed"


def test_one_write_per_task_and_client_however_often_it_is_read(fake, store, monkeypatch):
    c = _fake_client(fake, store)
    task_id = _song(c)
    calls = []
    real = store.finish
    monkeypatch.setattr(store, "finish", lambda **kw: calls.append(kw) or real(**kw))
    for _ in range(5):
        c.generations.get(task_id)
    c.task(task_id).get()
    assert len(calls) == 1 and calls[0]["via"] == "get" and calls[0]["status"] == "completed"
    assert _row(store, task_id)["finished_via"] == "get"


def test_a_task_not_in_the_record_and_no_record_at_all_are_fine(fake, store):
    c = _fake_client(fake, store)
    fake.tasks["elsewhere"] = task_body("elsewhere")
    assert c.generations.get("elsewhere").status == "completed"  # no row: nothing to note
    assert store.table().num_rows == 0
    off = Client(
        API_KEY, base_url=BASE, transport=httpx.MockTransport(fake), retry=FAST_RETRY, record=False
    )
    assert off.generations.get("elsewhere").status == "completed"


def test_a_record_that_cannot_be_written_never_fails_the_read(fake, store, monkeypatch, caplog):
    c = _fake_client(fake, store)
    task_id = _song(c)

    def broken(**kw):
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(store, "finish", broken)
    assert c.generations.get(task_id).status == "completed"
    assert "could not note the end of task" in caplog.text


def test_the_async_client_notes_it_too(fake, store):
    async def run() -> str:
        c = AsyncClient(
            API_KEY,
            base_url=BASE,
            transport=httpx.MockTransport(fake),
            retry=FAST_RETRY,
            record=store,
            quiet=True,
        )

        async def nosleep(s: float) -> None:
            return None

        c._sleep = nosleep
        h = await c.generations.create(
            operation="generate_song", model="v5", payload={"prompt": "p"}
        )
        fake.streams[h.task_id] = [[{"seq": 1, "kind": "terminal", "status": "completed"}]]
        await h.wait()
        await c.aclose()
        return h.task_id

    task_id = asyncio.run(run())
    row = _row(store, task_id)
    assert (row["final_status"], row["finished_via"]) == ("completed", "stream")


def test_a_record_of_an_older_songlab_gains_the_columns(tmp_path):
    path = tmp_path / "old.sqlite"
    con = sqlite3.connect(path)
    con.execute(
        "CREATE TABLE creates (task_id TEXT NOT NULL, key_id TEXT NOT NULL, base_url TEXT, "
        "idempotency_key TEXT, route TEXT, tool_id TEXT, operation TEXT, model TEXT, "
        "license INTEGER, payload_sha256 TEXT, estimate_usd TEXT, project TEXT, tags TEXT, "
        "scope TEXT, take INTEGER, origin TEXT, sent_at TEXT, accepted_at TEXT, payload TEXT, "
        "consent_id TEXT, seq INTEGER PRIMARY KEY AUTOINCREMENT, UNIQUE (task_id, key_id))"
    )
    con.execute(
        "INSERT INTO creates (task_id, key_id, route, accepted_at) VALUES "
        "('t-old', 'key_1', '/v1/generations', '2026-11-01T10:00:00+00:00')"
    )
    con.commit()
    con.close()
    store = RecordStore(path)
    (row,) = store.table().to_pylist()
    assert row["task_id"] == "t-old" and row["finished_at"] is None
    at = datetime(2026, 11, 1, 10, 0, 42, tzinfo=UTC)
    assert store.finish(task_id="t-old", key_id="key_1", at=at, status="completed", via="poll")
    (row,) = store.table().to_pylist()
    assert (row["finished_at"], row["final_status"], row["finished_via"]) == (
        at,
        "completed",
        "poll",
    )
    assert not store.finish(task_id="t-old", key_id="key_1", at=at, status="failed", via="get")


@pytest.mark.parametrize("profile_sandbox", ["default", "spec"], indirect=True)
def test_waiting_is_measured_by_the_clients_clock_in_every_profile(profile_sandbox, tmp_path):
    """Against a real sandbox, the spec profile included (no timestamps, no event fields
    beyond the cursor): each create's row says when it was sent, accepted and seen ended."""
    store = RecordStore(tmp_path / "r.sqlite")
    with Client(
        profile_sandbox.api_key, base_url=profile_sandbox.base_url, record=store, quiet=True
    ) as c:
        streamed = c.generations.create(**LYRICS)
        polled = c.generations.create(**LYRICS, take=2)
        assert streamed.wait(timeout=60).status == "completed"
        assert polled.wait(timeout=60, use_stream=False).status == "completed"
    for handle, via in ((streamed, "stream"), (polled, "poll")):
        row = _row(store, handle.task_id)
        assert row["sent_at"] <= row["accepted_at"] <= row["finished_at"]
        assert (row["final_status"], row["finished_via"]) == ("completed", via)
