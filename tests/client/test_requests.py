"""The sync client against the in-memory fake: request building, retries, idempotency,
pagination, stream resume, wait, files, budget and estimates."""

from __future__ import annotations

import json
from decimal import Decimal

import httpx
import pytest

from songlab.client import (
    APIConnectionError,
    BudgetExceeded,
    DependencyUnavailable,
    Forbidden,
    InsufficientFunds,
    NotFound,
    RateLimited,
    ResourceNotFound,
    Task,
    TaskFailed,
    TaskHandle,
    ToolLookupError,
    UnexpectedResponse,
    ValidationError,
    WaitTimeout,
)
from tests.client.fakes import API_KEY, BASE, task_body

RL = {"error": "RateLimited", "message": "slow down", "retryable": True}
DU = {"error": "DependencyUnavailable", "message": "consent service down", "retryable": True}


def posts(fake):
    return [r for r in fake.requests if r.method == "POST"]


def test_native_create_sends_payload_json_as_a_string_and_a_generated_key(client, fake):
    h = client.generations.create(
        tool_id="t-song-v5", payload={"prompt": "lo-fi", "seed": 3}, license="standard"
    )
    (req,) = posts(fake)
    body = json.loads(req.content)
    assert isinstance(body["payload_json"], str)
    assert json.loads(body["payload_json"]) == {"prompt": "lo-fi", "seed": 3}
    assert body["license"] == 2 and body["tool_id"] == "t-song-v5"
    assert req.headers["authorization"] == f"Bearer {API_KEY}"
    assert req.headers["content-type"] == "application/json"
    key = req.headers["idempotency-key"]
    assert h.idempotency_key == key and len(key) <= 200
    assert isinstance(h, TaskHandle) and (h.task_id, h.status) == ("task-1", "queued")


def test_payload_given_as_json_text_is_sent_unchanged(client, fake):
    client.generations.create(tool_id="t-song-v5", payload='{"prompt": "x"}')
    assert json.loads(posts(fake)[0].content)["payload_json"] == '{"prompt": "x"}'


def test_license_is_omitted_unless_given(client, fake):
    client.generations.create(tool_id="t-song-v5", payload={"prompt": "x"})
    assert "license" not in json.loads(posts(fake)[0].content)


def test_create_by_operation_and_model(client, fake):
    client.generations.create(operation="generate_song", model="v7", payload={"prompt": "x"})
    assert json.loads(posts(fake)[0].content)["tool_id"] == "t-song-v7"
    with pytest.raises(ToolLookupError, match="several models"):
        client.generations.create(operation="generate_song", payload={"prompt": "x"})
    # a model the listing does not hold is refused, naming what it holds: never another tool
    with pytest.raises(ValidationError, match=r"model: one of v5, v7 .*got 'v9'"):
        client.generations.create(operation="generate_song", model="v9", payload={"prompt": "x"})
    assert posts(fake) and len(posts(fake)) == 1


def test_tool_listing_is_fetched_once(client, fake):
    for _ in range(3):
        client.generations.create(tool_id="t-song-v5", payload={"prompt": "x"})
    assert fake.paths("GET").count("/v1/tools") == 1


def test_given_idempotency_key_is_sent(client, fake):
    h = client.compat.generate_song("v6", prompt="p", idempotency_key="order-42:a.b_c-d")
    assert posts(fake)[0].headers["idempotency-key"] == "order-42:a.b_c-d"
    assert h.idempotency_key == "order-42:a.b_c-d"


@pytest.mark.parametrize("body", [RL, DU], ids=["429", "503"])
def test_retryable_errors_are_retried_with_the_same_key(client, fake, body):
    fake.fail_next("/v1/generations", 429 if body is RL else 503, body, times=2)
    h = client.generations.create(tool_id="t-song-v5", payload={"prompt": "x"})
    keys = {r.headers["idempotency-key"] for r in posts(fake)}
    assert len(posts(fake)) == 3 and len(keys) == 1
    assert fake.created == 1 and h.task_id == "task-1"


def test_retries_are_bounded(client, fake):
    fake.fail_next("/v1/generations", 429, RL, times=10)
    with pytest.raises(RateLimited) as info:
        client.generations.create(tool_id="t-song-v5", payload={"prompt": "x"})
    assert len(posts(fake)) == client.retry.max_attempts
    assert info.value.retryable and fake.created == 0


@pytest.mark.parametrize(
    ("status", "body", "cls"),
    [
        (
            402,
            {"error": "InsufficientFunds", "message": "short", "retryable": False},
            InsufficientFunds,
        ),
        (400, b"<html>bad request</html>", UnexpectedResponse),
    ],
    ids=["402", "400-html"],
)
def test_final_errors_are_not_retried(client, fake, status, body, cls):
    fake.fail_next("/v1/generations", status, body)
    with pytest.raises(cls):
        client.generations.create(tool_id="t-song-v5", payload={"prompt": "x"})
    assert len(posts(fake)) == 1


def test_a_create_whose_answer_was_lost_returns_the_original_task(client, fake):
    fake.fail_next("/v1/generations", "lost")
    h = client.generations.create(tool_id="t-song-v5", payload={"prompt": "x"})
    assert len(posts(fake)) == 2 and fake.created == 1 and h.task_id == "task-1"
    assert posts(fake)[0].headers["idempotency-key"] == posts(fake)[1].headers["idempotency-key"]


def test_transport_failure_after_retries_is_a_connection_error(client, fake):
    fake.fail_next("/v1/account/balance", None, times=10)
    with pytest.raises(APIConnectionError) as info:
        client.account.balance()
    assert info.value.retryable and "/v1/account/balance" in str(info.value)


def test_get_parses_the_snapshot(client, fake):
    meta = {"vocal_id": "voice-9"}
    fake.tasks["t1"] = task_body(
        "t1",
        output={
            "metadata_json": json.dumps(meta),
            "text": None,
            "assets": [{"file_id": "f-1", "blob_hash": "h", "url": "http://x/_storage/1"}],
        },
    )
    t = client.generations.get("t1")
    assert isinstance(t, Task) and t.done and t.cost_usd == Decimal("0.07")
    assert t.vocal_id == "voice-9" and t.output.metadata_json == json.dumps(meta)
    assert t.file_ids == ("f-1",) and not hasattr(t.output.assets[0], "url")
    assert t.raw["output"]["assets"][0]["url"].endswith("/_storage/1")
    assert t.created_at.tzinfo is not None


def test_get_errors(client):
    with pytest.raises(NotFound):
        client.generations.get("absent")
    with pytest.raises(Forbidden):
        client.generations.get("foreign")


def test_list_follows_cursors_lazily(client, fake):
    fake.pages = [
        {"data": [task_body("a"), task_body("b")], "next_cursor": "1"},
        {"data": [task_body("c")], "next_cursor": None},
    ]
    it = iter(client.generations.list(limit=2))
    assert fake.paths() == []
    assert next(it).task_id == "a" and next(it).task_id == "b"
    assert fake.paths().count("/v1/generations") == 1
    assert [t.task_id for t in it] == ["c"]
    assert [r.url.params.get("cursor") for r in fake.requests] == [None, "1"]
    assert all(r.url.params["limit"] == "2" for r in fake.requests)


def ev(seq, kind="progress", **extra):
    return {"seq": seq, "kind": kind, "task_id": "t1", **extra}


def test_stream_resumes_after_drops_and_timeouts_without_gap_or_duplicate(client, fake):
    fake.tasks["t1"] = task_body("t1")
    fake.streams["t1"] = [
        [ev(1, status="queued"), ev(2, status="processing")],  # dropped
        [ev(2, dup=True), ev(3), ev(4, "timeout", cursor=3)],  # server replays 2; then timeout
        [ev(5), ev(6, "terminal", status="completed")],
    ]
    seqs = [e.seq for e in client.generations.stream("t1")]
    assert seqs == [1, 2, 3, 5, 6]  # the timeout signal is consumed, not shown
    afters = [r.url.params.get("after") for r in fake.requests if r.url.path.endswith("/stream")]
    assert afters == [None, "2", "3"]  # resumed from the timeout's cursor


def test_wait_uses_the_stream_and_calls_back_each_event(client, fake):
    fake.tasks["t1"] = task_body("t1")
    fake.streams["t1"] = [[ev(1), ev(2, "terminal", status="completed")]]
    seen = []
    task = client.task("t1").wait(on_event=seen.append)
    assert task.status == "completed" and [e.seq for e in seen] == [1, 2]


def test_wait_falls_back_to_polling_when_the_stream_breaks(client, fake):
    fake.tasks["t1"] = task_body("t1")
    fake.streams["t1"] = [[]]  # every connection closes at once with nothing
    # the stream is followed until the deadline, then one poll gives the outcome
    task = client.generations.wait("t1", timeout=3)
    assert task.status == "completed"
    assert fake.paths().count("/v1/generations/t1") >= 1


def test_wait_deadline_carries_the_task_id(client, fake, monkeypatch):
    fake.tasks["t1"] = task_body("t1", status="processing")
    clock = iter(range(0, 10_000, 7))
    monkeypatch.setattr("songlab.client._sync.time.monotonic", lambda: next(clock))
    with pytest.raises(WaitTimeout) as info:
        client.generations.wait("t1", timeout=20, use_stream=False)
    assert info.value.task_id == "t1" and "client.task('t1')" in str(info.value)
    assert info.value.last_status == "processing"


def test_wait_on_a_failed_task(client, fake):
    fake.tasks["t1"] = task_body(
        "t1", status="failed", failure={"error": "InvalidGenerationInput", "message": "bad"}
    )
    with pytest.raises(TaskFailed, match="InvalidGenerationInput: bad") as info:
        client.generations.wait("t1", use_stream=False)
    assert info.value.task.status == "failed"
    assert client.generations.wait("t1", use_stream=False, raise_on_failure=False).failure


def test_task_handle_from_id_alone(client, fake):
    fake.tasks["t9"] = task_body("t9")
    h = client.task("t9")
    assert h.task_id == "t9" and h.get().status == "completed"


def test_files_upload_link_download_and_read(client, fake, tmp_path):
    import numpy as np
    import soundfile as sf

    wav = tmp_path / "tone.wav"
    sf.write(wav, np.zeros((800, 2), dtype=np.float32), 8000)
    up = client.files.upload(wav)
    req = posts(fake)[0]
    assert req.headers["content-type"].startswith("multipart/form-data")
    assert up.file_id == "file-1" and up.size_bytes == len(req.content)
    link = client.files.link(up)
    assert link.url.startswith(BASE + "/_signed/") and link.expires_at.year == 2026
    assert client.files.link(up).url == link.url  # minted again, not cached
    assert fake.paths().count("/v1/files/file-1/url") == 2
    fake.files["file-1"] = wav.read_bytes()
    assert client.files.download(up.file_id) == wav.read_bytes()
    signed = [r for r in fake.requests if r.url.path.startswith("/_signed/")]
    assert signed and all("authorization" not in r.headers for r in signed)
    out = client.files.download(up, to=tmp_path / "copy.wav")
    assert out.read_bytes() == wav.read_bytes()
    audio, rate = client.files.read(up)
    assert rate == 8000 and audio.shape == (2, 800) and audio.dtype == np.float32
    with pytest.raises(ResourceNotFound):
        client.files.link("nope")


def test_upload_from_bytes_and_url(client, fake):
    client.files.upload(b"ID3 data", filename="a.mp3")
    client.files.upload("http://svc.test/_signed/abc")
    first, second = posts(fake)
    assert b'filename="a.mp3"' in first.content
    assert json.loads(second.content) == {"source_url": "http://svc.test/_signed/abc"}


def test_dedicated_routes_send_license_names(client, fake):
    h = client.voice_clones.create(
        reference_file_id="f-ref", consent=True, rights_attestation="mine", license=3, name="Ann"
    )
    t = client.song_translations.create(
        song_file_id="f", target_language="French", song_style="female pop"
    )
    w = client.workflows.karaoke_track(song_file_id="f", license="sync")
    bodies = [json.loads(r.content) for r in posts(fake)]
    assert [r.url.path for r in posts(fake)] == [
        "/v1/voice-clones",
        "/v1/song-translations",
        "/v1/karaoke-tracks",
    ]
    assert bodies[0] == {
        "reference_file_id": "f-ref",
        "consent": True,
        "rights_attestation": "mine",
        "version": "v5",
        "license": "distribution",
        "name": "Ann",
    }
    assert bodies[1]["license"] == "royalty_free" and bodies[1]["syllable_matched"] is True
    assert bodies[2] == {"song_file_id": "f", "license": "sync"}
    assert h.consent_id == "consent-1" and t.task_id and w.task_id


def test_compat_routes(client, fake):
    client.compat.generate_song("v7", prompt="p", lyrics="l", vocal_id="voice-1")
    client.compat.generate_singing("v6", style_of_music="soul", lyrics="la")
    client.compat.extend_song("v5", audio_url="u", lyrics="more")
    client.compat.extend_music(audio_url="u", extend_seconds=30.0)
    client.compat.extend_music(audio_url="u", alias=True)
    assert [r.url.path for r in posts(fake)] == [
        "/v7/generate/song",
        "/v6/generate/singing",
        "/v5/extend/song",
        "/v5/extend/music",
        "/v1/generate/extend",
    ]
    assert json.loads(posts(fake)[1].content) == {"styleOfMusic": "soul", "lyrics": "la"}
    assert all("tool_id" not in json.loads(r.content) for r in posts(fake))


def test_voice_clone_to_vocal_id(client, fake):
    fake.tasks["task-1"] = None  # set after create below
    clone = None

    def finish():
        fake.tasks["task-1"] = task_body(
            "task-1",
            operation="vocal_clone",
            output={"metadata_json": json.dumps({"vocal_id": "voice-abc"})},
        )

    fake.streams["task-1"] = [[ev(1, "terminal", status="completed")]]
    orig = fake._route

    def route(request):
        resp = orig(request)
        if request.method == "POST":
            finish()
        return resp

    fake._route = route
    clone = client.voice_clones.clone(
        reference_file_id="f-ref", consent=True, rights_attestation="mine"
    )
    assert clone.vocal_id == "voice-abc" and clone.consent_id == "consent-1"


TRACE = {
    "steps": [
        {"index": 0, "kind": "prose", "text": "Planning"},
        {
            "index": 1,
            "kind": "tool_call",
            "tool": "generate_song",
            "tool_id": "t-song-v5",
            "status": "completed",
            "cost_usd": "0.07",
            "task_id": "sub-1",
            "file_ids": ["f-9"],
        },
        {"index": 2, "kind": "verification", "text": "Sounds right"},
    ],
    "usage": {"input_tokens": 1200, "output_tokens": 300},
    "agent_fee_usd": "0.00180",
    "total_cost_usd": "0.07180",
    "stopped_by": None,
}


def test_agent_run_returns_the_parsed_trace(client, fake):
    orig = fake._route

    def route(request):
        resp = orig(request)
        if request.method == "POST":
            body = json.loads(request.content)
            assert body["tool_id"] == "t-agent-pro"
            assert json.loads(body["payload_json"]) == {
                "prompt": "make a jingle",
                "max_steps": 5,
                "max_budget": 50,
            }
            fake.tasks["task-1"] = task_body(
                "task-1",
                operation="agent",
                model="pro",
                output={"text": "Done.", "metadata_json": json.dumps(TRACE)},
            )
        return resp

    fake._route = route
    fake.streams["task-1"] = [[ev(1, "terminal", status="completed")]]
    run = client.agent.run(tier="pro", prompt="make a jingle", max_steps=5, max_budget=50)
    assert run.text == "Done." and run.stopped_by is None
    assert run.trace.usage.input_tokens == 1200
    assert run.trace.total_cost_usd == Decimal("0.07180")
    assert [s.kind for s in run.trace.steps] == ["prose", "tool_call", "verification"]
    assert run.trace.tool_calls[0].cost_usd == Decimal("0.07")
    assert run.trace.file_ids == ("f-9",)


def test_tools_and_balance(client):
    tools = client.tools.list()
    assert {t.operation for t in tools} >= {"generate_song", "agent"}
    assert client.tools.agent("standard").id == "t-agent-standard"
    assert client.tools.find("sfx_gen").id == "t-sfx-v5"
    bal = client.account.balance()
    assert bal.total_effective == 99993 and bal.total_usd == Decimal("999.93")


def test_estimates(client):
    assert client.estimate(tool_id="t-song-v7", license="master").usd == Decimal("1.67")
    assert client.estimate(operation="generate_song", model="v6", license=2).usd == Decimal("0.15")
    assert client.estimate(route="/v7/generate/song").usd == Decimal("0.12")
    assert client.estimate(route="/v1/voice-clones").usd == Decimal("12.00")
    assert client.estimate(route="/v1/audio-inpainting").usd == Decimal("1.00")
    assert client.estimate(route="/v1/song-translations").usd > 0
    assert client.estimate(tier="flash", max_budget=25).usd == Decimal("0.25")
    assert not client.estimate(tier="flash").bounded
    with pytest.raises(ValueError):
        client.estimate(route="/v1/nothing")
    with pytest.raises(ValueError):
        client.estimate(tier="pro", route="/v1/voice-clones")


def test_budget_refuses_before_sending_and_counts_what_was_created(client, fake):
    with client.budget(usd="0.20") as b:
        client.generations.create(tool_id="t-song-v5", payload={"prompt": "x"})  # 0.07
        client.compat.generate_song("v5", prompt="p")  # 0.07
        with pytest.raises(BudgetExceeded) as info:
            client.compat.generate_song("v7", prompt="p")  # 0.12 > 0.06 left
        assert info.value.estimate_usd == Decimal("0.12")
        with pytest.raises(BudgetExceeded, match="max_budget"):
            client.agent.start(tier="flash", prompt="p")  # unbounded
        client.agent.start(tier="flash", prompt="p", max_budget=5)  # 0.05
    assert b.spent == Decimal("0.19") and len(b.task_ids) == 3
    assert len(posts(fake)) == 3
    client.compat.generate_song("v7", prompt="p")  # outside the block: no guard
    assert len(posts(fake)) == 4


def test_budget_counts_an_idempotent_repeat_once_and_releases_failures(client, fake):
    with client.budget(usd="1") as b:
        client.compat.generate_song("v5", prompt="p", idempotency_key="same")
        client.compat.generate_song("v5", prompt="p", idempotency_key="same")
        fake.fail_next(
            "/v5/generate/song",
            402,
            {"error": "InsufficientFunds", "message": "x", "retryable": False},
        )
        with pytest.raises(InsufficientFunds):
            client.compat.generate_song("v5", prompt="p")
    assert b.spent == Decimal("0.07") and b.held == 0 and b.task_ids == ["task-1"]


def test_dependency_unavailable_on_a_dedicated_route_is_retried(client, fake):
    fake.fail_next("/v1/voice-clones", 503, DU)
    h = client.voice_clones.create(reference_file_id="f", consent=True, rights_attestation="r")
    assert h.consent_id and len(posts(fake)) == 2
    with pytest.raises(DependencyUnavailable):
        fake.fail_next("/v1/voice-clones", 503, DU, times=9)
        client.voice_clones.create(
            reference_file_id="f", consent=True, rights_attestation="r", take=2
        )


def test_timeouts_are_retried_then_raised_as_api_timeout_error(client, fake):
    from songlab.client import APITimeoutError

    calls = []

    def slow(request):
        calls.append(request)
        raise httpx.ReadTimeout("timed out", request=request)

    fake._route = slow
    with pytest.raises(APITimeoutError) as info:
        client.tools.list()
    assert len(calls) == client.retry.max_attempts and info.value.code == "timeout"
