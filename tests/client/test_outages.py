"""Outages against the in-memory fake, sync and async: gateways, resets, Retry-After, the
create deadline, uploads that must not be stored twice, unreadable answers, budgets scoped
by context, streams closed when a callback raises, file work off the event loop."""

from __future__ import annotations

import asyncio
import threading
from decimal import Decimal

import httpx
import pytest

from songlab.client import (
    APIConnectionError,
    AsyncClient,
    Client,
    CreateUnconfirmed,
    InvalidApiKey,
    MalformedResponse,
    RetryPolicy,
    UnexpectedResponse,
)
from tests.client.fakes import API_KEY, BASE, Fake, sse, task_body

HTML_502 = b"<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>"


def posts(fake, path="/v1/generations"):
    return [r for r in fake.requests if r.method == "POST" and r.url.path == path]


class Clock:
    """A fake monotonic clock the sleeps advance, so deadlines are tested in no time."""

    def __init__(self) -> None:
        self.t = 1000.0
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.t

    def sleep(self, s: float) -> None:
        self.sleeps.append(s)
        self.t += s


@pytest.fixture
def clock(monkeypatch) -> Clock:
    c = Clock()
    for mod in ("_base", "_sync", "_async"):
        monkeypatch.setattr(f"songlab.client.{mod}.time.monotonic", c.monotonic)
    return c


def sync_client(fake: Fake, clock: Clock, **policy) -> Client:
    c = Client(
        API_KEY,
        base_url=BASE,
        transport=httpx.MockTransport(fake),
        seed=4,
        retry=RetryPolicy(**{"base_s": 0.5, "cap_s": 2.0, **policy}),
    )
    c._sleep = clock.sleep
    return c


def test_a_read_rides_a_long_outage_of_mixed_failures(fake, clock):
    c = sync_client(fake, clock, max_total_s=60.0)
    for status, body in [
        (None, None),
        (502, HTML_502),
        (504, b"<html>timeout</html>"),
        (503, b"Service Unavailable"),
        (500, b"oops"),
        (None, None),
    ] * 3:
        fake.fail_next("/v1/account/balance", status, body)
    assert c.account.balance().total_effective == 99993
    assert len(fake.paths()) == 19 and sum(clock.sleeps) < 60.0
    assert max(clock.sleeps) <= 2.0  # capped


def test_a_read_past_its_deadline_raises_and_a_final_answer_at_once(fake, clock):
    c = sync_client(fake, clock, max_total_s=20.0)
    fake.fail_next("/v1/account/balance", None, times=10_000)
    with pytest.raises(APIConnectionError):
        c.account.balance()
    assert 19.0 <= sum(clock.sleeps) < 20.0
    fake.faults.clear()
    fake.fail_next("/v1/account/balance", 401, {"error": "INVALID_API_KEY"})
    n = len(fake.requests)
    with pytest.raises(InvalidApiKey):
        c.account.balance()
    assert len(fake.requests) == n + 1


def test_retry_after_is_honoured(fake, clock):
    c = sync_client(fake, clock)
    answers = [
        httpx.Response(503, content=b"<html>busy</html>", headers={"Retry-After": "7"}),
        httpx.Response(200, json={"data": []}),
    ]
    c._http._transport = httpx.MockTransport(lambda request: answers.pop(0))
    assert c.tools.list() == ()
    assert clock.sleeps == [7.0] and answers == []


def test_a_create_rides_the_outage_under_one_key(fake, clock):
    c = sync_client(fake, clock)
    fake.fail_next("/v1/generations", None, times=3)  # reset
    fake.fail_next("/v1/generations", 502, HTML_502, times=2)
    fake.fail_next("/v1/generations", "lost")  # accepted, answer lost
    h = c.generations.create(tool_id="t-song-v5", payload={"prompt": "x"})
    keys = {r.headers["idempotency-key"] for r in posts(fake)}
    assert len(posts(fake)) == 7 and keys == {h.idempotency_key}
    assert fake.created == 1 and h.task_id == "task-1"


def test_a_create_past_its_deadline_says_how_to_pick_it_up_again(fake, clock):
    c = sync_client(fake, clock, create_deadline_s=30.0)
    fake.fail_next("/v1/generations", "lost")  # the service did accept it
    fake.fail_next("/v1/generations", None, times=10_000)
    with pytest.raises(CreateUnconfirmed) as info:
        c.generations.create(tool_id="t-song-v5", payload={"prompt": "x"})
    e = info.value
    assert e.idempotency_key in str(e) and sum(clock.sleeps) < 30.0
    fake.faults.clear()
    again = c.generations.create(
        tool_id="t-song-v5", payload={"prompt": "x"}, idempotency_key=e.idempotency_key
    )
    assert again.task_id == "task-1" and fake.created == 1  # the same task, billed once


def test_an_upload_is_retried_only_where_it_never_reached_the_server(fake, clock):
    c = sync_client(fake, clock)

    def refuse_then_serve(request):
        if request.method == "POST" and len(posts(fake, "/v1/files")) < 3:
            fake.requests.append(request)
            raise httpx.ConnectError("refused", request=request)
        return fake(request)

    c._http._transport = httpx.MockTransport(refuse_then_serve)
    up = c.files.upload(b"RIFF....", filename="a.wav")
    assert up.file_id == "file-1" and len(posts(fake, "/v1/files")) == 4  # 3 refused + 1
    fake.fail_next("/v1/files", "lost")  # stored, then the answer was reset
    with pytest.raises(APIConnectionError):  # other bytes: the same ones would be reused
        c.files.upload(b"RIFF...b", filename="b.wav")
    fake.fail_next("/v1/files", 502, HTML_502)
    with pytest.raises(UnexpectedResponse):
        c.files.upload(b"RIFF...c", filename="c.wav")
    assert len(fake.files) == 2  # the lost one is stored once, nothing twice


@pytest.mark.parametrize(
    ("path", "content"),
    [
        ("/v1/account/balance", b"<html>captive portal</html>"),
        ("/v1/generations/t1", b'{"status": "processing"}'),
        ("/v1/tools", b'{"data": [{"model": "v5"}]}'),
    ],
    ids=["html-200", "no-task-id", "tool-no-id"],
)
def test_a_2xx_the_client_cannot_read_is_a_songlab_error(fake, clock, path, content):
    c = sync_client(fake, clock)

    def route(request):
        if request.url.path == path:
            return httpx.Response(200, content=content)
        return fake(request)

    c._http._transport = httpx.MockTransport(route)
    with pytest.raises(MalformedResponse):
        if path.startswith("/v1/generations/"):
            c.generations.get("t1")
        elif path == "/v1/tools":
            c.tools.list()
        else:
            c.account.balance()


def test_a_create_answer_without_task_id_raises_and_releases_the_budget(fake, clock):
    c = sync_client(fake, clock)
    c.tools.list()

    def route(request):
        if request.method == "POST":
            return httpx.Response(201, json={"status": "queued"})
        return fake(request)

    c._http._transport = httpx.MockTransport(route)
    with c.budget(usd="0.10") as b:
        with pytest.raises(MalformedResponse) as info:
            c.generations.create(
                tool_id="t-song-v5", payload={"prompt": "x"}, idempotency_key="k-1"
            )
        assert b.held == 0 and b.spent == 0 and b.remaining == Decimal("0.10")
    assert "k-1" in str(info.value)


def test_budget_is_scoped_to_its_context_not_to_threads(client, fake):
    charged = []
    with client.budget(usd="0.07") as b:
        other = threading.Thread(
            target=lambda: charged.append(client.compat.generate_song("v5", prompt="widget thread"))
        )
        other.start()
        other.join()
        client.compat.generate_song("v5", prompt="mine")
    assert len(charged) == 1 and b.task_ids == ["task-2"] and b.spent == Decimal("0.07")


def test_budget_is_scoped_to_its_coroutine(aclient, fake):
    async def main():
        started = asyncio.Event()
        done = asyncio.Event()

        async def other():  # a coroutine of the same client, outside the block
            await started.wait()
            h = await aclient.compat.generate_song("v5", prompt="other")
            done.set()
            return h

        t = asyncio.create_task(other())  # started before the block: its context has no budget
        with aclient.budget(usd="0.07") as b:
            started.set()
            await done.wait()
            inside = await asyncio.gather(aclient.compat.generate_song("v5", prompt="mine"))
        await t
        return b, inside

    b, inside = asyncio.run(main())
    assert b.task_ids == [inside[0].task_id] and b.spent == Decimal("0.07")


def test_the_sync_stream_is_closed_when_a_callback_raises(fake):
    closed = []

    class Body(httpx.SyncByteStream):
        def __iter__(self):
            yield sse([{"seq": 1, "kind": "progress", "task_id": "t1"}])
            yield sse([{"seq": 2, "kind": "progress", "task_id": "t1"}])

        def close(self):
            closed.append(True)

    def route(request):
        if request.url.path.endswith("/stream"):
            return httpx.Response(200, stream=Body(), headers={"content-type": "text/event-stream"})
        return fake(request)

    fake.tasks["t1"] = task_body("t1", status="processing")
    with Client(API_KEY, base_url=BASE, transport=httpx.MockTransport(route)) as c:

        def boom(event):
            raise RuntimeError("callback failed")

        with pytest.raises(RuntimeError):
            c.generations.wait("t1", on_event=boom)
    assert closed == [True]


def test_async_file_work_runs_off_the_event_loop(aclient, fake, tmp_path):
    src = tmp_path / "in.wav"
    src.write_bytes(b"RIFF0000WAVE")
    threads = []
    import songlab.client._files as files_mod

    read, write = files_mod._read_upload, files_mod._write_download

    def spy(fn):
        def run(*a):
            threads.append(threading.current_thread() is threading.main_thread())
            return fn(*a)

        return run

    async def main():
        files_mod._read_upload, files_mod._write_download = spy(read), spy(write)
        try:
            up = await aclient.files.upload(src)
            return await aclient.files.download(up, to=tmp_path)
        finally:
            files_mod._read_upload, files_mod._write_download = read, write

    out = asyncio.run(main())
    assert out.is_file() and threads == [False, False]  # read and write, both in a thread


def test_the_async_client_shares_the_same_loop(fake):
    """The same outage through AsyncClient: the decisions are the shared ones."""

    async def main():
        async with AsyncClient(
            API_KEY,
            base_url=BASE,
            transport=httpx.MockTransport(fake),
            retry=RetryPolicy(base_s=0.0, cap_s=0.0),
        ) as c:
            fake.fail_next("/v1/generations", None, times=2)
            fake.fail_next("/v1/generations", 504, b"<html>gateway timeout</html>")
            h = await c.generations.create(tool_id="t-song-v5", payload={"prompt": "x"})
            fake.fail_next("/v1/files", "lost")
            with pytest.raises(APIConnectionError):
                await c.files.upload(b"RIFF", filename="x.wav")
            return h

    h = asyncio.run(main())
    assert fake.created == 1 and len(posts(fake)) == 4 and h.task_id == "task-1"
    assert len(fake.files) == 1
