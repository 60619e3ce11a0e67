"""Periods, a stated forecast and budgets: the calendar and the arithmetic, no data.

All dates are UTC calendar dates; a period is inclusive of both ends. Money stays exact
(``Decimal``); the forecast is the one rounding, to 8 decimals, half-even. The figures
themselves (spend in a period, roll-ups, month-to-date, budget status) are queries of the
ledger engine (``songlab.ledger.engine``); ``songlab.ledger.periods`` is their public face.

- :func:`period` builds a :class:`Period` from ``--from``/``--to`` dates or a name
  (``month-to-date``, ``this-month``, ``last-month``, ``last-7-days``,
  ``last-30-days``, ``year-to-date``, ``all``, or a month ``YYYY-MM``);
- :func:`month_forecast`: the month's facts (month-to-date spend; the run rate, that
  spend over the time elapsed in the month to the second; the trailing 7-day rate) and
  its **one forecast**, ``songlab.ledger.forecasts``' (the guardrails' method, with its
  interval) of the ledger's daily spend: the report's card, the budget table, the
  notebook's ``periods.forecast`` and the guardrails' alerts show one number;
- :func:`parse_budgets` (once, to a :class:`Budgets`) and :func:`budget_rows`: monthly
  budgets (overall and per project) against month-to-date spend and the forecast:
  ``over``, ``forecast over``, ``near`` (80% used or more) or ``ok``;
- :func:`elapsed_text`: a duration in whole days or hours, as every printed line says it.
"""

from __future__ import annotations

import calendar
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from typing import Any, Final

import pandas as pd
import pyarrow as pa

import songlab.ledger._schema as _schema
import songlab.ledger.derived as derived
from songlab.ledger.amounts import shown, usd_amount
from songlab.ledger.forecasts import LEVEL
from songlab.ledger.forecasts import forecast as forecast_month

__all__ = [
    "BUDGET_STATES",
    "Budgets",
    "FREQS",
    "Forecast",
    "NAMED_PERIODS",
    "Period",
    "budget_frame",
    "budget_rows",
    "elapsed_text",
    "month_forecast",
    "parse_budgets",
    "period",
    "period_starts",
    "worst_budget",
]

NAMED_PERIODS: Final[tuple[str, ...]] = (
    "month-to-date",
    "this-month",
    "last-month",
    "last-7-days",
    "last-30-days",
    "year-to-date",
    "all",
)
FREQS: Final[tuple[str, ...]] = ("day", "week", "month")
NEAR: Final[Decimal] = Decimal("0.8")
# A budget's states, worst first: a card or a line that shows one state shows the worst.
BUDGET_STATES: Final[tuple[str, ...]] = ("over", "forecast over", "near", "ok")


@dataclass(frozen=True, slots=True)
class Period:
    start: date | None  # None: from the first task
    end: date | None  # None: to the last task (inclusive)
    label: str

    def bounds(self) -> tuple[datetime | None, datetime | None]:
        """``[start, end + 1 day)`` as UTC datetimes."""
        lo = datetime.combine(self.start, time(), UTC) if self.start else None
        hi = datetime.combine(self.end + timedelta(days=1), time(), UTC) if self.end else None
        return lo, hi


def _date(value: Any, field: str) -> date:
    if isinstance(value, datetime):
        return value.astimezone(UTC).date() if value.tzinfo else value.date()
    if isinstance(value, date):
        return value
    try:
        return date.fromisoformat(str(value))
    except ValueError:
        raise ValueError(f"{field}: a date YYYY-MM-DD, got {value!r}") from None


def _month_end(d: date) -> date:
    return d.replace(day=calendar.monthrange(d.year, d.month)[1])


def period(
    name: str | None = None, *, start: Any = None, end: Any = None, as_of: datetime | None = None
) -> Period:
    """A period by ``name`` (see ``NAMED_PERIODS`` or ``YYYY-MM``) or by ``start``/``end`` dates.

    ``as_of`` (default: now, UTC) anchors the named periods.
    """
    if name is not None and (start is not None or end is not None):
        raise ValueError("period: give a name or from/to dates, not both")
    today = (as_of or datetime.now(UTC)).astimezone(UTC).date()
    if name is None:
        lo = _date(start, "from") if start is not None else None
        hi = _date(end, "to") if end is not None else None
        if lo and hi and hi < lo:
            raise ValueError(f"to: must not be before from ({hi} < {lo})")
        label = f"{lo or 'first task'} to {hi or 'last task'}"
        return Period(lo, hi, label if (lo or hi) else "all time")
    first = today.replace(day=1)
    if name in ("month-to-date", "mtd"):
        return Period(first, today, f"month to date ({first:%B %Y}, to {today})")
    if name == "this-month":
        return Period(first, _month_end(first), f"{first:%B %Y}")
    if name == "last-month":
        prev = (first - timedelta(days=1)).replace(day=1)
        return Period(prev, _month_end(prev), f"{prev:%B %Y}")
    if name in ("last-7-days", "last-30-days"):
        n = 7 if name == "last-7-days" else 30
        return Period(today - timedelta(days=n - 1), today, f"the last {n} days, to {today}")
    if name == "year-to-date":
        return Period(today.replace(month=1, day=1), today, f"{today.year} to date ({today})")
    if name == "all":
        return Period(None, None, "all time")
    try:
        month = datetime.strptime(name, "%Y-%m").date()
    except ValueError:
        raise ValueError(
            f"period: one of {', '.join(NAMED_PERIODS)} or a month YYYY-MM, got {name!r}"
        ) from None
    return Period(month, _month_end(month), f"{month:%B %Y}")


def period_starts(lo: date, hi: date, freq: str) -> list[date]:
    if freq == "day":
        cur, step = lo, None
    elif freq == "week":
        cur, step = lo - timedelta(days=lo.weekday()), None
    else:
        cur, step = lo.replace(day=1), "month"
    out = []
    while cur <= hi:
        out.append(cur)
        if step == "month":
            cur = (cur.replace(day=28) + timedelta(days=4)).replace(day=1)
        else:
            cur += timedelta(days=1 if freq == "day" else 7)
    return out


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
    level: float = LEVEL
    note: str = ""
    trailing_7d_usd: Decimal = Decimal(0)  # spent in the 7 days to as_of, exact

    def interval_text(self) -> str:
        """``80% interval $412.30 to $455.90``, or why there is none."""
        if self.low_usd is None or self.high_usd is None:
            return "no interval (fewer than 3 complete days of spend)"
        return f"{self.level:.0%} interval ${self.low_usd:,.2f} to ${self.high_usd:,.2f}"


def month_forecast(
    mtd: Decimal, last_7_days: Decimal, as_of: datetime, history: Mapping[date, Decimal]
) -> Forecast:
    """The month holding ``as_of``: month-to-date spend, the run rates (month-to-date over the
    days elapsed; the trailing 7 days over 7, each from its inputs as stated) and the forecast
    of ``history`` (spend per UTC day up to ``as_of``), the guardrails' forecast of the same
    days."""
    as_of = as_of.astimezone(UTC)
    start = datetime.combine(as_of.date().replace(day=1), time(), UTC)
    ndays = calendar.monthrange(as_of.year, as_of.month)[1]
    elapsed = derived.days_between(start, as_of)
    fc = forecast_month(history, as_of=as_of, period="month")
    return Forecast(
        month=f"{as_of:%Y-%m}",
        as_of=as_of,
        days_in_month=ndays,
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


class Budgets(dict[str | None, Decimal]):
    """Monthly budgets, parsed once: scope (None: the whole account; else a project) -> USD.

    Made by :func:`parse_budgets`; passing a ``Budgets`` on (CLI -> report -> tables) never
    parses it again.
    """


def parse_budgets(items: Any) -> Budgets:
    """Budgets from ``["500", "jingles=120.50"]`` or a mapping (key None: overall) -> Decimal USD.

    A :class:`Budgets` is returned as it is (parsed once); None or empty gives none. Each
    amount follows ``amounts.usd_amount`` (exact, at most 8 decimals, at most a trillion
    dollars) and each project name the labels' rule (``songlab.client.make_labels``); a
    ``ValueError`` names the budget and the rule.
    """
    if isinstance(items, Budgets):
        return items
    pairs: list[tuple[str | None, Any]] = []
    if isinstance(items, Mapping):
        pairs = [(None if k in (None, "", "overall") else str(k), v) for k, v in items.items()]
    else:
        for item in [items] if isinstance(items, str | int | Decimal) else list(items or ()):
            name, _, amount = str(item).rpartition("=")
            pairs.append((name or None, amount))
    out = Budgets()
    for scope, amount in pairs:
        if scope is not None:
            _check_project(scope, f"budget {shown(scope)}")
        where = "budget" if scope is None else f"budget {scope}"  # a checked name
        try:
            out[scope] = usd_amount(amount)
        except ValueError as exc:
            raise ValueError(f"{where}: {exc} (like 500 or project=120.50)") from None
    return out


def _check_project(name: str, where: str) -> None:
    from songlab.client import make_labels

    try:
        make_labels(project=name)
    except ValueError:
        raise ValueError(
            f"{where}: a project name of 1-64 characters of A-Z a-z 0-9 _ . : - and inner "
            "spaces (as labels are)"
        ) from None


def budget_rows(
    budgets: Mapping[str | None, Decimal],
    overall: Forecast,
    per_project: Mapping[str, Forecast],
    *,
    near: Decimal = NEAR,
) -> pd.DataFrame:
    """The budget table from forecasts already made (overall, and per project)."""
    rows = []
    for scope, limit in budgets.items():
        fc = overall if scope is None else per_project[scope]
        spent = fc.month_to_date_usd
        used = derived.percent_of(spent, limit)  # from the amounts as stated
        if derived.stated_usd(spent) > derived.stated_usd(limit):
            status = "over"
        elif fc.forecast_usd > limit:
            status = "forecast over"
        elif used is not None and used >= near * 100:
            status = "near"
        else:
            status = "ok"
        rows.append(
            {
                "scope": "overall" if scope is None else f"project {scope}",
                "month": fc.month,
                "budget_usd": limit,
                "spent_usd": spent,
                "remaining_usd": limit - spent,
                "used_pct": used,
                "forecast_usd": fc.forecast_usd,
                "status": status,
            }
        )
    return budget_frame(rows)


def budget_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """The budget table's frame (its columns and types) from its rows."""
    money = pa.decimal128(38, 8)
    schema = pa.schema(
        [
            ("scope", pa.string()),
            ("month", pa.string()),
            ("budget_usd", money),
            ("spent_usd", money),
            ("remaining_usd", money),
            ("used_pct", pa.decimal128(9, 1)),
            ("forecast_usd", money),
            ("status", pa.string()),
        ]
    )
    return _schema.to_frame(pa.Table.from_pylist(rows, schema=schema))


def worst_budget(rows: pd.DataFrame) -> dict[str, Any] | None:
    """The row of the budget table in the worst state (``BUDGET_STATES`` order; among
    equals the most used), or None when no budget is set."""
    if rows.empty:
        return None
    records: list[dict[str, Any]] = [
        {str(k): v for k, v in r.items()} for r in rows.to_dict("records")
    ]

    def rank(r: dict[str, Any]) -> tuple[int, Decimal]:
        used = r.get("used_pct")
        return BUDGET_STATES.index(r["status"]), -(
            used if isinstance(used, Decimal) else Decimal(0)
        )

    return min(records, key=rank)
