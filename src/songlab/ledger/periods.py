"""Periods, roll-ups, run-rate, a stated forecast and budgets, over a tasks frame.

All dates are UTC calendar dates; a period is inclusive of both ends. Money
stays exact (``Decimal`` / decimal128); the forecast is the one rounding, to
8 decimals, half-even.

- :func:`period` builds a :class:`Period` from ``--from``/``--to`` dates or a name
  (``month-to-date``, ``this-month``, ``last-month``, ``last-7-days``,
  ``last-30-days``, ``year-to-date``, ``all``, or a month ``YYYY-MM``);
- :func:`in_period` keeps the tasks created in it;
- :func:`rollup` sums per day, week (Monday) or month, with empty periods as 0;
- :func:`forecast`: the **straight-line** forecast. Month-to-date spend divided
  by the time elapsed in the month (in days, to the second) is the daily run
  rate; the forecast for the month is that rate times the month's days. The
  trailing 7-day rate is shown beside it;
- :func:`budget_status`: monthly budgets (overall and per project) against
  month-to-date spend and the forecast: ``over``, ``forecast over``, ``near``
  (80% used or more) or ``ok``.
"""

from __future__ import annotations

import calendar
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation
from typing import Any, Final

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from songlab.ledger import _schema
from songlab.ledger.spend import as_table, spend_table, top_level

__all__ = [
    "Forecast",
    "NAMED_PERIODS",
    "Period",
    "as_of_for",
    "budget_rows",
    "budget_status",
    "forecast",
    "forecast_of",
    "in_period",
    "parse_budgets",
    "period",
    "period_starts",
    "rollup",
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
_Q: Final[Decimal] = Decimal("0.00000001")


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


def in_period(tasks: Any, p: Period) -> pd.DataFrame:
    """The tasks created within ``p`` (a new frame; the input is not changed)."""
    return _schema.to_frame(_filter(as_table(tasks), p))


def _filter(t: pa.Table, p: Period) -> pa.Table:
    lo, hi = p.bounds()
    mask = pa.repeat(pa.scalar(True), t.num_rows)
    if lo is not None:
        mask = pc.and_(mask, pc.greater_equal(t["created_at"], pa.scalar(lo, _schema.TIMESTAMP)))
    if hi is not None:
        mask = pc.and_(mask, pc.less(t["created_at"], pa.scalar(hi, _schema.TIMESTAMP)))
    return t.filter(pc.fill_null(mask, False))


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


def rollup(
    tasks: Any, freq: str = "day", *, by: str | None = None, p: Period | None = None
) -> pd.DataFrame:
    """Spend per ``freq`` (day, week starting Monday, month), optionally per ``by``.

    Every period of the range appears, with 0 where nothing was spent (per
    ``by`` value too). Columns: ``period`` (its first date), ``by``, ``tasks``,
    ``cost_usd``, ``cumulative_usd`` (running total, per ``by`` value).
    """
    if freq not in FREQS:
        raise ValueError(f"freq: one of {', '.join(FREQS)}, got {freq!r}")
    t = _filter(as_table(tasks), p) if p is not None else as_table(tasks)
    key = {"day": "day", "week": "week", "month": "month"}[freq]
    keys = [key] + ([by] if by else [])
    g = _schema.to_frame(spend_table(t, keys))
    g = g[g[key].notna()]  # tasks of unknown date: not in any period (the report counts them)
    if freq == "month":
        g[key] = pd.array(
            [datetime.strptime(m, "%Y-%m").date() for m in g[key]], dtype=pd.ArrowDtype(pa.date32())
        )
    tops = top_level(t)
    first, last = pc.min(tops["created_at"]).as_py(), pc.max(tops["created_at"]).as_py()
    lo: date | None
    hi: date | None
    if p is not None and p.start and p.end:
        lo, hi = p.start, p.end
    elif first is not None and last is not None:  # tasks of unknown date have no period
        lo = first.date() if p is None or not p.start else p.start
        hi = last.date() if p is None or not p.end else p.end
    else:
        lo = hi = None
    starts = period_starts(lo, hi, freq) if lo and hi else []
    groups = sorted(g[by].dropna().unique().tolist()) if by else [None]
    if by and g[by].isna().any():
        groups.append(None)
    index = pd.MultiIndex.from_product([starts, groups], names=[key, by or "_"])
    g = g if by else g.assign(_=None)
    merged = g.set_index([key, by or "_"])[["tasks", "cost_usd"]].reindex(index).reset_index()
    money = pd.ArrowDtype(_schema.MONEY_SUM)
    merged["tasks"] = merged["tasks"].fillna(0).astype(pd.ArrowDtype(pa.int64()))
    merged["cost_usd"] = merged["cost_usd"].fillna(Decimal(0)).astype(money)
    merged = merged.rename(columns={key: "period"})
    if not by:
        merged = merged.drop(columns="_")
    merged["period"] = merged["period"].astype(pd.ArrowDtype(pa.date32()))
    merged["cumulative_usd"] = pd.array(_running(merged, by), dtype=money)
    return merged.reset_index(drop=True)


def _running(frame: pd.DataFrame, by: str | None) -> list[Decimal]:
    totals: dict[Any, Decimal] = {}
    out = []
    keys = frame[by].tolist() if by else [None] * len(frame)
    for k, v in zip(keys, frame["cost_usd"].tolist(), strict=True):
        totals[k] = totals.get(k, Decimal(0)) + v
        out.append(totals[k])
    return out


@dataclass(frozen=True, slots=True)
class Forecast:
    month: str  # YYYY-MM of as_of
    as_of: datetime
    days_in_month: int
    days_elapsed: Decimal  # since the month began, to the second
    month_to_date_usd: Decimal
    run_rate_usd_per_day: Decimal  # month_to_date / days_elapsed
    trailing_7d_usd_per_day: Decimal  # spend of the 7 days to as_of / 7
    forecast_usd: Decimal  # run rate x days in month (8 decimals, half-even)
    method: str


def _sum(t: pa.Table) -> Decimal:
    v = pc.sum(top_level(t)["cost_usd"]).as_py()
    return Decimal(0) if v is None else Decimal(v)


def _between(t: pa.Table, lo: datetime, hi: datetime) -> pa.Table:
    ts = t["created_at"]
    mask = pc.and_(
        pc.greater_equal(ts, pa.scalar(lo, _schema.TIMESTAMP)),
        pc.less_equal(ts, pa.scalar(hi, _schema.TIMESTAMP)),
    )
    return t.filter(pc.fill_null(mask, False))


def forecast(tasks: Any, *, as_of: datetime, project: str | None = None) -> Forecast:
    """Month-to-date spend at ``as_of``, its daily run rate and the straight-line month forecast."""
    if as_of.tzinfo is None:
        raise ValueError("as_of: must be timezone-aware (UTC)")
    as_of = as_of.astimezone(UTC)
    t = as_table(tasks)
    if project is not None:
        t = t.filter(pc.fill_null(pc.equal(t["project"], project), False))
    start = datetime.combine(as_of.date().replace(day=1), time(), UTC)
    return forecast_of(
        _sum(_between(t, start, as_of)), _sum(_between(t, as_of - timedelta(days=7), as_of)), as_of
    )


def forecast_of(mtd: Decimal, last_7_days: Decimal, as_of: datetime) -> Forecast:
    """The forecast from the month-to-date spend and the spend of the 7 days to ``as_of``."""
    as_of = as_of.astimezone(UTC)
    start = datetime.combine(as_of.date().replace(day=1), time(), UTC)
    ndays = calendar.monthrange(as_of.year, as_of.month)[1]
    elapsed = Decimal((as_of - start) // timedelta(microseconds=1)) / Decimal(86_400_000_000)
    rate = (mtd / elapsed).quantize(_Q, ROUND_HALF_EVEN) if elapsed > 0 else Decimal(0)
    trailing = last_7_days / 7
    fc = (mtd / elapsed * ndays).quantize(_Q, ROUND_HALF_EVEN) if elapsed > 0 else mtd
    return Forecast(
        month=f"{as_of:%Y-%m}",
        as_of=as_of,
        days_in_month=ndays,
        days_elapsed=elapsed.quantize(Decimal("0.0001"), ROUND_HALF_EVEN),
        month_to_date_usd=mtd,
        run_rate_usd_per_day=rate,
        trailing_7d_usd_per_day=trailing.quantize(_Q, ROUND_HALF_EVEN),
        forecast_usd=fc,
        method=(
            f"straight line: month-to-date spend / {elapsed:.4f} days elapsed x "
            f"{ndays} days in {as_of:%B %Y}"
        ),
    )


def parse_budgets(items: Any) -> dict[str | None, Decimal]:
    """Budgets from ``["500", "jingles=120"]`` or a mapping (key None: overall) -> Decimal USD."""
    pairs: list[tuple[str | None, Any]] = []
    if isinstance(items, Mapping):
        pairs = [(None if k in (None, "", "overall") else str(k), v) for k, v in items.items()]
    else:
        for item in [items] if isinstance(items, str | int | Decimal) else list(items or ()):
            text = str(item)
            name, _, amount = text.rpartition("=")
            pairs.append((name or None, amount))
    out: dict[str | None, Decimal] = {}
    for scope, amount in pairs:
        try:
            if isinstance(amount, float):
                raise InvalidOperation
            value = Decimal(str(amount))
        except (InvalidOperation, ValueError):
            raise ValueError(
                f"budget: an amount in USD like 500 or project=120.50, got {amount!r}"
            ) from None
        if not value.is_finite() or value < 0:
            raise ValueError(f"budget: a non-negative amount, got {amount!r}")
        out[scope] = value
    return out


def budget_status(
    tasks: Any, budgets: Any, *, as_of: datetime, near: Decimal = NEAR
) -> pd.DataFrame:
    """One row per budget (monthly): spent month-to-date, forecast and status.

    ``budgets``: see :func:`parse_budgets` (``None``/``overall`` for the whole account).
    ``status``: ``over`` (spent more than the budget), ``forecast over`` (on course
    to), ``near`` (``near`` of it used or more, default 80%), else ``ok``.
    """
    parsed = parse_budgets(budgets)
    overall = forecast(tasks, as_of=as_of)
    per_project = {s: forecast(tasks, as_of=as_of, project=s) for s in parsed if s is not None}
    return budget_rows(parsed, overall, per_project, near=near)


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
        fc = (
            overall
            if scope is None
            else per_project.get(scope) or forecast_of(Decimal(0), Decimal(0), overall.as_of)
        )
        spent = fc.month_to_date_usd
        used = (spent / limit * 100).quantize(Decimal("0.1")) if limit else None
        if spent > limit:
            status = "over"
        elif fc.forecast_usd > limit:
            status = "forecast over"
        elif limit and spent >= limit * near:
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


def as_of_for(tasks: Any, now: datetime | None = None) -> datetime:
    """The report's "now": the later of the wall clock and the newest task (a sandbox whose
    clock was moved ahead has tasks in the future)."""
    now = now or datetime.now(UTC)
    t = as_table(tasks)
    newest = pc.max(t["created_at"]).as_py() if t.num_rows else None
    return max(now, newest) if newest is not None else now
