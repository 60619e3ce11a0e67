"""The guardrails' daily series: spend per UTC day of the account and of each project, key,
tool, tier and set of tags, up to an as-of time, and the queries an alert asks of one series.

:func:`series_frame` reads them from the ledger's cube (``relation.CUBE_SQL``: the report's
own scan, no other), so every figure here adds up to the report's: one row per
``dimension`` (total, project, key, tool, tier, tags), ``value`` (null: not labelled) and
``day``, with the engine's measures of the top-level tasks. A day cut by an as-of time before
the newest task is read from the tasks of that day. :func:`of_scope` is one scope's series
(the account, a project, a key, a tag) as Decimals by day; :func:`breakdown`,
:func:`top_tasks` and :func:`crossed` are the few bounded queries an anomaly or a budget
asks of the tasks themselves.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, date, datetime, time
from decimal import Decimal
from typing import Final

import numpy as np
import pandas as pd

import songlab.ledger.anomalies as anomalies_
from songlab.ledger.dialects import date_sql, text_sql, ts_sql
from songlab.ledger.engine import Ledger, open_ledger
from songlab.ledger.relation import MEASURES

__all__ = [
    "MEASURES_OF_SERIES",
    "SERIES_COLUMNS",
    "TOP_TASKS",
    "breakdown",
    "crossed",
    "daily_series",
    "of_scope",
    "scope_filter",
    "series_frame",
    "top_tasks",
]

TOP_TASKS: Final[int] = 5  # costliest tasks named per anomaly
MEASURES_OF_SERIES: Final[tuple[str, ...]] = (
    "tasks",
    "cost_usd",
    "estimated_tasks",
    "unknown_tasks",
    "pending_tasks",
    "pending_usd",
)
# monitor -> the relation's column (tags: budgets by tag; total: the account), and the
# cube's facet that holds it
SERIES_COLUMNS: Final[dict[str, str]] = {
    "project": "project",
    "key": "key_id",
    "tool": "tool_id",
    "tier": "tier",
    "tags": "tags",
}
_FACET: Final[dict[str, str]] = {
    "total": "kind",
    "project": "label",
    "key": "label",
    "tool": "kind",
    "tier": "kind",
    "tags": "label",
}


def _totals() -> str:
    return ", ".join(f"{m.total} AS {m.name}" for m in MEASURES if m.name in MEASURES_OF_SERIES)


def _relation_sql(
    as_of: datetime, where: str = "TRUE", dims: Sequence[str] = (), source: str = "ledger"
) -> str:
    """The series of ``dims`` (default: all) from the tasks of ``where``, to ``as_of``
    (``source``: the relation, or some of its rows holding those: ``Ledger.rows``)."""
    dims = list(dims) or ["total", *SERIES_COLUMNS]
    which = " ".join(
        f"WHEN GROUPING({SERIES_COLUMNS[d]}) = 0 THEN '{d}'" for d in dims if d != "total"
    )
    label = " ".join(
        f"WHEN GROUPING({SERIES_COLUMNS[d]}) = 0 THEN {SERIES_COLUMNS[d]}"
        for d in dims
        if d != "total"
    )
    sets = ", ".join(["(day)" if d == "total" else f"(day, {SERIES_COLUMNS[d]})" for d in dims])
    return (
        f"SELECT CASE {which} ELSE 'total' END AS dimension, "
        f"CASE {label} ELSE NULL END AS value, day, {_totals()} "
        f"FROM {source} WHERE top_level AND day IS NOT NULL AND created_at <= {ts_sql(as_of)} "
        f"AND {where} GROUP BY GROUPING SETS ({sets})"
    )


def _cube_sql(days: str) -> str:
    """Every series from the cube, for the days of ``days`` (SQL over ``day``)."""
    parts = []
    for dim, facet in _FACET.items():
        column = "CAST(NULL AS VARCHAR)" if dim == "total" else SERIES_COLUMNS[dim]
        parts.append(
            f"SELECT '{dim}' AS dimension, {column} AS value, day, {_totals()} FROM cube "
            f"WHERE facet = '{facet}' AND top_level AND day IS NOT NULL AND {days} "
            f"GROUP BY day{'' if dim == 'total' else ', ' + column}"
        )
    return " UNION ALL ".join(parts)


def series_frame(
    lg: Ledger,
    as_of: datetime,
    where: str = "TRUE",
    dims: Sequence[str] = (),
    *,
    since: date | None = None,
) -> pd.DataFrame:
    """The daily series of ``lg`` to ``as_of`` (see the module's doc); with ``where`` or
    ``dims``, from the tasks themselves (one series' breakdown; ``since``: a day before
    which ``where`` holds no task, so only the tasks from it are read)."""
    if where != "TRUE" or dims:
        lo = None if since is None else datetime.combine(since, time(), UTC)
        sql = _relation_sql(as_of, where, dims, lg.rows(lo, as_of))
    else:
        lg.precompute()
        newest = lg.newest()
        day = as_of.astimezone(UTC).date()
        if newest is None or newest <= as_of:
            sql = _cube_sql(f"day <= {date_sql(day)}")
        else:  # the as-of day only to as-of: from its own tasks
            midnight = datetime.combine(day, time(), UTC)
            sql = (
                f"{_cube_sql(f'day < {date_sql(day)}')} UNION ALL "
                f"{_relation_sql(as_of, f'created_at >= {ts_sql(midnight)}', (), lg.rows(midnight, as_of))}"
            )
    frame = lg.arrow(sql).to_pandas()
    frame["day"] = [d if isinstance(d, date) else pd.Timestamp(d).date() for d in frame["day"]]
    return frame


def daily_series(source: object, *, as_of: datetime) -> pd.DataFrame:
    """The daily series (:func:`series_frame`) of ``source`` (a tasks frame, an Arrow table, a
    ``LedgerStore`` or its directory)."""
    with open_ledger(source) as lg:
        return series_frame(lg, as_of)


def of_scope(
    daily: pd.DataFrame,
    scope: str = "account",
    value: str | None = None,
    *,
    column: str = "cost_usd",
) -> dict[date, Decimal]:
    """The daily spend of one scope (account, project, key, tag) of a series frame, exact
    (``column``: another money measure, ``pending_usd``)."""
    dims = daily["dimension"].astype(object).tolist()
    labels = daily["value"].astype(object).tolist()
    if scope == "account":
        mine = [d == "total" for d in dims]
    elif scope == "tag":
        mine = [
            d == "tags" and isinstance(v, str) and value in v.split(",")
            for d, v in zip(dims, labels, strict=True)
        ]
    else:
        mine = [d == scope and v == value for d, v in zip(dims, labels, strict=True)]
    rows = daily[np.array(mine, bool)]
    out: dict[date, Decimal] = {}
    for d, v in zip(rows["day"].tolist(), rows[column].tolist(), strict=True):
        if v is None or (isinstance(v, float) and v != v):
            continue
        out[d] = out.get(d, Decimal(0)) + Decimal(str(v))
    return out


def scope_filter(dimension: str, value: str | None) -> str:
    """SQL over ``ledger`` selecting one anomaly series or budget scope."""
    if dimension in ("total", "account"):
        return "TRUE"
    if dimension == "tag":
        return f"list_contains(string_split(coalesce(tags, ''), ','), {text_sql(str(value))})"
    column = anomalies_.DIMENSIONS.get(dimension) or {"key": "key_id"}.get(dimension, dimension)
    if value == anomalies_.UNLABELLED.get(dimension):
        return f"{column} IS NULL"
    return f"{column} = {text_sql(str(value))}"


def breakdown(lg: Ledger, as_of: datetime) -> anomalies_.Breakdown:
    """An anomaly's series by project, key, tool and tier, asked of the tasks of its days."""

    def rows(dimension: str, value: str | None, lo: date, hi: date) -> pd.DataFrame:
        where = (
            f"{scope_filter(dimension, value)} AND day >= {date_sql(lo)} AND day <= {date_sql(hi)}"
        )
        dims = [d for d in ("project", "key", "tool", "tier") if d != dimension]
        return series_frame(lg, as_of, where, dims, since=lo)

    return rows


def top_tasks(
    lg: Ledger, a: anomalies_.Anomaly, as_of: datetime
) -> tuple[tuple[str, Decimal], ...]:
    """The anomaly's costliest tasks of its day (its series, up to as_of)."""
    midnight = datetime.combine(a.day, time(), UTC)
    rows = lg.arrow(
        f"SELECT task_id, cost_usd FROM {lg.rows(midnight, as_of)} WHERE top_level AND "
        f"{scope_filter(a.dimension, a.value)} AND day = {date_sql(a.day)} "
        f"AND created_at <= {ts_sql(as_of)} AND cost_usd IS NOT NULL "
        f"ORDER BY cost_usd DESC, task_id LIMIT {TOP_TASKS}"
    ).to_pylist()
    return tuple((str(r["task_id"]), Decimal(r["cost_usd"])) for r in rows)


def crossed(
    lg: Ledger, scope: str, value: str | None, start: date, as_of: datetime, amount: Decimal
) -> datetime | None:
    """When a scope's spend since ``start`` first reached ``amount`` (exact, per task): the
    day it did is found from the cube's daily sums, then only that day's tasks are read; no
    task is read when the sums show it did not (no cost below zero: :func:`_crossing_day`)."""
    lo = datetime.combine(start, time(), UTC)
    day = _crossing_day(lg, scope, value, start, as_of, amount)
    if day is _NEVER:
        return None
    first, before = day if day is not None else (None, Decimal(0))
    if first is not None:
        lo = max(lo, datetime.combine(first, time(), UTC))
    rows = lg.arrow(
        "SELECT min(created_at) AS at FROM (SELECT created_at, sum(cost_usd) OVER "
        "(ORDER BY created_at, task_id ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS cum "
        f"FROM {lg.rows(lo, as_of)} WHERE top_level AND cost_usd IS NOT NULL AND "
        f"{scope_filter(scope, value)} AND created_at >= {ts_sql(lo)} "
        f"AND created_at <= {ts_sql(as_of)}) AS running "
        f"WHERE cum >= CAST('{amount - before:f}' AS DECIMAL(38, 8))"
    ).to_pylist()
    at = rows[0]["at"] if rows else None
    if at is None:
        return None
    found: datetime = at.astimezone(UTC) if at.tzinfo else at.replace(tzinfo=UTC)
    return found


_NEVER: Final[tuple[None, Decimal]] = (None, Decimal(-1))  # the cube's sums show no crossing


def _crossing_day(
    lg: Ledger, scope: str, value: str | None, start: date, as_of: datetime, amount: Decimal
) -> tuple[date, Decimal] | tuple[None, Decimal] | None:
    """From the cube's daily sums of the scope since ``start``: the first day their running sum
    reaches ``amount`` and the spend of the days before it; :data:`_NEVER` when it does not
    by as-of's day (whose sum may hold later tasks: it can only be more); None when the sums
    cannot say (no cube, or a cost below zero, a refund: a running sum that falls can cross
    the amount within a day and fall back below it by the day's end)."""
    if not lg.cubed:
        return None
    facet = "kind" if scope in ("account", "total") else "label"
    rows = lg.arrow(
        f"SELECT day, {MEASURES[1].total} AS cost, min(lowest_cost) AS lowest FROM cube "
        f"WHERE facet = '{facet}' AND top_level AND {scope_filter(scope, value)} "
        f"AND day >= {date_sql(start)} AND day <= {date_sql(as_of.astimezone(UTC).date())} "
        "GROUP BY day ORDER BY day"
    ).to_pylist()
    if any(row["lowest"] is not None and row["lowest"] < 0 for row in rows):
        return None
    running = Decimal(0)
    for row in rows:
        if running + row["cost"] >= amount:
            return row["day"], running
        running += row["cost"]
    return _NEVER
