"""UTC calendar dates: a period by name or by from/to dates, and the starts of its days, weeks and months.

All dates are UTC calendar dates; a period is inclusive of both ends. :func:`period` builds a
:class:`Period` from ``--from``/``--to`` dates or a name (``month-to-date``, ``this-month``,
``last-month``, ``last-7-days``, ``last-30-days``, ``year-to-date``, ``all``, or a month
``YYYY-MM``); :func:`period_starts` lists the first day of each day, week (from Monday) or
month of a range. No data: the figures of a period are the ledger engine's queries.
"""

from __future__ import annotations

import calendar
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Final

__all__ = ["FREQS", "NAMED_PERIODS", "Period", "period", "period_starts"]

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


def _date(value: object, field: str) -> date:
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
    name: str | None = None,
    *,
    start: object = None,
    end: object = None,
    as_of: datetime | None = None,
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
