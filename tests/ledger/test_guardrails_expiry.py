"""Expiring tokens (``songlab.ledger.expiry``): by hand on known balances and rates, from what the
spec's balance shows, and on the sandbox clock: an account whose base tokens expire next
month, burnt at a known rate, leaves the tokens it should."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest

from songlab.ledger import expiry, guardrails
from songlab.ledger.store import LedgerStore

AS_OF = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)  # a Friday, noon
EXPIRES = "2026-12-20T12:00:00Z"  # 30 days later, to the hour


def _weekly(days: int = 60) -> dict[date, Decimal]:
    """Weekdays $30, weekends $10."""
    out = {}
    for i in range(1, days + 1):
        d = AS_OF.date() - timedelta(days=i)
        out[d] = Decimal(30 if d.weekday() < 5 else 10)
    return out


def _balance(total: int, base: int, extra: int, **kw: Any) -> dict[str, Any]:
    return {
        "total_effective": total,
        "base_effective": base,
        "extra_tokens": extra,
        "base_expires_at": EXPIRES,
        "taken_at": AS_OF,
        **kw,
    }


def test_unused_base_tokens_at_the_weekly_rate() -> None:
    """30 days of weekdays at $30 and weekends at $10, from Friday noon to Sunday noon: half a
    Friday (15), four weeks (680), a Saturday (10), half a Sunday (5): $710, 71,000 tokens,
    taken from the base first: 150,000 - 71,000 = 79,000 left to expire."""
    o = expiry.outlook(_balance(200_000, 150_000, 50_000), _weekly(), as_of=AS_OF)
    assert o.unused_tokens == 79_000
    assert o.unused_usd == Decimal("790.00")
    assert o.days_to_expiry == 30.0
    assert o.rate_usd_per_day == Decimal("23.67")  # 710 / 30
    assert o.p_unused == 1.0 and o.runs_out_on is None and o.p_runs_out == 0.0
    assert o.rate_source == "ledger" and o.method.startswith("ETS(A,N,A)")
    assert "79,000 base tokens ($790.00) expected to expire unused at 2026-12-20 12:00" in (
        o.describe()
    )


def test_the_balance_runs_out_first() -> None:
    """50,000 tokens ($500) at that rate: Friday noon 15, then 10, 10, 150 ... reaches $500 on
    Friday 11 December, before the base would expire: nothing left to expire."""
    o = expiry.outlook(_balance(50_000, 40_000, 10_000), _weekly(), as_of=AS_OF)
    assert o.runs_out_on == date(2026, 12, 11)
    assert o.unused_tokens == 0 and o.p_runs_out == 1.0
    assert "runs out around 2026-12-11 first" in o.describe()


def test_an_interval_when_the_spend_varies() -> None:
    import numpy as np

    rng = np.random.default_rng(7)
    hist = {d: v * Decimal(str(round(rng.uniform(0.6, 1.4), 2))) for d, v in _weekly(90).items()}
    o = expiry.outlook(_balance(200_000, 150_000, 50_000), hist, as_of=AS_OF)
    assert o.unused_low is not None and o.unused_high is not None
    assert o.unused_low < o.unused_tokens < o.unused_high
    assert 40_000 < o.unused_tokens < 110_000


def test_past_expiry_the_base_is_gone() -> None:
    later = datetime(2026, 12, 21, tzinfo=UTC)
    o = expiry.outlook(_balance(60_000, 50_000, 10_000), _weekly(), as_of=later)
    assert o.base_tokens == 0 and o.unused_tokens == 0 and o.days_to_expiry is None


def test_from_what_the_spec_balance_shows_when_the_ledger_sees_less() -> None:
    """The spec profile: tasks made outside songlab have no cost the ledger can see, but the
    balance drops. Two snapshots a week apart show 14,000 tokens burnt ($20 a day) where the
    ledger sees $10 a day: the futures are scaled to the balance's rate."""
    hist = {AS_OF.date() - timedelta(days=i): Decimal(10) for i in range(1, 30)}
    snaps = [
        {"total_effective": 214_000, "taken_at": AS_OF - timedelta(days=7)},
        {"total_effective": 200_000, "taken_at": AS_OF},
    ]
    spec_only = {  # the spec's four fields, nothing else
        "total_effective": 200_000,
        "base_effective": 150_000,
        "extra_tokens": 50_000,
        "base_expires_at": EXPIRES,
    }
    o = expiry.outlook(spec_only, hist, as_of=AS_OF, snapshots=snaps)
    assert o.rate_source == "balance"
    assert o.rate_usd_per_day == Decimal("20.00")
    assert o.unused_tokens == 150_000 - 60_000  # 30 days at $20
    assert "the balance burnt $20.00 a day, more than the ledger's $10.00" in o.note
    ledger_only = expiry.outlook(spec_only, hist, as_of=AS_OF)
    assert ledger_only.rate_source == "ledger" and ledger_only.unused_tokens == 120_000


def test_the_balance_alone_when_the_ledger_prices_nothing() -> None:
    snaps = [
        {"total_effective": 100_000, "taken_at": AS_OF - timedelta(days=10)},
        {"total_effective": 120_000, "taken_at": AS_OF - timedelta(days=5)},  # a top-up: skipped
        {"total_effective": 115_000, "taken_at": AS_OF},
    ]
    o = expiry.outlook(_balance(115_000, 115_000, 0), {}, as_of=AS_OF, snapshots=snaps)
    assert o.rate_source == "balance" and o.rate_usd_per_day == Decimal("5.00")  # 5,000 / 10
    assert o.unused_tokens == 115_000 - 15_000 and o.unused_low is None
    assert expiry.balance_rate(snaps[-1:], as_of=AS_OF) is None  # one snapshot: no rate


def test_bad_balances_are_named() -> None:
    with pytest.raises(ValueError, match="balance: total_effective: a whole number of tokens"):
        expiry.outlook(_balance(1.5, 1, 0), {}, as_of=AS_OF)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="balance: base_effective: a whole number of tokens"):
        expiry.outlook(_balance(1, None, 0), {}, as_of=AS_OF)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="balance: base_expires_at: an ISO 8601 UTC time"):
        expiry.outlook(_balance(1, 1, 0, base_expires_at="next month"), {}, as_of=AS_OF)
    with pytest.raises(ValueError, match="as_of: must be timezone-aware"):
        expiry.outlook(_balance(1, 1, 0), {}, as_of=datetime(2026, 1, 1))


# ------------------------------------------------------------------- on the sandbox clock

DAYS = 14  # days of work before the check
PER_DAY = 3  # write_lyrics v5 a day: $0.02 each, 6 tokens a day
LEFT = 30  # days between the check and base_expires_at


@pytest.fixture(scope="module")
def clock_sandbox() -> Iterator[Any]:
    """A sandbox of its own: this module moves its clock eleven months."""
    from songlab.sandbox.http.server import serve_in_thread

    srv = serve_in_thread(db=":memory:", speed=500, admin_token="expiry-admin")
    try:
        yield srv
    finally:
        srv.stop()


def _now(admin: httpx.Client) -> datetime:
    r = admin.post("/_sandbox/clock", json={"advance_seconds": 0})
    r.raise_for_status()
    return datetime.fromisoformat(r.json()["now"].replace("Z", "+00:00"))


def _advance(admin: httpx.Client, seconds: float) -> datetime:
    r = admin.post("/_sandbox/clock", json={"advance_seconds": seconds})
    r.raise_for_status()
    return datetime.fromisoformat(r.json()["now"].replace("Z", "+00:00"))


@pytest.mark.slow
def test_expiry_on_the_sandbox_clock(clock_sandbox: Any, tmp_path: Path) -> None:
    """Two accounts, made now: their base tokens expire a year later (the sandbox's rule). The
    clock moves to DAYS + LEFT days before that; each account then makes PER_DAY lyrics a day
    (6 tokens) for DAYS days; the check, LEFT days before expiry, finds:
    - the roomy one (1,000 base tokens): 1,000 - 84 spent = 916, minus 30 days x 6 = 736 left
      to expire;
    - the tight one (150 base + 50 extra): 200 - 84 = 116 left, gone in 20 days (6 a day):
      runs out 20 days after the check, before the base expires; nothing left to expire."""
    from songlab.client import Client

    admin = httpx.Client(
        base_url=clock_sandbox.base_url,
        headers={"X-Sandbox-Admin-Token": clock_sandbox.admin_token},
        timeout=30.0,
    )
    accounts = {
        "roomy": admin.post("/_sandbox/accounts", json={"balance_tokens": 1000}).json(),
        "tight": admin.post(
            "/_sandbox/accounts", json={"balance_tokens": 150, "extra_tokens": 50}
        ).json(),
    }
    clients = {
        k: Client(a["api_key"], base_url=clock_sandbox.base_url, reuse=False)
        for k, a in accounts.items()
    }
    try:
        expires = clients["roomy"].account.balance().base_expires_at
        assert isinstance(expires, datetime)
        _advance(admin, (expires - _now(admin)).total_seconds() - (DAYS + LEFT) * 86400)
        for _ in range(DAYS):
            for c in clients.values():
                for _ in range(PER_DAY):
                    h = c.generations.create(
                        operation="write_lyrics", model="v5", payload={"prompt": "a day's work"}
                    )
                    c.generations.wait(h.task_id, timeout=60)
            _advance(admin, 86400)
        now = _now(admin)
        assert abs((expires - now) - timedelta(days=LEFT)) < timedelta(minutes=5)
        outlooks = {}
        for k, c in clients.items():
            store = LedgerStore(tmp_path / k)
            store.refresh(c)  # snapshots GET /v1/account/balance
            report = guardrails.check(store, as_of=now, paths=200)
            assert report.expiry is not None
            outlooks[k] = report.expiry
            bal = store.balances().iloc[-1]
            assert int(bal["total_effective"]) == {"roomy": 1000, "tight": 200}[k] - 84
    finally:
        for c in clients.values():
            c.close()
        admin.close()
    roomy, tight = outlooks["roomy"], outlooks["tight"]
    assert roomy.rate_usd_per_day == Decimal("0.06")
    assert roomy.base_tokens == 916
    assert roomy.unused_tokens == 916 - LEFT * 6  # 736
    assert roomy.runs_out_on is None
    assert tight.unused_tokens == 0 and tight.p_runs_out == 1.0
    assert tight.runs_out_on is not None
    assert abs((tight.runs_out_on - now.date()).days - 116 // 6) <= 1  # about 19-20 days
    assert tight.runs_out_on < expires.date()


@pytest.mark.slow
@pytest.mark.parametrize("profile", ["spec", "default"])
def test_the_check_reads_what_the_balance_shows(profile: str, tmp_path: Path) -> None:
    """Against a service that answers only the spec's fields (a real ``songlab sandbox --profile
    spec`` process), and the default one: the ledger's snapshots hold the spec's four balance
    fields, and the expiry outlook is made of them; songlab's own lyrics are priced."""
    from tests._profiles import running

    sb = running(profile)
    try:
        c = sb.client(speed=500)
        try:
            store = LedgerStore(tmp_path / "ledger").track(c)
            for prompt in ("a verse", "a chorus"):  # two requests (the same one is reused)
                h = c.generations.create(
                    operation="write_lyrics", model="v5", payload={"prompt": prompt}
                )
                c.generations.wait(h.task_id, timeout=60)
            store.refresh(c)
            bal = c.account.balance()
        finally:
            c.close()
        report = guardrails.check(store, paths=200)
    finally:
        sb.stop()
    x = report.expiry
    assert x is not None
    assert (x.total_tokens, x.base_tokens, x.extra_tokens) == (
        bal.total_effective,
        bal.base_effective,
        bal.extra_tokens,
    )
    assert x.base_expires_at == bal.base_expires_at
    assert x.days_to_expiry is not None and x.days_to_expiry > 300  # a year from the account
    assert x.rate_source == "ledger" and x.unused_tokens == x.base_tokens  # no complete day yet
    assert report.alerts == []
    spent = guardrails.series(guardrails.daily_series(store, as_of=report.as_of))
    assert sum(spent.values(), Decimal(0)) == Decimal("0.04")  # billed, or estimated (spec)
