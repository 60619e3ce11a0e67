"""Authentication, keys, health, OpenAPI and the admin guard."""

from __future__ import annotations

import httpx
import pytest

from tests.sandbox._util import client


@pytest.fixture(scope="module")
def anon(sandbox):
    with httpx.Client(base_url=sandbox.base_url, timeout=30.0, verify=False) as c:
        yield c


VENDOR_ROUTES = [
    ("GET", "/v1/generations"),
    ("GET", "/v1/generations/x"),
    ("GET", "/v1/generations/x/stream"),
    ("POST", "/v1/generations"),
    ("GET", "/v1/tools"),
    ("GET", "/v1/account/balance"),
    ("POST", "/v1/files"),
    ("GET", "/v1/files/x/url"),
    ("GET", "/v1/files/x/download"),
    ("POST", "/v7/generate/song"),
    ("POST", "/v1/voice-clones"),
    ("POST", "/v1/song-translations"),
    ("POST", "/v1/karaoke-tracks"),
]


def test_health_needs_no_auth(anon):
    r = anon.get("/health")
    assert r.status_code == 200


@pytest.mark.parametrize(("method", "path"), VENDOR_ROUTES, ids=[p for _, p in VENDOR_ROUTES])
@pytest.mark.parametrize(
    "header",
    [None, "Basic abc", "Token sk-sandbox-demo", "Bearer"],
    ids=["missing", "basic", "token", "empty-bearer"],
)
def test_missing_or_non_bearer_is_unauthenticated(anon, method, path, header):
    headers = {} if header is None else {"Authorization": header}
    r = anon.request(method, path, headers=headers)
    assert r.status_code == 401
    assert r.json() == {"error": "UNAUTHENTICATED"}


@pytest.mark.parametrize(("method", "path"), VENDOR_ROUTES, ids=[p for _, p in VENDOR_ROUTES])
def test_invalid_key(anon, method, path):
    r = anon.request(method, path, headers={"Authorization": "Bearer sk-not-a-key"})
    assert r.status_code == 401
    assert r.json() == {"error": "INVALID_API_KEY"}


def test_demo_account_is_seeded(sandbox):
    with client(sandbox, "sk-sandbox-demo") as c:
        r = c.get("/v1/account/balance")
    assert r.status_code == 200
    assert r.json()["total_effective"] <= 100000


def test_second_key_and_revocation(sandbox, admin, new_account):
    acct = new_account()
    r = admin.post(f"/_sandbox/accounts/{acct.account_id}/keys")
    assert r.status_code == 201
    second = r.json()["api_key"]
    assert second != acct.api_key
    with client(sandbox, second) as c2, client(sandbox, acct.api_key) as c1:
        assert c2.get("/v1/account/balance").status_code == 200
        assert c1.get("/v1/account/balance").json() == c2.get("/v1/account/balance").json()
        assert admin.delete(f"/_sandbox/keys/{second}").status_code == 204
        r = c2.get("/v1/account/balance")
        assert r.status_code == 401
        assert r.json() == {"error": "INVALID_API_KEY"}
        assert c1.get("/v1/account/balance").status_code == 200  # the other key still works
    assert admin.delete(f"/_sandbox/keys/{second}").status_code == 404


ADMIN_ROUTES = [
    ("POST", "/_sandbox/accounts"),
    ("POST", "/_sandbox/accounts/acct_demo/keys"),
    ("DELETE", "/_sandbox/keys/sk-sandbox-demo"),
    ("POST", "/_sandbox/accounts/acct_demo/topup"),
    ("GET", "/_sandbox/accounts/acct_demo/ledger"),
    ("PUT", "/_sandbox/faults"),
    ("DELETE", "/_sandbox/faults"),
    ("POST", "/_sandbox/clock"),
    ("PUT", "/_sandbox/tools/x"),
]


@pytest.mark.parametrize(("method", "path"), ADMIN_ROUTES, ids=[p for _, p in ADMIN_ROUTES])
@pytest.mark.parametrize("token", [None, "wrong"], ids=["missing", "wrong"])
def test_admin_routes_need_the_admin_token(anon, method, path, token):
    headers = {"Authorization": "Bearer sk-sandbox-demo"}
    if token:
        headers["X-Sandbox-Admin-Token"] = token
    r = anon.request(method, path, headers=headers, json={})
    assert r.status_code == 401
    assert r.json()["error"] == "UNAUTHENTICATED"


def test_create_account_body(admin, sandbox):
    r = admin.post(
        "/_sandbox/accounts", json={"name": "x", "balance_tokens": 50, "extra_tokens": 7}
    )
    assert r.status_code == 201
    body = r.json()
    assert set(body) == {"account_id", "api_key"}
    with client(sandbox, body["api_key"]) as c:
        bal = c.get("/v1/account/balance").json()
    assert (bal["base_effective"], bal["extra_tokens"], bal["total_effective"]) == (50, 7, 57)
    r = admin.post("/_sandbox/accounts", json={"balance_tokens": -1})
    assert r.status_code == 422


def test_openapi_is_served_with_admin_routes_apart(anon):
    r = anon.get("/openapi.json")
    assert r.status_code == 200
    paths = r.json()["paths"]
    assert "/v1/generations" in paths and "/v1/generations/{task_id}" in paths
    admin_ops = [op for p, ops in paths.items() if p.startswith("/_sandbox") for op in ops.values()]
    assert admin_ops and all(op["tags"] == ["sandbox-admin"] for op in admin_ops)
    assert all(op["security"] == [{"SandboxAdmin": []}] for op in admin_ops)
