"""Rate limits (rolling windows on the sandbox clock), faults and the admin tool switches."""

from __future__ import annotations

import time

import pytest

from songlab.sandbox.tasks.ratelimit import MODEL_LIMIT, TOOL_LIMIT
from tests.sandbox._util import balance, client, create, ledger, tid, wait

# The windows count creates, so the limit tests run on their own sandbox whose worker
# fails every task at once (fault fail_tasks=1): hundreds of creates render nothing.


@pytest.fixture(scope="module")
def sandbox():
    import httpx

    from songlab.sandbox.http.server import serve_in_thread

    with serve_in_thread(speed=1000, admin_token="limits-admin") as srv:
        with httpx.Client(
            base_url=srv.base_url, verify=False, headers={"X-Sandbox-Admin-Token": "limits-admin"}
        ) as adm:
            adm.put("/_sandbox/faults", json={"fail_tasks": 1.0})
        yield srv


@pytest.fixture
def faults(admin):
    """Set faults for one test; the module's fail_tasks=1 comes back afterwards."""
    yield lambda **f: admin.put("/_sandbox/faults", json=f)
    admin.put("/_sandbox/faults", json={"fail_tasks": 1.0})


AGENT = {"flash": (30, 150), "standard": (20, 100), "pro": (10, 50)}


def _agent(c, tier: str):
    return create(c, "agent", tier, {"prompt": "hello"})


def _assert_rate_limited(r):
    assert r.status_code == 429, r.text
    body = r.json()
    assert body["error"] == "RateLimited" and body["retryable"] is True
    assert not [h for h in r.headers if h.lower().startswith(("x-ratelimit", "retry-after"))]


@pytest.mark.parametrize("tier", ["flash", "standard", "pro"])
def test_agent_hourly_limit_per_tier(sandbox, admin, new_account, tier):
    hour, _ = AGENT[tier]
    with client(sandbox, new_account().api_key) as c:
        for _ in range(hour):
            assert _agent(c, tier).status_code == 201
        _assert_rate_limited(_agent(c, tier))
        other = next(t for t in AGENT if t != tier)
        assert _agent(c, other).status_code == 201  # another tier has its own window
        admin.post("/_sandbox/clock", json={"advance_seconds": 3601})
        assert _agent(c, tier).status_code == 201


@pytest.mark.parametrize("tier", ["flash", "standard", "pro"])
def test_agent_daily_limit_per_tier(sandbox, admin, new_account, tier):
    hour, day = AGENT[tier]
    with client(sandbox, new_account().api_key) as c:
        made = 0
        while made < day:
            for _ in range(hour):
                assert _agent(c, tier).status_code == 201
                made += 1
            admin.post("/_sandbox/clock", json={"advance_seconds": 3601})
        _assert_rate_limited(_agent(c, tier))  # a fresh hour, but a full day
        admin.post("/_sandbox/clock", json={"advance_seconds": 86400})
        assert _agent(c, tier).status_code == 201


def test_tool_daily_limit_for_other_tools(sandbox, admin, new_account):
    hour, day = TOOL_LIMIT
    with client(sandbox, new_account().api_key) as c:
        made = 0
        while made < day:
            for _ in range(hour):
                assert create(c, "write_lyrics", "v5", {"prompt": "x"}).status_code == 201
                made += 1
            admin.post("/_sandbox/clock", json={"advance_seconds": 3601})
        _assert_rate_limited(create(c, "write_lyrics", "v5", {"prompt": "x"}))


def test_rate_limit_is_per_account(sandbox, new_account):
    with client(sandbox, new_account().api_key) as a, client(sandbox, new_account().api_key) as b:
        for _ in range(10):
            assert _agent(a, "pro").status_code == 201
        _assert_rate_limited(_agent(a, "pro"))
        assert _agent(b, "pro").status_code == 201


def test_tool_hourly_limit_for_other_tools(sandbox, admin, new_account):
    with client(sandbox, new_account().api_key) as c:
        for _ in range(TOOL_LIMIT[0]):
            assert create(c, "write_lyrics", "v5", {"prompt": "x"}).status_code == 201
        r = create(c, "write_lyrics", "v5", {"prompt": "x"})
        _assert_rate_limited(r)
        assert "write_lyrics" in r.json()["message"]
        # a refused create bills nothing and makes no task
        assert len(c.get("/v1/generations", params={"limit": 100}).json()["data"]) == 100
        admin.post("/_sandbox/clock", json={"advance_seconds": 3601})
        assert create(c, "write_lyrics", "v5", {"prompt": "x"}).status_code == 201


def test_model_hourly_limit_spans_the_tools_of_a_model(sandbox, new_account):
    hour, per_tool = MODEL_LIMIT[0], TOOL_LIMIT[0]
    assert per_tool < hour < 2 * per_tool + 1
    with client(sandbox, new_account().api_key) as c:
        for _ in range(per_tool):
            assert create(c, "write_lyrics", "v5", {"prompt": "x"}).status_code == 201
        for _ in range(hour - per_tool - 1):
            r = create(c, "sfx_gen", "v5", {"prompt": "x", "duration_seconds": 0.5})
            assert r.status_code == 201, r.text
        assert create(c, "generate_music", "v5", {"prompt": "x"}).status_code == 201
        r = create(c, "generate_song", "v5", {"prompt": "x"})  # a fresh tool, a full model
        _assert_rate_limited(r)
        assert "model v5" in r.json()["message"]
        assert create(c, "generate_song", "v6", {"prompt": "x"}).status_code == 201


# --- faults ---------------------------------------------------------------------------


def test_fault_rate_limited_refuses_creates_and_bills_nothing(sandbox, faults, new_account, admin):
    acct = new_account()
    assert faults(rate_limited=1.0).status_code == 200
    with client(sandbox, acct.api_key) as c:
        _assert_rate_limited(create(c, "write_lyrics", "v5", {"prompt": "x"}))
        _assert_rate_limited(c.post("/v7/generate/song", json={"prompt": "x"}))
        assert c.get("/v1/generations").json()["data"] == []  # reads are untouched
        assert c.post("/v1/files", files={"file": ("a", b"abc", "text/plain")}).status_code == 201
        assert balance(c)["total_effective"] == 100000
    assert ledger(admin, acct.account_id) == []


def test_fault_dependency_unavailable(sandbox, faults, new_account):
    faults(dependency_unavailable=1.0)
    with client(sandbox, new_account().api_key) as c:
        r = c.post("/v1/voice-clones", json={})
        assert r.status_code == 503
        assert r.json() == {
            "error": "DependencyUnavailable",
            "message": r.json()["message"],
            "retryable": True,
        }


def test_fault_probabilities_are_seedable(sandbox, faults, new_account):
    def draws() -> list[int]:
        faults(rate_limited=0.5, seed=42)
        with client(sandbox, new_account().api_key) as c:
            return [create(c, "write_lyrics", "v5", {"prompt": "x"}).status_code for _ in range(12)]

    first = draws()
    assert first == draws()
    assert set(first) == {201, 429}


def test_fault_latency_delays_vendor_routes_but_not_health_or_admin(sandbox, faults, admin):
    faults(latency_ms=300)
    with client(sandbox, "sk-sandbox-demo") as c:
        t0 = time.monotonic()
        c.get("/v1/account/balance")
        slow = time.monotonic() - t0
        t0 = time.monotonic()
        c.get("/health")
        admin.get("/_sandbox/faults")
        fast = time.monotonic() - t0
    assert slow >= 0.3
    assert fast < slow


def test_fault_fail_tasks_fails_in_the_worker(sandbox, faults, new_account):
    faults(fail_tasks=1.0)
    with client(sandbox, new_account().api_key) as c:
        r = create(c, "write_lyrics", "v5", {"prompt": "x"})
        assert r.status_code == 201
        snap = wait(c, r.json()["task_id"])
        assert snap["status"] == "failed" and snap["cost_usd"] == "0.00000000"
        assert balance(c)["total_effective"] == 100000


@pytest.mark.parametrize(
    "body",
    [{"rate_limited": 2}, {"latency_ms": -1}, {"nope": 1}, {"seed": "x"}, {"latency_ms": 10**12}],
)
def test_fault_body_rules(admin, body):
    assert admin.put("/_sandbox/faults", json=body).status_code == 422


@pytest.mark.parametrize(
    "body",
    [
        {"advance_seconds": 1e308},
        {"advance_seconds": 10**30},
        {"advance_seconds": -1},
        {"advance_seconds": "1"},
    ],
)
def test_clock_refuses_an_advance_it_could_not_show(admin, body):
    """Found by fuzzing: 1e308 s moved the clock past what a date can show (then every
    answer with a time was a 500). A refused advance leaves the clock where it was."""
    before = admin.get("/_sandbox/clock").json()["now"]
    r = admin.post("/_sandbox/clock", json=body)
    assert r.status_code == 422 and r.json()["message"].startswith("advance_seconds")
    assert admin.get("/_sandbox/clock").json()["now"][:16] == before[:16]


def test_clock_never_passes_the_year_9000():
    from songlab.sandbox.storage.clock import MAX_ADVANCE_SECONDS, Clock

    clock = Clock(offset=250 * 365 * 86400 * 28)  # about the year 9000 already
    with pytest.raises(ValueError, match="year 9000"):
        clock.advance(MAX_ADVANCE_SECONDS)
    assert Clock().advance(MAX_ADVANCE_SECONDS) > Clock().now()


@pytest.mark.parametrize("body", [{"balance_tokens": 10**30}, {"extra_tokens": 10**19}])
def test_account_token_amounts_are_bounded(admin, body):
    r = admin.post("/_sandbox/accounts", json=body)  # was an unhandled SQLite overflow (500)
    assert r.status_code == 422 and r.json()["message"].startswith(next(iter(body)))


# --- tool switches ------------------------------------------------------------------


def test_inactive_tool_is_unknown_and_unlisted(sandbox, admin, new_account):
    t = tid("write_lyrics", "v5")
    with client(sandbox, new_account().api_key) as c:
        try:
            assert admin.put(f"/_sandbox/tools/{t}", json={"active": False}).status_code == 200
            r = create(c, "write_lyrics", "v5", {"prompt": "x"})
            assert r.status_code == 400 and r.json()["error"] == "UnknownTool"
            assert t not in [x["id"] for x in c.get("/v1/tools").json()["data"]]
        finally:
            admin.put(f"/_sandbox/tools/{t}", json={"active": True})
        assert create(c, "write_lyrics", "v5", {"prompt": "x"}).status_code == 201


def test_unpriced_tier_is_tool_not_priced(sandbox, admin, new_account):
    t = tid("generate_song", "v5")
    with client(sandbox, new_account().api_key) as c:
        try:
            admin.put(f"/_sandbox/tools/{t}", json={"priced_licenses": [1, 2]})
            assert (
                create(
                    c, "generate_song", "v5", {"prompt": "x", "duration_seconds": 5}, license=2
                ).status_code
                == 201
            )
            r = create(c, "generate_song", "v5", {"prompt": "x"}, license=5)
            assert r.status_code == 422 and r.json()["error"] == "ToolNotPriced"
            assert r.json()["retryable"] is False
            r = c.post("/v5/generate/song", json={"prompt": "x", "license": "master"})
            assert r.status_code == 422 and r.json()["error"] == "ToolNotPriced"
            admin.put(f"/_sandbox/tools/{t}", json={"priced_licenses": []})
            r = create(c, "generate_song", "v5", {"prompt": "x"})
            assert r.status_code == 422 and r.json()["error"] == "ToolNotPriced"
            assert t not in [x["id"] for x in c.get("/v1/tools").json()["data"]]
        finally:
            admin.put(f"/_sandbox/tools/{t}", json={"priced_licenses": [1, 2, 3, 4, 5]})


def test_tool_switch_rules(admin):
    assert admin.put("/_sandbox/tools/nope", json={"active": False}).status_code == 404
    t = tid("write_lyrics", "v5")
    assert admin.put(f"/_sandbox/tools/{t}", json={"active": "no"}).status_code == 422
    assert admin.put(f"/_sandbox/tools/{t}", json={"priced_licenses": [9]}).status_code == 422
