"""The profile layer's pure parts and its ASGI reshaping, without a server."""

from __future__ import annotations

import asyncio
import json

import pytest

from songlab.sandbox.config import SandboxConfig
from songlab.sandbox.http import profiles as P
from songlab.spec import ROUTES


@pytest.mark.parametrize(
    ("method", "path", "kind"),
    [
        ("GET", "/v1/generations/abc", "task"),
        ("GET", "/v1/generations", "listing"),
        ("GET", "/v1/generations/abc/stream", "stream"),
        ("GET", "/v1/generations/a/events", "events_page"),
        ("POST", "/v1/generations", "create"),
        ("POST", "/v6/generate/song", "create"),
        ("POST", "/v1/voice-clones", "create"),
        ("POST", "/v1/files", "upload"),
        ("GET", "/v1/files/f/url", "file_link"),
        ("GET", "/v1/files/f/download", "download"),
        ("GET", "/v1/tools", "tools"),
        ("GET", "/v1/account/balance", "balance"),
        ("GET", "/_sandbox/faults", None),
        ("GET", "/health", None),
        ("GET", "/_signed/x", None),
    ],
)
def test_route_kind(method: str, path: str, kind: str | None) -> None:
    assert P.route_kind(method, path) == kind


def test_spec_shapes_are_exact() -> None:
    snap = {
        "task_id": "t",
        "status": "failed",
        "cost_usd": "0",
        "failure": {"error": "x"},
        "output": {
            "text": "a",
            "assets": [{"file_id": "f", "blob_hash": "h", "url": "u", "name": "mix"}],
        },
    }
    assert P.spec_task(snap) == {
        "task_id": "t",
        "status": "failed",
        "output": {"text": "a", "assets": [{"file_id": "f", "blob_hash": "h", "url": "u"}]},
    }
    assert P.spec_event({"seq": 4, "kind": "progress", "progress": 0.5}, "progress") == {"seq": 4}
    assert P.spec_event({"seq": 5, "cursor": 4, "message": "m"}, "timeout") == {
        "seq": 5,
        "cursor": 4,
    }
    assert P.spec_error({"error": "RateLimited", "message": "m", "retryable": True, "x": 1}) == {
        "error": "RateLimited",
        "message": "m",
        "retryable": True,
    }
    assert P.spec_error({"error": "InternalServerError", "message": "m"}) == {
        "error": "InternalServerError"
    }


def test_noise_reaches_every_nested_object() -> None:
    out = P.add_noise({"a": [{"b": {"c": 1}}], "d": "x"})
    assert set(P.noise_fields()) <= set(out) and set(P.noise_fields()) <= set(out["a"][0])
    assert set(P.noise_fields()) <= set(out["a"][0]["b"]) and out["a"][0]["b"]["c"] == 1
    meta = P.add_noise(
        {"output": {"metadata_json": '{"steps": [{"kind": "prose"}]}', "text": "{not json"}}
    )["output"]
    assert set(P.noise_fields()) <= set(json.loads(meta["metadata_json"])["steps"][0])
    assert meta["text"] == "{not json"


def test_a_profile_is_checked_by_name() -> None:
    with pytest.raises(ValueError, match="profile: must be one of default, spec, noisy"):
        SandboxConfig(profile="strict")
    assert P.apply(app := object(), "default") is app  # type: ignore[arg-type]


def test_sse_frames_split_across_chunks_are_reshaped_whole() -> None:
    frames = (
        b"id: 1\nevent: progress\ndata: "
        + json.dumps({"seq": 1, "kind": "progress", "progress": 0.1}).encode()
        + b"\n\nid: 2\nevent: termi"
    )
    rest = b"nal\ndata: " + json.dumps({"seq": 2, "kind": "terminal"}).encode() + b"\n\n"

    async def app(scope, receive, send):  # type: ignore[no-untyped-def]
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"text/event-stream")],
            }
        )
        await send({"type": "http.response.body", "body": frames, "more_body": True})
        await send({"type": "http.response.body", "body": rest, "more_body": False})

    sent: list[dict] = []

    async def send(message):  # type: ignore[no-untyped-def]
        sent.append(message)

    shaper = P.Shaper(app, P.Profile("spec"))
    scope = {"type": "http", "method": "GET", "path": "/v1/generations/t/stream", "headers": []}
    asyncio.run(shaper(scope, None, send))  # type: ignore[arg-type]
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    assert body == (
        b'id: 1\nevent: progress\ndata: {"seq": 1}\n\nid: 2\nevent: terminal\ndata: {"seq": 2}\n\n'
    )


def test_connect_passes_the_profile_to_the_embedded_sandbox(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import songlab
    from songlab import _connect
    from songlab.client import ValidationError

    monkeypatch.delenv("SONGLAB_API_KEY", raising=False)
    monkeypatch.delenv("SONGLAB_BASE_URL", raising=False)
    with pytest.raises(ValidationError, match="profile"):
        songlab.connect(profile="strict")
    client = songlab.connect(profile="spec", speed=500, admin_token="profiles-connect-test")
    try:
        assert "profile spec" in capsys.readouterr().out
        tools = client.tools.list()
        assert tools and all(set(t.raw) == {"id", "model", "operation"} for t in tools)
    finally:
        client.close()
        client.sandbox.stop()
        _connect._SANDBOXES.pop((500.0, ":memory:", "profiles-connect-test", "spec"), None)


def test_the_sandboxs_own_routes_are_absent_from_the_spec_profile(monkeypatch) -> None:
    """A registry route of the sandbox's own (``origin="sandbox"``) is 404 in ``spec``, any
    method, and out of its document; served in ``default`` and ``noisy``. Every such route,
    so a new one needs no line here."""
    import dataclasses

    own = dataclasses.replace(ROUTES["karaoke-tracks"], path="own-tracks", origin="sandbox")
    monkeypatch.setitem(ROUTES, "own-tracks", own)
    assert "/v1/own-tracks" in P.own_route_paths()
    assert "/v1/karaoke-tracks" not in P.own_route_paths()
    spec, default, noisy = P.Profile(P.SPEC), P.Profile(P.DEFAULT), P.Profile(P.NOISY)
    assert spec.hides("/v1/own-tracks") and not spec.hides("/v1/karaoke-tracks")
    assert not default.hides("/v1/own-tracks") and not noisy.hides("/v1/own-tracks")
    doc = {"paths": {"/v1/own-tracks": {"post": {}}, "/v1/karaoke-tracks": {"post": {}}}}
    assert set(spec.openapi(doc)["paths"]) == {"/v1/karaoke-tracks"}
    assert set(default.openapi(doc)["paths"]) == {"/v1/own-tracks", "/v1/karaoke-tracks"}
