"""Periods, roll-ups, the forecast and budgets against sums worked out by hand."""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal

import pandas as pd
import pytest

from songlab.ledger import budgets as budgets_
from songlab.ledger import forecasts, guardrails, tasks_frame
from songlab.ledger.engine import spend
from songlab.ledger.periods import (
    budget_status,
    forecast,
    in_period,
    parse_budgets,
    period,
    rollup,
)
from tests.ledger._util import snap

D = Decimal


def _task(tid: str, when: str, cost: str, project: str | None = None, **kw: object) -> dict:
    return snap(tid, created_at=when, updated_at=when, cost_usd=cost, **kw)


@pytest.fixture
def tasks() -> pd.DataFrame:
    """Hand-made: Oct 30 (Fri) 1.00; Nov 2 (Mon) 0.12 + 0.25; Nov 8 (Sun) 0.07;
    Nov 9 (Mon) 1.67 (sub-task 0.50 inside a run, not counted twice); Nov 15 2.00; Dec 1 0.30."""
    rows = [
        _task("a", "2026-10-30T23:59:59Z", "1.00"),
        _task("b", "2026-11-02T00:00:00Z", "0.12"),
        _task("c", "2026-11-02T18:30:00Z", "0.25"),
        _task("d", "2026-11-08T12:00:00Z", "0.07"),
        _task("e", "2026-11-09T09:00:00Z", "1.67"),
        _task("e-sub", "2026-11-09T09:00:01Z", "0.50", parent_task_id="e"),
        _task("f", "2026-11-15T12:00:00Z", "2.00"),
        _task("g", "2026-12-01T00:00:00Z", "0.30"),
    ]
    frame = tasks_frame(rows)
    projects = {"a": "x", "b": "x", "c": "y", "d": "y", "e": "x", "f": "y", "g": "x"}
    frame["project"] = pd.array(
        [projects.get(t) for t in frame["task_id"]], dtype=frame["project"].dtype
    )
    return frame


def _ends(p: object) -> tuple[date | None, date | None]:
    return p.start, p.end  # type: ignore[attr-defined]


def test_named_periods_from_an_as_of_date() -> None:
    as_of = datetime(2026, 11, 18, 15, tzinfo=UTC)
    assert _ends(period("month-to-date", as_of=as_of)) == (date(2026, 11, 1), date(2026, 11, 18))
    assert _ends(period("this-month", as_of=as_of)) == (date(2026, 11, 1), date(2026, 11, 30))
    assert _ends(period("last-month", as_of=as_of)) == (date(2026, 10, 1), date(2026, 10, 31))
    assert _ends(period("last-7-days", as_of=as_of)) == (date(2026, 11, 12), date(2026, 11, 18))
    assert _ends(period("year-to-date", as_of=as_of)) == (date(2026, 1, 1), date(2026, 11, 18))
    assert _ends(period("2027-02", as_of=as_of)) == (date(2027, 2, 1), date(2027, 2, 28))
    assert _ends(period(start="2026-11-02", end="2026-11-09")) == (
        date(2026, 11, 2),
        date(2026, 11, 9),
    )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"name": "fortnight"}, "period: one of"),
        ({"start": "2026-13-01"}, "from: a date"),
        ({"start": "2026-11-10", "end": "2026-11-01"}, "to: must not be before from"),
        ({"name": "this-month", "start": "2026-11-01"}, "not both"),
    ],
    ids=["unknown-name", "bad-date", "reversed", "both"],
)
def test_bad_periods_are_refused_naming_the_field(kwargs: dict, message: str) -> None:
    name = kwargs.pop("name", None)
    with pytest.raises(ValueError, match=message):
        period(name, **kwargs)


def test_in_period_includes_both_ends(tasks: pd.DataFrame) -> None:
    got = in_period(tasks, period(start="2026-11-02", end="2026-11-08"))
    assert sorted(got["task_id"]) == ["b", "c", "d"]
    assert got.songlab.total() == D("0.44")
    assert in_period(tasks, period("all")).songlab.total() == D("5.41")


def test_daily_rollup_fills_empty_days_with_zero(tasks: pd.DataFrame) -> None:
    r = rollup(tasks, "day", p=period(start="2026-11-01", end="2026-11-10"))
    assert [d.day for d in r["period"]] == list(range(1, 11))
    by_day = dict(zip([d.day for d in r["period"]], r["cost_usd"], strict=True))
    assert by_day == {
        1: 0,
        2: D("0.37"),
        3: 0,
        4: 0,
        5: 0,
        6: 0,
        7: 0,
        8: D("0.07"),
        9: D("1.67"),
        10: 0,
    }
    assert r["cumulative_usd"].iloc[-1] == D("2.11")
    assert r["tasks"].tolist() == [0, 2, 0, 0, 0, 0, 0, 1, 1, 0]


def test_weekly_and_monthly_rollups(tasks: pd.DataFrame) -> None:
    weeks = rollup(tasks, "week")
    assert [str(d) for d in weeks["period"]] == [
        "2026-10-26",
        "2026-11-02",
        "2026-11-09",
        "2026-11-16",
        "2026-11-23",
        "2026-11-30",
    ]
    assert weeks["cost_usd"].tolist() == [D("1.00"), D("0.44"), D("3.67"), 0, 0, D("0.30")]
    months = rollup(tasks, "month", by="project")
    got = {
        (str(p), k): v
        for p, k, v in months[["period", "project", "cost_usd"]].itertuples(index=False)
    }
    assert got == {
        ("2026-10-01", "x"): D("1.00"),
        ("2026-10-01", "y"): 0,
        ("2026-11-01", "x"): D("1.79"),
        ("2026-11-01", "y"): D("2.32"),
        ("2026-12-01", "x"): D("0.30"),
        ("2026-12-01", "y"): 0,
    }
    assert spend(tasks, "week")["cost_usd"].sum() == D("5.41")


def test_the_month_s_facts_and_its_forecast(tasks: pd.DataFrame) -> None:
    as_of = datetime(2026, 11, 15, 12, tzinfo=UTC)  # 14.5 days into a 30-day month
    fc = forecast(tasks, as_of=as_of)
    mtd = D("0.12") + D("0.25") + D("0.07") + D("1.67") + D("2.00")
    assert fc.month_to_date_usd == mtd == D("4.11")
    assert fc.days_elapsed == D("14.5") and fc.days_in_month == 30
    assert fc.run_rate_usd_per_day == (mtd / D("14.5")).quantize(D("1E-8"))
    # the last 7 days to as_of: Nov 8 12:00 .. Nov 15 12:00 -> 0.07 + 1.67 + 2.00
    assert fc.trailing_7d_usd_per_day == (D("3.74") / 7).quantize(D("1E-8"))
    # the forecast learns from the spend per day (top level: the sub-task is in its run)
    daily = {
        date(2026, 10, 30): D("1.00"),
        date(2026, 11, 2): D("0.37"),
        date(2026, 11, 8): D("0.07"),
        date(2026, 11, 9): D("1.67"),
        date(2026, 11, 15): D("2.00"),
    }
    by_hand = forecasts.forecast(daily, as_of=as_of, period="month")
    assert (fc.forecast_usd, fc.low_usd, fc.high_usd, fc.method, fc.note) == (
        by_hand.mean_usd,
        by_hand.low_usd,
        by_hand.high_usd,
        by_hand.method,
        by_hand.note,
    )
    assert "ETS" in fc.method and fc.low_usd is not None and fc.high_usd is not None
    assert mtd <= fc.low_usd <= fc.forecast_usd <= fc.high_usd  # no future day is below $0
    assert fc.forecast_usd.as_tuple().exponent == -2  # to the cent
    assert fc.interval_text() == f"80% interval ${fc.low_usd:,.2f} to ${fc.high_usd:,.2f}"
    with pytest.raises(ValueError, match="as_of"):
        forecast(tasks, as_of=datetime(2026, 11, 15))


def test_one_forecast_and_one_judgement_wherever_shown(tasks: pd.DataFrame) -> None:
    """The month's forecast and each budget's status are the guardrails' (the report's
    alerts and budget card), the same numbers: one answer to "what will it cost"."""
    as_of = datetime(2026, 11, 15, 12, tzinfo=UTC)
    amounts = ["8.50", "y=3", "x=1.50"]
    settings = budgets_.Guardrails().including(budgets_.from_amounts(amounts))
    found = guardrails.check(tasks, settings, as_of=as_of)
    total = next(f for f in found.forecasts if f.scope == "total" and f.period == "2026-11")
    fc = forecast(tasks, as_of=as_of)
    assert (fc.forecast_usd, fc.low_usd, fc.high_usd) == (
        total.mean_usd,
        total.low_usd,
        total.high_usd,
    )
    mine = budget_status(tasks, amounts, as_of=as_of)
    theirs = guardrails.budget_table(found.budgets)
    cols = ["scope", "budget_usd", "spent_usd", "used_pct", "forecast_usd", "status"]
    key = sorted(map(tuple, mine[cols].astype(object).values.tolist()))
    assert key == sorted(map(tuple, theirs[cols].astype(object).values.tolist()))
    assert {r[-1] for r in key} >= {"over", "forecast over"}  # states that differ, compared


def test_budgets_cross_from_ok_to_near_to_forecast_over_to_over(tasks: pd.DataFrame) -> None:
    def status(budget: str, when: datetime) -> str:
        return budget_status(tasks, [budget], as_of=when)["status"].iloc[0]

    early = datetime(2026, 11, 2, 12, tzinfo=UTC)  # mtd 0.12 (the 0.25 at 18:30 is later)
    fc = forecast(tasks, as_of=early)  # three complete days: resampled, with an interval
    assert fc.month_to_date_usd == D("0.12") and fc.forecast_usd > D("0.12")
    assert status("100", early) == "ok"
    assert status(str(fc.forecast_usd), early) == "ok"  # on course to land exactly on it
    assert status(str(fc.forecast_usd - D("0.01")), early) == "forecast over"
    end = datetime(2026, 11, 30, 23, 59, 59, tzinfo=UTC)  # all of November: 4.11
    assert forecast(tasks, as_of=end).forecast_usd == D("4.11")  # a second left to spend in
    assert status("100", end) == "ok"
    assert status("5.00", end) == "near"  # 82.2% used
    assert budget_status(tasks, ["5.00"], as_of=end)["used_pct"].iloc[0] == D("82.2")
    assert status("4.11", end) == "near"  # spent it all, and nothing more is forecast
    assert status("4.10", end) == "over"
    row = budget_status(tasks, {"y": "2.00", None: "50"}, as_of=end)
    assert row["scope"].tolist() == ["project y", "overall"]
    assert row["spent_usd"].tolist() == [D("2.32"), D("4.11")]
    assert row["status"].tolist() == ["over", "ok"]
    assert row["remaining_usd"].tolist() == [D("-0.32"), D("45.89")]


def test_parse_budgets_refuses_floats_and_junk() -> None:
    assert parse_budgets(["500", "jingles=120.50"]) == {None: D("500"), "jingles": D("120.50")}
    for bad in (["x=abc"], ["-3"], {None: 1.5}):
        with pytest.raises(ValueError, match="budget"):
            parse_budgets(bad)
