"""The guardrails read the report's engine (the same figures) and the HTML report opens with
their alerts."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pandas as pd
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


def test_a_report_counts_in_words() -> None:
    from dataclasses import replace

    from songlab.ledger import _schema

    report = guardrails.check(_schema.empty_table(_schema.TASKS))
    at = f"{report.as_of:%Y-%m-%d %H:%M:%S}"
    one = replace(report, forecasts=report.forecasts[:1], budgets=[object()] * 1)
    assert repr(one) == (
        f"<GuardrailReport as of {at} UTC: 0 alerts, 1 forecast, 1 budget, 0 anomalies>"
    )
    two = replace(one, budgets=[object()] * 2, anomalies=[object()])
    assert repr(two).endswith(", 1 forecast, 2 budgets, 1 anomaly>")


BUDGETS_FILE = """
[[budget]]
project = "podcast"
usd = "30"
period = "week"
[[budget]]
key = "key_1234567890ab"
usd = "100000"
period = "month"
[[budget]]
tag = "launch"
usd = "100000"
period = "quarter"
"""


@dataclass
class Judged:
    store: Any
    as_of: datetime
    amounts: list[str]
    settings: budgets.Guardrails
    report: guardrails.GuardrailReport  # guardrails.check of the same budgets
    mtd: Decimal  # the account's month to date, from the engine


@pytest.fixture(scope="module")
def judged(year: Year, tmp_path_factory: pytest.TempPathFactory) -> Judged:
    """One ledger, the budgets of a file and of ``--budget`` amounts, checked once."""
    as_of = datetime.combine(year.start + timedelta(days=year.days), time(), UTC)
    store = write_ledger(year.table, tmp_path_factory.mktemp("judged") / "ledger", [])
    with engine.open_ledger(year.table) as lg:
        mtd = lg.totals(where=f"day >= DATE '{as_of.date().replace(day=1)}'")["cost_usd"]
    # the account's monthly budget just above what it spent: near, or on course to go over
    amounts = [str((mtd * Decimal("1.05")).quantize(Decimal("0.01"))), "research=100000"]
    settings = budgets.parse(BUDGETS_FILE)
    report = guardrails.check(store, settings.including(budgets.from_amounts(amounts)), as_of=as_of)
    return Judged(store, as_of, amounts, settings, report, mtd)


def test_budgets_of_every_scope_are_the_engines_spend(judged: Judged) -> None:
    """A budget of the account, a project, a key and a tag, each of its period (day, week,
    month, quarter, reset at its start): spent is the engine's sum of the same tasks."""
    by_scope = {(b.rule.scope, b.rule.period): b for b in judged.report.budgets}
    assert set(by_scope) == {
        ("project", "week"),
        ("key", "month"),
        ("tag", "quarter"),
        ("account", "month"),
        ("project", "month"),
    }
    where = {
        ("project", "week"): "project = 'podcast'",
        ("key", "month"): "key_id = 'key_1234567890ab'",
        ("tag", "quarter"): "list_contains(string_split(coalesce(tags, ''), ','), 'launch')",
        ("account", "month"): "TRUE",
        ("project", "month"): "project = 'research'",
    }
    with engine.open_ledger(judged.store) as lg:
        for scope, b in by_scope.items():
            assert b.start <= judged.as_of.date() <= b.end
            spent = lg.totals(where=f"{where[scope]} AND day >= DATE '{b.start}'")["cost_usd"]
            assert b.spent_usd == spent, scope
    assert by_scope[("account", "month")].spent_usd == judged.mtd
    assert by_scope[("project", "week")].status == "over"  # the podcast spike's week


def test_forecasts_come_in_total_by_project_and_by_key(judged: Judged) -> None:
    """The month and the quarter, a mean inside an 80% interval, for the account, its
    costliest projects and its keys; what each has spent so far is the engine's."""
    # keyed by scope and kind of period (a forecast's period is its label: 2025-04, 2025-Q2)
    fc = {(f.scope, "quarter" if "-Q" in f.period else "month"): f for f in judged.report.forecasts}
    scopes = {s for s, _ in fc}
    assert {"total", "project jingles", "project podcast", "key key_0a1b2c3d4e5f"} <= scopes
    assert {"key key_1234567890ab", "key key_fedcba987654"} <= scopes
    table = judged.report.forecast_table()
    with engine.open_ledger(judged.store) as lg:
        for scope in ("total", "project podcast", "key key_fedcba987654"):
            for period in ("month", "quarter"):
                f = fc[(scope, period)]
                assert f.low_usd is not None and f.high_usd is not None
                assert f.low_usd <= f.mean_usd <= f.high_usd and f.level == 0.8
                assert f.spent_usd <= f.mean_usd and not f.too_few
            kind, _, value = scope.partition(" ")
            column = {"project": "project", "key": "key_id"}.get(kind)
            where = "TRUE" if column is None else f"{column} = '{value}'"
            start = fc[(scope, "quarter")].start
            spent = lg.totals(where=f"{where} AND day >= DATE '{start}'")["cost_usd"]
            assert fc[(scope, "quarter")].spent_usd == spent
            assert fc[(scope, "quarter")].high_usd - fc[(scope, "quarter")].low_usd > (
                fc[(scope, "month")].high_usd - fc[(scope, "month")].low_usd
            )
    assert set(table["interval"]) == {"80%"}


def test_the_report_s_budgets_are_judged_once(judged: Judged, tmp_path: Path) -> None:
    """``--budget`` amounts and the budgets file are one set of definitions: the report's
    budget table (HTML, CSV), its card and its alerts give the guardrails' one answer."""
    out = write_report(
        judged.store,
        tmp_path / "r.html",
        as_of=judged.as_of,
        budgets=judged.amounts,
        guardrails=judged.settings,
        csv_dir=str(tmp_path / "csv"),
    )
    page = out.read_text(encoding="utf-8")
    expected = judged.report
    table = guardrails.budget_table(expected.budgets)
    assert table["scope"].tolist() == [
        "project podcast, week",
        "key key_1234567890ab",
        "tag launch, quarter",
        "overall",
        "project research",
    ]
    status = table["status"].tolist()
    assert status[0] == "over" and status[3] in ("near", "forecast over")
    assert status[1] == status[2] == status[4] == "ok"
    assert table["spent_usd"].tolist()[3] == judged.mtd  # exact: the engine's month to date
    csv = pd.read_csv(tmp_path / "csv" / "budgets.csv", dtype=str)
    assert csv["scope"].tolist() == table["scope"].tolist()
    assert csv["status"].tolist() == status
    box = page[page.index("Alerts as of") : page.index("Period:")]
    for b in expected.budgets:  # every budget not ok is an alert, in its table's state
        if b.status != "ok":
            assert f"<b>{b.status.upper()}</b> budget {b.rule.label}" in box
        else:
            assert b.rule.label not in box
    card = page[page.index('data-figure="budget"') :].split("</div>")[0]
    assert "over: $" in card and "project podcast, week" in card  # the worst of them


def test_budget_amounts_are_rules() -> None:
    rules = budgets.from_amounts(["500", "podcast=120.50"])
    assert [(r.scope, r.value, r.usd, r.period, r.hard) for r in rules] == [
        ("account", None, Decimal("500"), "month", False),
        ("project", "podcast", Decimal("120.50"), "month", False),
    ]
    same = budgets.parse('[[budget]]\nusd = "500"\nperiod = "month"\n')
    assert len(same.including(rules).budgets) == 2  # the account's $500 a month is there once
    with pytest.raises(ValueError, match=r"budget: an amount above 0 for project x, got 0"):
        budgets.from_amounts(["x=0"])
    with pytest.raises(ValueError, match=r"budget x: an amount in USD"):
        budgets.from_amounts(["x=lots"])


def test_check_judges_budget_amounts_like_the_file(
    judged: Judged, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``songlab report --check --budget 1``: the same monthly budget, the same alert line."""
    from songlab.cli.report import report_main

    as_of = judged.as_of.isoformat()
    argv = ["--check", "--ledger", str(judged.store.path), "--no-refresh", "--as-of", as_of]
    argv += ["--state", str(tmp_path / "state.json"), "--budget", "1"]
    assert report_main(argv) == 3
    lines = capsys.readouterr().out.splitlines()
    assert any(line.startswith("OVER budget the account ($1.00 a month, soft)") for line in lines)
    assert report_main([*argv[:-1], "0"]) == 2
    assert "budget: an amount above 0 for the account, got 0" in capsys.readouterr().err
