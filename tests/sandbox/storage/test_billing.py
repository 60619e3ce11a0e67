"""Billing: reservation at create, charge at completion, release on failure, the ledger."""

from __future__ import annotations

import concurrent.futures as cf

import pytest

from tests.sandbox._util import balance, client, create, ledger, run, wait

LEDGER_KEYS = {
    "task_id",
    "parent_task_id",
    "tool_id",
    "operation",
    "model",
    "license",
    "kind",
    "amount_usd",
    "created_at",
}


def test_charge_writes_one_generation_line(sandbox, admin, new_account):
    acct = new_account()
    with client(sandbox, acct.api_key) as c:
        snap = run(c, "generate_song", "v6", {"prompt": "x", "duration_seconds": 5}, license=3)
        lines = ledger(admin, acct.account_id)
        assert len(lines) == 1
        line = lines[0]
        assert set(line) == LEDGER_KEYS
        assert line["task_id"] == snap["task_id"] and line["parent_task_id"] is None
        assert (line["operation"], line["model"], line["license"], line["kind"]) == (
            "generate_song",
            "v6",
            3,
            "generation",
        )
        assert line["amount_usd"] == "0.20000000" and line["tool_id"] == snap["tool_id"]
        assert balance(c)["total_effective"] == 100000 - 20


def test_reservation_lowers_the_balance_at_once_and_failure_releases(sandbox, admin, new_account):
    acct = new_account(balance_tokens=100)
    with client(sandbox, acct.api_key) as c:
        admin.put("/_sandbox/faults", json={"fail_tasks": 1.0})
        try:
            r = create(c, "sfx_gen", "v5", {"prompt": "x", "duration_seconds": 1})
            assert r.status_code == 201
            assert balance(c)["total_effective"] in (46, 100)  # reserved (or already released)
            snap = wait(c, r.json()["task_id"])
        finally:
            admin.delete("/_sandbox/faults")
        assert snap["status"] == "failed"
        assert set(snap["failure"]) == {"error", "message"}
        assert balance(c)["total_effective"] == 100
        assert ledger(admin, acct.account_id) == []


def test_insufficient_funds_names_the_shortfall(sandbox, new_account):
    acct = new_account(balance_tokens=5)
    with client(sandbox, acct.api_key) as c:
        r = create(c, "generate_song", "v5", {"prompt": "x"})
        assert r.status_code == 402
        body = r.json()
        assert body["error"] == "InsufficientFunds" and body["retryable"] is False
        assert "0.02" in body["message"] and "short" in body["message"]
        assert c.get("/v1/generations").json()["data"] == []


def test_top_up_then_retry(sandbox, admin, new_account):
    acct = new_account(balance_tokens=0)
    with client(sandbox, acct.api_key) as c:
        assert create(c, "write_lyrics", "v5", {"prompt": "x"}).status_code == 402
        r = admin.post(f"/_sandbox/accounts/{acct.account_id}/topup", json={"tokens": 3})
        assert r.status_code == 200
        assert r.json()["extra_tokens"] == 3 and r.json()["total_effective"] == 3
        assert create(c, "write_lyrics", "v5", {"prompt": "x"}).status_code == 201


def test_concurrent_creates_never_overdraw(sandbox, new_account):
    acct = new_account(balance_tokens=4 * 54 + 10)  # room for 4 sound effects at 0.54
    with client(sandbox, acct.api_key) as c:

        def one(i: int) -> int:
            return create(
                c, "sfx_gen", "v5", {"prompt": str(i), "duration_seconds": 0.5}
            ).status_code

        with cf.ThreadPoolExecutor(16) as pool:
            codes = list(pool.map(one, range(16)))
        assert codes.count(201) == 4 and codes.count(402) == 12
        assert balance(c)["total_effective"] == 10
        for t in c.get("/v1/generations").json()["data"]:
            wait(c, t["task_id"])
        assert balance(c)["total_effective"] == 10


def test_base_is_spent_before_extra_and_expires_after_a_year(sandbox, admin, new_account):
    acct = new_account(balance_tokens=10, extra_tokens=10)
    with client(sandbox, acct.api_key) as c:
        bal = balance(c)
        assert (bal["base_effective"], bal["extra_tokens"], bal["total_effective"]) == (10, 10, 20)
        run(c, "write_lyrics", "v5", {"prompt": "x"})
        bal = balance(c)
        assert (bal["base_effective"], bal["extra_tokens"]) == (8, 10)
        run(c, "generate_song", "v5", {"prompt": "x", "duration_seconds": 5})  # 7 tokens
        assert (balance(c)["base_effective"], balance(c)["extra_tokens"]) == (1, 10)
        run(c, "write_lyrics", "v5", {"prompt": "x"})  # 1 from base, 1 from extra
        assert (balance(c)["base_effective"], balance(c)["extra_tokens"]) == (0, 9)


@pytest.fixture
def own_sandbox():
    """A sandbox of its own: this test moves the clock a year (the session one's demo
    account, used by other areas' tests, must keep its base balance)."""
    from songlab.sandbox.http.server import serve_in_thread

    with serve_in_thread(speed=1000, admin_token="year-admin") as srv:
        yield srv


def test_base_expires_one_year_after_account_creation(own_sandbox):
    from datetime import datetime

    import httpx

    adm = httpx.Client(
        base_url=own_sandbox.base_url, verify=False, headers={"X-Sandbox-Admin-Token": "year-admin"}
    )
    with adm:
        acct = adm.post("/_sandbox/accounts", json={"balance_tokens": 10, "extra_tokens": 4}).json()
        with client(own_sandbox, acct["api_key"]) as c:
            bal = balance(c)
            now = datetime.fromisoformat(adm.get("/_sandbox/clock").json()["now"])
            expires = datetime.fromisoformat(bal["base_expires_at"])
            assert 364.9 < (expires - now).total_seconds() / 86400 <= 365.0
            adm.post("/_sandbox/clock", json={"advance_seconds": 364 * 86400})
            assert balance(c)["base_effective"] == 10
            adm.post("/_sandbox/clock", json={"advance_seconds": 2 * 86400})
            bal = balance(c)
            assert (bal["base_effective"], bal["extra_tokens"], bal["total_effective"]) == (0, 4, 4)
            assert create(c, "generate_song", "v5", {"prompt": "x"}).status_code == 402
            assert create(c, "write_lyrics", "v5", {"prompt": "x"}).status_code == 201
            assert balance(c)["extra_tokens"] == 2


def test_failed_render_is_released_not_billed(sandbox, admin, new_account):
    acct = new_account()
    with client(sandbox, acct.api_key) as c:
        from tests.sandbox._util import signed_url, tone, upload

        fid = upload(c, tone(1.0))
        snap = run(
            c, "extend_song", "v5", {"song": {"url": signed_url(c, fid)}, "extend_type": "sideways"}
        )
        assert snap["status"] == "failed"
        assert "extend_type" in snap["failure"]["message"]
        assert balance(c)["total_effective"] == 100000
        assert ledger(admin, acct.account_id) == []


def test_snapshot_cost_matches_the_ledger(sandbox, admin, new_account):
    acct = new_account()
    with client(sandbox, acct.api_key) as c:
        snap = run(c, "write_lyrics", "v5", {"prompt": "x"}, license=5)
        assert snap["cost_usd"] == ledger(admin, acct.account_id)[0]["amount_usd"] == "0.02000000"


def test_unknown_account_admin_routes_404(admin):
    assert admin.get("/_sandbox/accounts/acct_nope/ledger").status_code == 404
    assert admin.post("/_sandbox/accounts/acct_nope/topup", json={"tokens": 1}).status_code == 404
    assert admin.post("/_sandbox/accounts/acct_nope/keys").status_code == 404
