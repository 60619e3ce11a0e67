"""Forecasts with intervals (``songlab.ledger.forecasts``): the method on known series, the
history it needs and says it lacks, and a backtest on synthetic years whose 80% interval
covers the truth about 80% of the time."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

import numpy as np
import pytest

from songlab.ledger import forecasts

AS_OF = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)  # a Friday, noon


def weekly(days: int, *, weekday: float = 30.0, weekend: float = 10.0, end: date = AS_OF.date()):
    """``days`` complete days before ``end``: ``weekday`` USD Monday-Friday, ``weekend`` else."""
    out = {}
    for i in range(1, days + 1):
        d = end - timedelta(days=i)
        out[d] = Decimal(str(weekday if d.weekday() < 5 else weekend))
    return out


def test_period_bounds() -> None:
    assert forecasts.period_bounds("month", date(2026, 2, 10)) == (
        date(2026, 2, 1),
        date(2026, 2, 28),
        "2026-02",
    )
    assert forecasts.period_bounds("quarter", date(2026, 11, 20)) == (
        date(2026, 10, 1),
        date(2026, 12, 31),
        "2026-Q4",
    )
    assert forecasts.period_bounds("week", date(2026, 11, 20))[:2] == (
        date(2026, 11, 16),
        date(2026, 11, 22),
    )
    assert forecasts.period_bounds("day", date(2026, 11, 20))[:2] == (
        date(2026, 11, 20),
        date(2026, 11, 20),
    )
    with pytest.raises(ValueError, match="period: one of day, week, month, quarter"):
        forecasts.period_bounds("year", date(2026, 1, 1))


def test_a_steady_week_forecasts_the_rest_of_the_month_exactly() -> None:
    """Weekdays $30, weekends $10, for 8 weeks: the model learns the week and the rest of
    November (the afternoon of Friday the 20th, then 10 days) is what it says."""
    hist = weekly(56)
    hist[AS_OF.date()] = Decimal("14.12345678")  # today so far
    f = forecasts.forecast(hist, as_of=AS_OF, period="month")
    spent = sum(v for d, v in hist.items() if d >= date(2026, 11, 1))
    assert f.spent_usd == spent  # exact, not rounded
    # the rest: half of Friday (15), Sat-Sun 21-22 (20), Mon-Fri 23-27 (150), Sat-Sun (20),
    # Mon 30 (30)
    expected = spent + Decimal(15 + 20 + 150 + 20 + 30)
    assert abs(f.mean_usd - expected) <= Decimal("0.50")
    assert f.low_usd is not None and f.high_usd is not None
    assert f.low_usd <= f.mean_usd <= f.high_usd
    assert f.high_usd - f.low_usd < Decimal("5")  # a steady series: a narrow interval
    assert not f.too_few and f.method.startswith("ETS(A,N,A)")
    assert (f.start, f.end, f.period) == (date(2026, 11, 1), date(2026, 11, 30), "2026-11")


def test_the_quarter_is_wider_than_the_month_from_one_fit() -> None:
    rng = np.random.default_rng(3)
    hist = {d: v * Decimal(str(round(rng.uniform(0.7, 1.3), 2))) for d, v in weekly(90).items()}
    month, quarter = forecasts.forecast_periods(hist, as_of=AS_OF, periods=("month", "quarter"))
    assert quarter.period == "2026-Q4" and month.period == "2026-11"
    assert quarter.mean_usd > month.mean_usd
    assert quarter.high_usd - quarter.low_usd > month.high_usd - month.low_usd  # type: ignore[operator]
    assert quarter.spent_usd > month.spent_usd  # October counts in the quarter


@pytest.mark.parametrize(
    ("days", "method", "interval"),
    [
        (0, "no history", False),
        (1, "straight line", False),
        (2, "straight line", False),
        (4, "resampled days", True),
        (9, "ETS(A,N,N)", True),
        (13, "ETS(A,N,N)", True),
        # the seasonal model from two full weeks (its start: the first weeks' means)
        (14, "ETS(A,N,A)", True),
        (15, "ETS(A,N,A)", True),
        (16, "ETS(A,N,A)", True),
        (20, "ETS(A,N,A)", True),
    ],
)
def test_it_works_with_a_few_days_and_says_when_they_are_too_few(
    days: int, method: str, interval: bool
) -> None:
    rng = np.random.default_rng(days)
    hist = {
        AS_OF.date() - timedelta(days=i): Decimal(str(round(rng.uniform(5, 15), 2)))
        for i in range(1, days + 1)
    }
    f = forecasts.forecast(hist, as_of=AS_OF, period="month")
    assert f.method.startswith(method)
    assert f.history_days == days
    assert (f.low_usd is not None) is interval
    assert ("interval" in f.method) is interval, f.method  # words only for what is shown
    assert f.too_few is (days < forecasts.SEASONAL_DAYS)
    if days < forecasts.SEASONAL_DAYS:
        assert re.search(r"complete days? of history|no complete day", f.note), f.note
    else:
        assert f.note == ""
    if days in (1, 2):  # the straight line: the mean day times the days left
        mean = sum(hist.values()) / days
        left = Decimal("0.5") + 10
        spent = sum(v for d, v in hist.items() if d.month == 11)
        assert abs(f.mean_usd - (spent + mean * left)) < Decimal("0.01")
    if days == 0:
        assert f.mean_usd == Decimal("0.00") and f.spent_usd == 0


def test_a_project_starts_with_its_first_spend() -> None:
    """Days before a project's first spend are not zeros of its history."""
    hist = {AS_OF.date() - timedelta(days=i): Decimal("10") for i in range(1, 6)}
    f = forecasts.forecast(hist, as_of=AS_OF)
    assert f.history_days == 5  # not since the 1st of the month, nor the epoch


def test_p_over_and_describe() -> None:
    rng = np.random.default_rng(5)
    hist = {d: v * Decimal(str(round(rng.uniform(0.7, 1.3), 2))) for d, v in weekly(56).items()}
    f = forecasts.forecast(hist, as_of=AS_OF)
    assert f.p_over(f.mean_usd * 2) == 0.0
    assert f.p_over(Decimal("0.01")) == 1.0
    assert 0.2 < f.p_over(f.mean_usd) < 0.8
    assert f.describe().startswith(f"${f.mean_usd:,.2f} (80%: ")


def test_bad_input_is_named() -> None:
    with pytest.raises(ValueError, match="as_of: must be timezone-aware"):
        forecasts.forecast({}, as_of=datetime(2026, 11, 20))
    with pytest.raises(ValueError, match="level: a share between 0 and 1"):
        forecasts.forecast({}, as_of=AS_OF, level=80)
    with pytest.raises(ValueError, match="history: the spend of 2026-11-19 is not a finite"):
        forecasts.forecast({date(2026, 11, 19): float("nan")}, as_of=AS_OF)
    with pytest.raises(ValueError, match="history: the spend of 2026-11-19 is not an amount"):
        forecasts.forecast({date(2026, 11, 19): "ten"}, as_of=AS_OF)


@pytest.mark.slow
def test_backtest_the_interval_holds_its_level_for_the_account_and_each_project() -> None:
    """``benchmarks/forecast_backtest.py``'s years (weekly pattern, growth, a wandering level):
    forecasts of the month made on the 1st, 8th, 15th and 22nd of each month from February,
    for the account and two projects, from the ledger's own daily series. The 80% interval
    must hold the month's real total about 80% of the time for EACH scope, not only overall
    (the model's simulation alone held 83.5% for the account, 75% and 71.6% for the projects).
    Twelve of the benchmark's 48 years here: each scope within 80 +- 5 (the benchmark's 48
    within +- 3: docs/benchmarks.md)."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    try:
        import forecast_backtest
    finally:
        sys.path.pop(0)
    rows = [r for seed in range(2, 14) for r in forecast_backtest.one_year(seed, 0.8)]
    for scope in ("account", "project jingles", "project research"):
        mine = [covered for name, covered, _ in rows if name == scope]
        coverage = sum(mine) / len(mine)
        print(f"backtest: {scope}: {len(mine)} forecasts, 80% interval covered {coverage:.1%}")
        assert 0.75 <= coverage <= 0.85, (scope, coverage)
