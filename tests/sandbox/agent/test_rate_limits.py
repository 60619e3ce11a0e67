"""Agent One's per-tier rate limits (spec: flash 30/h 150/d, standard 20/100, pro 10/50),
as rolling windows on the sandbox clock (admin POST /_sandbox/clock)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from songlab.spec import AGENT_RATE_LIMITS
from tests.sandbox.agent._agent_http import api, create

PROSE = "hello there"  # nothing for the tools to do: the cheapest, quickest run


def advance(admin: httpx.Client, seconds: float) -> None:
    r = admin.post("/_sandbox/clock", json={"advance_seconds": seconds})
    assert r.status_code == 200, r.text


def refused(r: httpx.Response, window: str | None = None) -> bool:
    body = r.json()
    return (
        r.status_code == 429
        and body["error"] == "RateLimited"
        and body["retryable"] is True
        and (window is None or f"per {window}" in body["message"])
    )


@pytest.mark.parametrize("tier", ["flash", "standard", "pro"])
def test_hour_and_day_windows(
    sandbox: Any, admin: httpx.Client, new_account: Any, tier: str
) -> None:
    per_hour, per_day = AGENT_RATE_LIMITS[tier]
    with api(sandbox, new_account(balance_tokens=1000)) as c:
        made = 0
        for _hour in range(per_day // per_hour):
            for _ in range(per_hour):
                r = create(c, tier, prompt=PROSE)
                assert r.status_code == 201, (made, r.text)
                made += 1
            r = create(c, tier, prompt=PROSE)
            assert refused(r, "hour" if made < per_day else None), r.text
            advance(admin, 3601)  # the hour window rolls on; the day window still holds them all
        assert made == per_day
        r = create(c, tier, prompt=PROSE)
        assert refused(r, "day"), r.text
        advance(
            admin, 86400 - 3601 * (per_day // per_hour) + 1
        )  # the first hour's runs leave the day
        assert create(c, tier, prompt=PROSE).status_code == 201


def test_tiers_and_accounts_count_apart(
    sandbox: Any, admin: httpx.Client, new_account: Any
) -> None:
    acct = new_account(balance_tokens=1000)
    with api(sandbox, acct) as c, api(sandbox, new_account(balance_tokens=1000)) as other:
        for _ in range(AGENT_RATE_LIMITS["pro"][0]):
            assert create(c, "pro", prompt=PROSE).status_code == 201
        assert refused(create(c, "pro", prompt=PROSE), "hour")
        assert create(c, "standard", prompt=PROSE).status_code == 201
        assert create(other, "pro", prompt=PROSE).status_code == 201
        # a refused create bills and creates nothing
        r = admin.get(f"/_sandbox/accounts/{acct.account_id}/ledger")
        kinds = {e["task_id"] for e in r.json()["entries"]}
        listing = c.get("/v1/generations", params={"limit": 100}).json()["data"]
        assert len(listing) == AGENT_RATE_LIMITS["pro"][0] + 1
        assert kinds <= {t["task_id"] for t in listing}
