"""Every error class from the real sandbox; retries under injected faults bill once;
streams resume under dropped connections; the key never leaks (real httpx/httpcore logs)."""

from __future__ import annotations

import asyncio
import json
import logging
import traceback

import httpx
import pytest

from songlab.client import (
    AsyncClient,
    DependencyUnavailable,
    Forbidden,
    InsufficientFunds,
    InvalidApiKey,
    InvalidGenerationInput,
    MissingField,
    NotFound,
    RateLimited,
    ResourceNotFound,
    RetryPolicy,
    SonglabError,
    ToolNotPriced,
    Unauthenticated,
    UnexpectedResponse,
    UnknownTool,
    error_from_response,
)
from tests.client.live import LIVE_RETRY, faults, ledger, live_client, tool_switch

NO_RETRY = RetryPolicy.never()
SONG = {"prompt": "test", "duration_seconds": 5}


@pytest.fixture
def acct(new_account):
    return new_account()


@pytest.fixture
def client(sandbox, acct):
    c = live_client(sandbox, acct.api_key)
    yield c
    c.close()


def song_tool(c):
    return c.tools.find("generate_song", "v5").id


def test_unknown_tool(client, admin):
    with pytest.raises(UnknownTool) as info:
        client.generations.create(tool_id="no-such-tool", payload=SONG)
    assert info.value.status_code == 400 and not info.value.retryable
    tid = client.tools.find("sfx_gen").id
    with tool_switch(admin, tid, active=False), pytest.raises(UnknownTool):
        client.generations.create(tool_id=tid, payload={"prompt": "boom"})


def test_tool_not_priced(client, admin):
    tid = client.tools.find("write_lyrics").id
    with tool_switch(admin, tid, priced_licenses=[1]), pytest.raises(ToolNotPriced) as info:
        client.generations.create(tool_id=tid, payload={"prompt": "love"}, license="master")
    assert info.value.status_code == 422


def test_insufficient_funds(sandbox, new_account):
    c = live_client(sandbox, new_account(balance_tokens=1).api_key)
    with pytest.raises(InsufficientFunds) as info:
        c.compat.generate_song("v7", prompt="x")
    assert info.value.status_code == 402 and info.value.message


def test_invalid_generation_input_names_the_field(client):
    with pytest.raises(InvalidGenerationInput) as info:
        client.generations.create(
            tool_id=client.tools.find("remix_song", "v5").id,
            payload={"song": "https://example.com/a.mp3"},
        )
    assert "song" in info.value.message and info.value.status_code == 422


@pytest.mark.parametrize(
    ("fault", "cls", "status"),
    [("rate_limited", RateLimited, 429), ("dependency_unavailable", DependencyUnavailable, 503)],
)
def test_retryable_errors_surface_when_retries_are_off(sandbox, acct, admin, fault, cls, status):
    c = live_client(sandbox, acct.api_key, retry=NO_RETRY)
    tid = song_tool(c)
    with faults(admin, **{fault: 1.0}), pytest.raises(cls) as info:
        c.generations.create(tool_id=tid, payload=SONG)
    assert info.value.retryable and info.value.status_code == status
    assert ledger(admin, acct.account_id) == [] and list(c.generations.list()) == []


def test_auth_errors(sandbox, acct, admin, new_account):
    r = httpx.get(sandbox.base_url + "/v1/account/balance")
    assert type(error_from_response(r.status_code, r.content)) is Unauthenticated
    with pytest.raises(InvalidApiKey):
        live_client(sandbox, "sk-not-a-key").account.balance()
    spare = new_account()
    assert admin.delete(f"/_sandbox/keys/{spare.api_key}").status_code == 204
    with pytest.raises(InvalidApiKey) as info:
        live_client(sandbox, spare.api_key).account.balance()
    assert info.value.status_code == 401


def test_forbidden_and_not_found(client, sandbox, new_account):
    h = client.compat.generate_song("v5", prompt="x", duration_seconds=5)
    other = live_client(sandbox, new_account().api_key)
    with pytest.raises(Forbidden):
        other.generations.get(h.task_id)
    with pytest.raises(Forbidden):
        list(other.generations.stream(h.task_id))
    with pytest.raises(NotFound):
        client.generations.get("00000000-0000-0000-0000-000000000000")
    with pytest.raises(NotFound):
        list(client.generations.stream("00000000-0000-0000-0000-000000000000"))
    h.wait()


def test_missing_field_and_raw_payload_object(sandbox, acct, client):
    headers = {"Authorization": f"Bearer {acct.api_key}"}
    for path in ("/v6/extend/song", "/v5/extend/music", "/v1/generate/extend"):
        r = httpx.post(sandbox.base_url + path, json={"lyrics": "x"}, headers=headers)
        assert type(error_from_response(r.status_code, r.content)) is MissingField, path
    # the documented sharp edge the client never triggers: a raw-object payload_json
    r = httpx.post(
        sandbox.base_url + "/v1/generations",
        headers=headers,
        json={"tool_id": song_tool(client), "payload_json": {"prompt": "x"}},
    )
    assert type(error_from_response(r.status_code, r.content)) is UnexpectedResponse
    assert r.status_code == 500


def test_resource_not_found(client):
    with pytest.raises(ResourceNotFound):
        client.files.link("no-such-file")


@pytest.mark.parametrize("fault", ["rate_limited", "dependency_unavailable"])
def test_retry_under_faults_creates_one_task_and_one_billing_line(client, admin, acct, fault):
    tid = song_tool(client)
    posts = []
    client._http.event_hooks["request"].append(
        lambda r: posts.append(r.headers.get("idempotency-key")) if r.method == "POST" else None
    )
    with faults(admin, **{fault: 0.6, "seed": 3}):
        handles = [
            client.generations.create(tool_id=tid, payload=SONG, take=i + 1) for i in range(3)
        ]
    assert len(posts) > 3  # some attempts were refused and retried
    for h in handles:
        assert posts.count(h.idempotency_key) >= 1 and h.wait().status == "completed"
    assert len(set(posts)) == 3
    tasks = list(client.generations.list())
    assert sorted(t.task_id for t in tasks) == sorted(h.task_id for h in handles)
    lines = ledger(admin, acct.account_id)
    assert sorted(e["task_id"] for e in lines) == sorted(h.task_id for h in handles)


class LoseFirstAnswer(httpx.BaseTransport):
    """Sends each create for real, then drops the first answer (as a network would)."""

    def __init__(self) -> None:
        self.inner = httpx.HTTPTransport()
        self.lost = 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self.inner.handle_request(request)
        if request.method == "POST" and not self.lost:
            response.read()
            response.close()
            self.lost += 1
            raise httpx.ReadError("connection reset by peer", request=request)
        return response


def test_a_create_whose_answer_was_lost_returns_the_original_task(sandbox, acct, admin):
    transport = LoseFirstAnswer()
    c = live_client(sandbox, acct.api_key, transport=transport)
    h = c.compat.generate_song("v5", prompt="x", duration_seconds=5)
    assert transport.lost == 1
    assert [t.task_id for t in c.generations.list()] == [h.task_id]
    h.wait()
    assert [e["task_id"] for e in ledger(admin, acct.account_id)] == [h.task_id]


@pytest.mark.parametrize("drop_after", [1, 3])
def test_stream_resume_under_dropped_connections(client, admin, drop_after):
    h = client.compat.generate_song("v5", prompt="x", duration_seconds=5)
    connections = []
    client._http.event_hooks["request"].append(
        lambda r: (
            connections.append(r.url.params.get("after"))
            if r.url.path.endswith("/stream")
            else None
        )
    )
    with faults(admin, drop_stream_after=drop_after):
        events = list(h.stream())
    seqs = [e.seq for e in events]
    assert seqs == sorted(set(seqs)) and events[-1].is_terminal  # once each, in order
    assert not any(e.is_resume_signal for e in events)  # the drops were transparent
    assert len(connections) > 2 and connections[0] is None
    assert [int(a) for a in connections[1:]] == sorted(int(a) for a in connections[1:])
    replay = list(client.generations.stream(h.task_id))  # no faults: every task event
    assert [(e.seq, e.kind) for e in replay] == [(e.seq, e.kind) for e in events]  # no gap


def test_wait_under_dropped_connections_and_latency(client, admin):
    h = client.compat.generate_song("v5", prompt="x", duration_seconds=5)
    seen = []
    with faults(admin, drop_stream_after=2, latency_ms=20):
        task = h.wait(on_event=seen.append, timeout=60)
    assert task.status == "completed"
    replay = list(client.generations.stream(h.task_id))
    assert [e.seq for e in seen] == [e.seq for e in replay]


def test_async_client_against_the_sandbox(sandbox, acct, admin):
    async def main():
        async with AsyncClient(acct.api_key, base_url=sandbox.base_url, retry=LIVE_RETRY) as c:
            with faults(admin, rate_limited=0.5, seed=5, drop_stream_after=2):
                hs = await asyncio.gather(
                    *[
                        c.compat.generate_song("v5", prompt=f"s{i}", duration_seconds=5)
                        for i in range(4)
                    ]
                )
                seqs = [[e.seq async for e in c.generations.stream(h.task_id)] for h in hs]
            finals = await asyncio.gather(*[h.wait() for h in hs])
            listed = [t.task_id async for t in c.generations.list(limit=2)]
            return hs, seqs, finals, listed

    hs, seqs, finals, listed = asyncio.run(main())
    assert all(s == sorted(set(s)) and len(s) >= 3 for s in seqs)
    assert {t.status for t in finals} == {"completed"}
    assert sorted(listed) == sorted(h.task_id for h in hs)
    assert len(ledger(admin, acct.account_id)) == 4


def test_key_never_leaks_over_real_http(sandbox, new_account, admin, caplog):
    acct = new_account(balance_tokens=10)
    caplog.set_level(logging.DEBUG)
    c = live_client(sandbox, acct.api_key)
    texts = [repr(c)]
    h = c.compat.generate_song("v5", prompt="x", duration_seconds=5)
    task = h.wait()
    texts += [repr(h), repr(task), json.dumps(task.raw)]
    errors = []
    for call in (
        lambda: c.compat.generate_song("v7", prompt="x"),  # 402
        lambda: c.generations.get("nope"),
        lambda: c.files.link("nope"),
        lambda: c.generations.create(tool_id="nope", payload={"a": 1}),
    ):
        try:
            call()
        except SonglabError as e:
            errors.append(e)
    with faults(admin, rate_limited=1.0):
        try:
            live_client(
                sandbox, acct.api_key, retry=RetryPolicy(max_attempts=2, base_s=0, cap_s=0)
            ).compat.generate_song("v5", prompt="x")
        except SonglabError as e:
            errors.append(e)
    assert len(errors) == 5
    for e in errors:
        texts += [str(e), repr(e), "".join(traceback.format_exception(e))]
    records = [r.getMessage() for r in caplog.records]
    assert any(r.name.startswith("httpcore") for r in caplog.records)  # DEBUG reached httpcore
    secret = acct.api_key
    for text in texts + records + [caplog.text]:
        assert secret not in text
        assert secret.removeprefix("sk-") not in text
