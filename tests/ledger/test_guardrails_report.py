"""The guardrails read the report's engine (the same figures) and the HTML report opens with
their alerts."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta
from decimal import Decimal
from pathlib import Path

import pytest

from songlab.ledger import budgets, engine, guardrails
from songlab.ledger.report import write_report
from tests.ledger._guardrails_data import Year, synthetic_year, write_ledger


@pytest.fixture(scope="module")
def year() -> Year:
    return synthetic_year(seed=5, days=90, drift=0.0, spike=(88, "podcast", 200))


def test_the_daily_series_are_the_reports_figures(year: Year) -> None:
    """Per day, per project and per key, Decimal for Decimal, what the engine's spend says
    (the report's tables and the notebook's accessor)."""
    as_of = datetime.combine(year.start + timedelta(days=year.days), time(), UTC)
    cube = guardrails.daily_series(year.table, as_of=as_of)
    with engine.open_ledger(year.table) as lg:
        by_day = lg.spend(["day"])
        by_project_day = lg.spend(["day", "project"])
        by_key_day = lg.spend(["day", "key_id"])
    total = guardrails.series(cube)
    assert total == {d: v for d, v in zip(by_day["day"], by_day["cost_usd"], strict=True) if v}
    podcast = guardrails.series(cube, "project", "podcast")
    rows = by_project_day[by_project_day["project"] == "podcast"]
    assert podcast == dict(zip(rows["day"], rows["cost_usd"], strict=True))
    key = guardrails.series(cube, "key", "key_fedcba987654")
    rows = by_key_day[by_key_day["key_id"] == "key_fedcba987654"]
    assert key == dict(zip(rows["day"], rows["cost_usd"], strict=True))
    assert sum(total.values(), Decimal(0)) == engine.spend(year.table, ())["cost_usd"].iloc[0]


def test_the_html_report_opens_with_the_alerts(year: Year, tmp_path: Path) -> None:
    as_of = datetime.combine(year.start + timedelta(days=89), time(8), UTC)
    snap = {
        "taken_at": as_of,
        "total_effective": 500_000,
        "base_effective": 450_000,
        "extra_tokens": 50_000,
        "base_expires_at": as_of + timedelta(days=10),
    }
    store = write_ledger(year.table, tmp_path / "ledger", [snap])
    settings = budgets.parse('[[budget]]\nproject = "podcast"\nusd = "30"\nperiod = "week"\n')
    out = write_report(store, tmp_path / "r.html", as_of=as_of, guardrails=settings)
    page = out.read_text(encoding="utf-8")
    h1, alerts_at, period_at = page.index("<h1>"), page.index("Alerts as of"), page.index("Period:")
    assert h1 < alerts_at < period_at  # right under the title, before anything else
    box = page[alerts_at:period_at]
    assert "<b>ANOMALY</b> project podcast: spent $" in box
    assert "<b>OVER</b> budget project podcast ($30.00 a week, soft)" in box
    assert "<b>EXPIRING</b> base tokens: " in box
    plain = write_report(store, tmp_path / "plain.html", as_of=as_of, guardrails=False)
    assert "Alerts as of" not in plain.read_text(encoding="utf-8")


def test_a_quiet_account_says_so(tmp_path: Path) -> None:
    y = synthetic_year(seed=6, days=40, drift=0.0)
    as_of = datetime.combine(y.start + timedelta(days=39), time(8), UTC)
    out = write_report(y.table, tmp_path / "q.html", as_of=as_of)
    page = out.read_text(encoding="utf-8")
    assert "No active alerts." in page
    assert "no balance snapshot: expiring tokens need a ledger refreshed" in page


def test_an_empty_ledger_has_nothing_to_say() -> None:
    from songlab.ledger import _schema

    empty = _schema.empty_table(_schema.TASKS)
    report = guardrails.check(empty)
    assert report.alerts == [] and report.anomalies == [] and report.history_days == 0
    assert str(report).startswith("no active alerts as of ")
    assert all(f.mean_usd == 0 and f.low_usd is None for f in report.forecasts)
    assert "0 complete days of spend so far" in report.notes[0]
