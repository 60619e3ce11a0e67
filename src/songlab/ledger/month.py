"""The month of the as-of date: what was spent so far, its run rates, its one forecast and its budgets.

:class:`Forecast` holds the month's facts (month-to-date spend; the run rate, that spend
over the days elapsed; the trailing 7 days' rate; each derived from its inputs as stated:
``songlab.ledger.derived``) and its **one forecast**: the guardrails' (``forecasts``, with its
interval), so the report's card, the budget table, the notebook's ``periods.forecast`` and
the alerts show one number. :func:`outlook` makes it and the budget table from a ledger,
reusing a guardrail report when there is one (each series fitted once); :func:`forecast` and
:func:`budget_status` are the same on a tasks frame.
"""

from __future__ import annotations

import calendar
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta
from decimal import Decimal

import pandas as pd

import songlab.ledger.budgets as budgets_
import songlab.ledger.daily as daily_
import songlab.ledger.derived as derived
import songlab.ledger.forecasts as forecasts_
import songlab.ledger.guardrails as guardrails
from songlab.ledger.dialects import date_sql, ts_sql
from songlab.ledger.engine import Ledger, open_ledger
from songlab.ledger.relation import MEASURES, MONEY_SQL

__all__ = [
    "Forecast",
    "budget_status",
    "elapsed_text",
    "forecast",
    "month_forecast",
    "outlook",
    "window",
]


@dataclass(frozen=True, slots=True)
class Forecast:
    """The month holding ``as_of``: the facts so far and the one forecast of its total.

    ``forecast_usd`` is the mean of ``songlab.ledger.forecasts``' forecast of the month (the
    guardrails' method: ETS, or fewer days' fallbacks, to the cent), with its ``level``
    interval ``low_usd`` to ``high_usd`` (None with fewer than 3 complete days); ``method``
    and ``note`` say which. The run rates are facts, not the forecast, derived from the
    figures beside them as they are stated (``songlab.ledger.derived``): the month to date
    to the cent over the days elapsed to the hundredth; the 7 days' spend to the cent over 7.
    """

    month: str  # YYYY-MM of as_of
    as_of: datetime
    days_in_month: int
    days_elapsed: Decimal  # since the month began, as stated: to the hundredth (13.59)
    month_to_date_usd: Decimal
    run_rate_usd_per_day: Decimal | None  # month to date (cents) / days_elapsed; None at 0.00
    trailing_7d_usd_per_day: Decimal  # trailing_7d_usd (cents) / 7
    forecast_usd: Decimal  # the forecast's mean for the month, to the cent
    method: str
    low_usd: Decimal | None = None
    high_usd: Decimal | None = None
    level: float = forecasts_.LEVEL
    note: str = ""
    trailing_7d_usd: Decimal = Decimal(0)  # spent in the 7 days to as_of, exact

    def interval_text(self) -> str:
        """``80% interval $412.30 to $455.90``, or why there is none."""
        if self.low_usd is None or self.high_usd is None:
            return "no interval (fewer than 3 complete days of spend)"
        return f"{self.level:.0%} interval ${self.low_usd:,.2f} to ${self.high_usd:,.2f}"


def month_forecast(
    mtd: Decimal, last_7_days: Decimal, as_of: datetime, fc: forecasts_.SpendForecast
) -> Forecast:
    """The month holding ``as_of``: month-to-date spend, the run rates (month-to-date over the
    days elapsed; the trailing 7 days over 7, each from its inputs as stated) and ``fc``, the
    guardrails' forecast of the month."""
    as_of = as_of.astimezone(UTC)
    start = datetime.combine(as_of.date().replace(day=1), time(), UTC)
    elapsed = derived.days_between(start, as_of)
    return Forecast(
        month=f"{as_of:%Y-%m}",
        as_of=as_of,
        days_in_month=calendar.monthrange(as_of.year, as_of.month)[1],
        days_elapsed=elapsed,
        month_to_date_usd=mtd,
        run_rate_usd_per_day=derived.per_day(mtd, elapsed),
        trailing_7d_usd_per_day=derived.per_day(last_7_days, Decimal(7)) or Decimal(0),
        forecast_usd=fc.mean_usd,
        method=fc.method,
        low_usd=fc.low_usd,
        high_usd=fc.high_usd,
        level=fc.level,
        note=fc.note,
        trailing_7d_usd=last_7_days,
    )


def elapsed_text(days: Decimal) -> str:
    """Days as every printed line states them, to the hundredth: ``13.59 days``, ``1.00 day``
    (the figure a derived rate is computed from: ``songlab.ledger.derived``)."""
    d = derived.stated_days(days)
    return f"{d} day{'' if d == 1 else 's'}"


def window(lg: Ledger, as_of: datetime) -> dict[str | None, tuple[Decimal, Decimal]]:
    """Per project (None: no project): (month-to-date, the 7 days to ``as_of``) spend. The
    tasks of the 7 days are read; the month's whole days before ``as_of``'s from the cube when
    there is one (else from the tasks since the month's start)."""
    as_of = as_of.astimezone(UTC)
    month_start = datetime.combine(as_of.date().replace(day=1), time(), UTC)
    week_ago = as_of - timedelta(days=7)
    today = datetime.combine(as_of.date(), time(), UTC)
    # the tasks read: since a week ago (and the month's start, without a cube)
    since = week_ago if lg.cubed else min(month_start, week_ago)
    mtd_from = today if lg.cubed else month_start

    def usd(when: str) -> str:
        return f"CAST(coalesce(sum(CASE WHEN {when} THEN cost_usd END), 0) AS {MONEY_SQL})"

    sql = (
        f"SELECT project, {usd(f'created_at >= {ts_sql(mtd_from)}')} AS mtd, "
        f"{usd(f'created_at >= {ts_sql(week_ago)}')} AS last7 "
        f"FROM {lg.rows(since, as_of)} WHERE top_level AND created_at >= {ts_sql(since)} "
        f"AND created_at <= {ts_sql(as_of)} GROUP BY project"
    )
    out = {r["project"]: (r["mtd"], r["last7"]) for r in lg.arrow(sql).to_pylist()}
    if lg.cubed and month_start < today:
        # the month's whole days before as_of's, from the cube: a query of its own, which a
        # cluster engine's embedded copy answers (one query with the tasks' would send the
        # cluster the cube too)
        for r in lg.arrow(
            f"SELECT project, {MEASURES[1].total} AS mtd FROM cube WHERE facet = 'label' AND "
            f"top_level AND day >= {date_sql(month_start.date())} AND day < "
            f"{date_sql(today.date())} GROUP BY project"
        ).to_pylist():
            mtd, last7 = out.get(r["project"], (Decimal(0), Decimal(0)))
            out[r["project"]] = (mtd + r["mtd"], last7)
    return out


def outlook(
    lg: Ledger,
    budgets: object = None,
    *,
    as_of: datetime,
    found: guardrails.GuardrailReport | None = None,
) -> tuple[Forecast, pd.DataFrame]:
    """The account's :class:`Forecast` for the month of ``as_of`` and the budget table
    (``guardrails.budget_table``) of ``budgets`` (the short form, monthly: ``["500",
    "jingles=120"]``), from the guardrail report ``found`` when there is one (its forecasts
    and judgements, not made again), else judged here (``guardrails.judge``)."""
    if found is None:
        rules = budgets_.from_amounts(budgets) if budgets else ()
        found = guardrails.judge(lg, budgets_.Guardrails(budgets=rules), as_of=as_of)
    as_of = found.as_of
    win = window(lg, as_of)
    mtd = sum((m for m, _ in win.values()), Decimal(0))
    last7 = sum((w for _, w in win.values()), Decimal(0))
    label = f"{as_of:%Y-%m}"
    month = next(f for f in found.forecasts if f.scope == "total" and f.period == label)
    return month_forecast(mtd, last7, as_of, month), guardrails.budget_table(found.budgets)


def forecast(tasks: object, *, as_of: datetime, project: str | None = None) -> Forecast:
    """The month holding ``as_of`` of a tasks frame (of one project when ``project`` is
    given): spent so far, the run rates and the guardrails' forecast, with its interval."""
    if as_of.tzinfo is None:
        raise ValueError("as_of: must be timezone-aware (UTC)")
    with open_ledger(tasks) as lg:
        if project is None:
            return outlook(lg, as_of=as_of)[0]
        daily = daily_.series_frame(lg, as_of)
        hist = daily_.of_scope(daily, "project", project)
        fc = forecasts_.forecast(hist, as_of=as_of, scope=f"project {project}")
        mtd, last7 = window(lg, as_of).get(project, (Decimal(0), Decimal(0)))
        return month_forecast(mtd, last7, as_of, fc)


def budget_status(tasks: object, budgets: object, *, as_of: datetime) -> pd.DataFrame:
    """One row per monthly budget of ``budgets`` (``["500", "jingles=120"]`` or a mapping):
    spent month-to-date, forecast and status, judged as the guardrails and the report judge
    them (``guardrails.budget_table``)."""
    with open_ledger(tasks) as lg:
        return outlook(lg, budgets, as_of=as_of)[1]
