"""Unknown routes and methods answer in the spec's error shape; no query can abort a stream."""

from __future__ import annotations

import httpx
import pytest

from tests.sandbox._util import assert_invalid, client, run, tid


@pytest.mark.parametrize("path", ["/nope", "/v1/nope", "/v1/generations/x/y/z", "/_sandbox/nope"])
def test_unknown_routes_are_404_not_found(sandbox, path):
    r = httpx.get(sandbox.base_url + path, headers={"Authorization": "Bearer sk-sandbox-demo"})
    assert r.status_code == 404 and r.json() == {"error": "NOT_FOUND"}
    assert r.headers["content-type"] == "application/json"


@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [
        ("DELETE", "/v1/generations", "GET, POST, OPTIONS"),
        ("PATCH", "/_sandbox/faults", "GET, PUT, DELETE, OPTIONS"),  # three routes, one path
        ("PUT", "/v1/generations/abc", "GET, OPTIONS"),  # the hot path's GET included
        ("POST", "/health", "GET, OPTIONS"),
        ("GET", "/v1/files", "POST, OPTIONS"),
    ],
)
def test_unknown_methods_are_405_with_every_method_of_the_path(sandbox, method, path, allow):
    r = httpx.request(method, sandbox.base_url + path)
    assert r.status_code == 405 and r.json() == {"error": "METHOD_NOT_ALLOWED"}
    assert r.headers["allow"] == allow
    o = httpx.options(sandbox.base_url + path)
    assert o.status_code == 204 and o.headers["allow"] == allow and o.content == b""


def test_options_on_an_unknown_path_is_404(sandbox):
    r = httpx.options(sandbox.base_url + "/v1/nothing-here")
    assert r.status_code == 404 and r.json() == {"error": "NOT_FOUND"}


@pytest.mark.parametrize(
    "after",
    [
        "9223372036854775808",
        "99999999999999999999999",
        "-1",
        "1.5",
        "+3",
        " 3",
        "\u0663",
        "1_0",
        "",
    ],
)
def test_stream_after_out_of_range_or_not_digits_is_422(sandbox, new_account, after):
    """9223372036854775808 used to answer 200 and then abort the stream (SQLite overflow)."""
    with client(sandbox, new_account().api_key) as c:
        snap = run(c, "write_lyrics", "v5", {"prompt": "rain"})
        r = c.get(f"/v1/generations/{snap['task_id']}/stream", params={"after": after})
        assert_invalid(r, "after")


def test_stream_after_the_largest_seq_replays_nothing_and_closes(sandbox, new_account):
    with client(sandbox, new_account().api_key) as c:
        snap = run(c, "write_lyrics", "v5", {"prompt": "rain"})
        r = c.get(f"/v1/generations/{snap['task_id']}/stream", params={"after": str(2**63 - 1)})
        assert r.status_code == 200 and r.text == ""


@pytest.mark.parametrize("limit", ["0", "101", "1e1", "+5", "\u0665"])
def test_listing_limit_must_be_ascii_digits_in_range(acct, limit):
    assert_invalid(acct.get("/v1/generations", params={"limit": limit}), "limit")


def test_a_refused_create_keeps_the_connection(acct):
    """The documented 500 and the 422s are whole answers: the same connection goes on."""
    for _ in range(3):
        r = acct.post(
            "/v1/generations",
            json={"tool_id": tid("write_lyrics", "v5"), "payload_json": {"prompt": "x"}},
        )
        assert r.status_code == 500 and r.json()["error"] == "InternalServerError"
        assert acct.get("/v1/account/balance").status_code == 200


def test_an_unexpected_error_is_a_whole_json_500():
    """Whatever a handler raises is answered in the error shape (and logged), never a
    dropped connection or a text page."""
    import asyncio

    from songlab.sandbox.assembly import build as Sandbox
    from songlab.sandbox.config import SandboxConfig
    from songlab.sandbox.http.app import create_app

    svc = Sandbox(SandboxConfig())
    try:
        app = create_app(svc)

        @app.get("/_boom", include_in_schema=False)
        async def boom() -> None:
            raise RuntimeError("boom")

        async def call() -> httpx.Response:
            transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
            async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
                return await c.get("/_boom")

        r = asyncio.run(call())
        assert r.status_code == 500 and r.headers["content-type"] == "application/json"
        assert r.json() == {
            "error": "InternalServerError",
            "message": "internal error (RuntimeError); nothing was billed for this request",
        }
    finally:
        svc.close()


def test_an_error_with_headers_is_a_copy_the_shared_one_is_unchanged() -> None:
    from songlab.sandbox import errors

    shared = errors.MISSING_FIELD
    answered = shared.with_headers({"Allow": "GET"})
    assert answered.headers == {"Allow": "GET"} and answered.body == shared.body
    assert answered.status == shared.status and shared.headers is None
