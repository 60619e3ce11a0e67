"""The SSE stream: frames, seq, resume with after=, all six kinds, timeout and drops."""

from __future__ import annotations

import threading
import time

import httpx
import pytest

from tests.sandbox._util import client, create, sse, wait


def test_stream_of_a_song_carries_progress_streaming_url_partial_output_terminal(acct):
    task_id = create(acct, "generate_song", "v5", {"prompt": "x", "duration_seconds": 5}).json()[
        "task_id"
    ]
    evs = sse(acct, task_id)
    kinds = [e["event"] for e in evs]
    assert kinds[0] == "progress" and kinds[-1] == "terminal"
    assert "streaming_url" in kinds and "partial_output" in kinds
    assert kinds.count("progress") >= 5
    seqs = [e["seq"] for e in evs]
    assert seqs == list(range(1, len(evs) + 1))
    assert all(
        e["id"] == e["seq"] and e["kind"] == e["event"] and e["task_id"] == task_id for e in evs
    )
    assert evs[-1]["status"] == "completed"
    states = [e.get("status") for e in evs if e["event"] == "progress"]
    assert states[0] == "queued" and "processing" in states
    stream_url = next(e for e in evs if e["event"] == "streaming_url")["url"]
    assert "/_signed/" in stream_url
    assert httpx.get(stream_url).status_code == 200
    partial = next(e for e in evs if e["event"] == "partial_output")
    assert partial["asset"]["file_id"]
    r = httpx.get(partial["signed_url"])
    assert r.status_code == 200 and r.headers["content-type"].startswith("audio/")


def test_resume_after_replays_what_follows(acct):
    task_id = create(acct, "write_lyrics", "v5", {"prompt": "x"}).json()["task_id"]
    wait(acct, task_id)
    full = sse(acct, task_id)
    assert full[-1]["event"] == "terminal"
    tail = sse(acct, task_id, after=2)
    assert [e["seq"] for e in tail] == [e["seq"] for e in full if e["seq"] > 2]
    assert sse(acct, task_id, after=full[-1]["seq"]) == []


def test_bad_after(acct):
    task_id = create(acct, "write_lyrics", "v5", {"prompt": "x"}).json()["task_id"]
    r = acct.get(f"/v1/generations/{task_id}/stream", params={"after": "x"})
    assert r.status_code == 422 and "after" in r.json()["message"]


@pytest.fixture
def slow_sandbox():
    """A separate sandbox so slow (speed 0.001) that a task sits between events."""
    from songlab.sandbox.http.server import serve_in_thread

    with serve_in_thread(speed=0.001, admin_token="slow-admin") as srv:
        yield srv


def _stream_in_thread(c: httpx.Client, task_id: str, after: int | None = None):
    got: list[dict] = []
    t = threading.Thread(target=lambda: got.extend(sse(c, task_id, after)))
    t.start()
    return t, got


def test_idle_stream_times_out_on_the_sandbox_clock_with_a_cursor(slow_sandbox):
    adm = httpx.Client(
        base_url=slow_sandbox.base_url,
        verify=False,
        headers={"X-Sandbox-Admin-Token": "slow-admin"},
    )
    with client(slow_sandbox, "sk-sandbox-demo") as c, adm:
        task_id = create(c, "write_lyrics", "v5", {"prompt": "x"}).json()["task_id"]
        deadline = time.monotonic() + 10
        while c.get(f"/v1/generations/{task_id}").json()["status"] != "processing":
            assert time.monotonic() < deadline
            time.sleep(0.01)
        t, got = _stream_in_thread(c, task_id)
        time.sleep(0.3)
        assert t.is_alive()  # no timeout on the real clock alone
        adm.post("/_sandbox/clock", json={"advance_seconds": 31})
        t.join(10)
        assert not t.is_alive()
        assert [e["event"] for e in got] == ["progress", "progress", "timeout"]
        timeout = got[-1]
        assert timeout["cursor"] == got[1]["seq"] and timeout["seq"] == got[1]["seq"] + 1
        # resuming from the cursor replays nothing old and never the timeout itself
        t, again = _stream_in_thread(c, task_id, after=timeout["cursor"])
        time.sleep(0.2)
        adm.post("/_sandbox/clock", json={"advance_seconds": 31})
        t.join(10)
        assert [e["event"] for e in again] == ["timeout"]
        assert again[0]["seq"] > timeout["seq"] and again[0]["cursor"] == timeout["cursor"]
        assert c.get(f"/v1/generations/{task_id}").json()["status"] == "processing"


def test_drop_stream_after_sends_error_with_cursor(sandbox, admin, acct):
    task_id = create(acct, "write_lyrics", "v5", {"prompt": "x"}).json()["task_id"]
    wait(acct, task_id)
    assert admin.put("/_sandbox/faults", json={"drop_stream_after": 2}).status_code == 200
    try:
        first = sse(acct, task_id)
        assert [e["event"] for e in first] == ["progress", "progress", "error"]
        cursor = first[-1]["cursor"]
        assert cursor == first[1]["seq"]
        second = sse(acct, task_id, after=cursor)
        assert second[0]["seq"] == cursor + 1
        assert second[-1]["event"] in ("error", "terminal")
        assert first[-1]["seq"] not in [e["seq"] for e in second]
    finally:
        assert admin.delete("/_sandbox/faults").status_code == 204


def test_every_event_takes_a_fresh_seq(sandbox, admin, acct):
    task_id = create(acct, "write_lyrics", "v5", {"prompt": "x"}).json()["task_id"]
    wait(acct, task_id)
    admin.put("/_sandbox/faults", json={"drop_stream_after": 1})
    try:
        a = sse(acct, task_id)
        b = sse(acct, task_id)
    finally:
        admin.delete("/_sandbox/faults")
    assert a[-1]["event"] == b[-1]["event"] == "error"
    assert b[-1]["seq"] > a[-1]["seq"]


def test_a_worker_finishing_between_two_reads_never_cuts_the_stream_short():
    """The stream reads a task's status and its events in two statements. A worker that
    commits the last progress and the terminal (with the status) between them must not
    close the stream before those events: a fresh clone's CI lost both under load."""
    import asyncio
    import json as _json
    from types import SimpleNamespace

    from songlab.sandbox.http.routes.native import _events
    from songlab.sandbox.tasks.events import EventHub

    task = {"status": "processing", "events": [(1, "progress", {"progress": 0.95})]}

    def commit_the_end() -> None:  # what the worker does, in one transaction
        task["events"] += [(2, "progress", {"progress": 1.0}), (3, "terminal", {})]
        task["status"] = "completed"
        log.hub.notify("t1")

    class Log:
        hub = EventHub()

        def after(self, task_id: str, seq: int) -> list[tuple[int, str, str]]:
            out = [(s, k, _json.dumps(d)) for s, k, d in task["events"] if s > seq]
            if not out and task["status"] == "processing":
                commit_the_end()  # right after this read, before the next one
            return out

    log = Log()
    store = SimpleNamespace(value=lambda sql, args: task["status"])
    clock = SimpleNamespace(now=lambda: 0.0)
    faults = SimpleNamespace(settings=SimpleNamespace(drop_stream_after=None))

    async def read() -> list[str]:
        frames = [f async for f in _events(log, store, clock, faults, "t1", 0)]  # type: ignore[arg-type]
        return [f.decode().split("\n")[1].removeprefix("event: ") for f in frames]

    assert asyncio.run(asyncio.wait_for(read(), 5)) == ["progress", "progress", "terminal"]
