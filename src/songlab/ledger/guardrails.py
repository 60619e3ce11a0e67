"""The guardrails of a ledger, all at once: forecasts with intervals, budgets, anomalies, expiring
tokens, and the alerts they raise.

:func:`check` reads one daily cube of the ledger (spend per UTC day, project, tags, key, tool
and tier: exact sums of the report's engine, so every figure here adds up to the report's),
runs the pure methods of ``forecasts``, ``budgets``, ``anomalies`` and ``expiry`` on it, and
returns a :class:`GuardrailReport`: the forecasts (the account, each project and each key, for
the month and the quarter), every budget's state, the anomalies of the last days, the expiry
outlook, and the :class:`~songlab.ledger.alerts.Alert` list that ``songlab report --check``
prints, the webhook receives, notebook 03 and the HTML report open with.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from typing import Any, Final

import pandas as pd

import songlab.ledger.alerts as alerts_
import songlab.ledger.anomalies as anomalies_
import songlab.ledger.budgets as budgets_
import songlab.ledger.expiry as expiry_
import songlab.ledger.forecasts as forecasts_

__all__ = [
    "FORECAST_SCOPES",
    "GuardrailReport",
    "check",
    "daily_cube",
    "series",
]

FORECAST_SCOPES: Final[int] = 10  # projects and keys forecast: the costliest of the last 28 days
TOP_TASKS: Final[int] = 5  # costliest tasks named per anomaly

# The daily cube: one scan of the tasks up to as_of (top level: sub-tasks are inside their run).
CUBE_SQL: Final[str] = """
SELECT CAST(created_at AS DATE) AS day, project, tags, key_id, tool_id, tier,
       CAST(count(*) AS BIGINT) AS tasks,
       CAST(sum(cost_usd) AS DECIMAL(38, 8)) AS cost_usd,
       CAST(count(*) FILTER (WHERE cost_source = 'estimate') AS BIGINT) AS estimated_tasks,
       CAST(count(*) FILTER (WHERE cost_usd IS NULL) AS BIGINT) AS unknown_tasks
FROM tasks
WHERE parent_task_id IS NULL AND created_at IS NOT NULL AND created_at <= $as_of
GROUP BY CAST(created_at AS DATE), project, tags, key_id, tool_id, tier
"""


@dataclass
class GuardrailReport:
    """What the guardrails found at ``as_of``."""

    as_of: datetime
    settings: budgets_.Guardrails
    forecasts: list[forecasts_.SpendForecast] = field(default_factory=list)
    budgets: list[budgets_.BudgetState] = field(default_factory=list)
    anomalies: list[anomalies_.Anomaly] = field(default_factory=list)
    expiry: expiry_.ExpiryOutlook | None = None
    alerts: list[alerts_.Alert] = field(default_factory=list)
    history_days: int = 0
    notes: list[str] = field(default_factory=list)

    def forecast_table(self) -> pd.DataFrame:
        """The forecasts as a table (money to the cent; the spend so far exact)."""
        rows = [
            {
                "scope": f.scope,
                "period": f.period,
                "spent_usd": f.spent_usd,
                "forecast_usd": f.mean_usd,
                "low_usd": f.low_usd,
                "high_usd": f.high_usd,
                "interval": f"{f.level:.0%}" if f.low_usd is not None else "",
                "history_days": f.history_days,
                "method": f.method,
                "note": f.note,
            }
            for f in self.forecasts
        ]
        return pd.DataFrame(rows)

    def lines(self) -> list[str]:
        return [a.line() for a in self.alerts]

    def __str__(self) -> str:
        if not self.alerts:
            return f"no active alerts as of {self.as_of:%Y-%m-%d %H:%M} UTC"
        return "\n".join(self.lines())

    def _repr_html_(self) -> str:
        return alerts_.alerts_html(self.alerts, as_of=self.as_of, notes=self.notes)


# ---------------------------------------------------------------------------------- data


@contextmanager
def _connection(source: Any) -> Iterator[Any]:
    from songlab.ledger.tables import connect

    with connect(source) as con:
        yield con


def daily_cube(source: Any, *, as_of: datetime) -> pd.DataFrame:
    """Spend per UTC day, project, tags, key, tool and tier of ``source`` up to ``as_of``
    (a tasks frame, an Arrow table, a ``LedgerStore`` or its directory)."""
    with _connection(source) as con:
        return _cube(con, as_of)


def _cube(con: Any, as_of: datetime) -> pd.DataFrame:
    frame = con.sql(CUBE_SQL, params={"as_of": as_of}).to_arrow_table().to_pandas(types_mapper=None)
    frame["day"] = [d if isinstance(d, date) else pd.Timestamp(d).date() for d in frame["day"]]
    return frame


def _newest(con: Any) -> datetime | None:
    rows = con.sql("SELECT max(created_at) FROM tasks").fetchall()
    newest = rows[0][0] if rows else None
    if newest is None:
        return None
    return _utc(newest)


def series(
    cube: pd.DataFrame, scope: str = "account", value: str | None = None
) -> dict[date, Decimal]:
    """The daily spend of one scope of the cube (account, project, key, tag), exact."""
    if scope == "account":
        rows = cube
    elif scope == "tag":
        tags = cube["tags"].astype(object).tolist()
        rows = cube[[isinstance(t, str) and value in t.split(",") for t in tags]]
    else:
        column = {"project": "project", "key": "key_id"}[scope]
        rows = cube[[v == value for v in cube[column].astype(object).tolist()]]
    out: dict[date, Decimal] = {}
    for d, v in zip(rows["day"].tolist(), rows["cost_usd"].tolist(), strict=True):
        if v is None or (isinstance(v, float) and v != v):
            continue
        out[d] = out.get(d, Decimal(0)) + Decimal(str(v))
    return out


def _scope_filter(dimension: str, value: str | None) -> tuple[str, dict[str, Any]]:
    """SQL over ``tasks`` selecting one anomaly series (or budget scope)."""
    if dimension in ("total", "account"):
        return "TRUE", {}
    if dimension == "tag":
        return "list_contains(string_split(coalesce(tags, ''), ','), $v)", {"v": value}
    column = anomalies_.DIMENSIONS.get(dimension) or {"key": "key_id"}.get(dimension, dimension)
    if value == anomalies_.UNLABELLED.get(dimension):
        return f"{column} IS NULL", {}
    return f"{column} = $v", {"v": value}


def _top_tasks(con: Any, a: anomalies_.Anomaly, as_of: datetime) -> tuple[tuple[str, Decimal], ...]:
    where, params = _scope_filter(a.dimension, a.value)
    lo = datetime.combine(a.day, time(), UTC)
    rows = con.sql(
        f"SELECT task_id, cost_usd FROM tasks WHERE parent_task_id IS NULL AND {where} "
        "AND created_at >= $lo AND created_at < $hi AND created_at <= $as_of "
        f"AND cost_usd IS NOT NULL ORDER BY cost_usd DESC, task_id LIMIT {TOP_TASKS}",
        params={**params, "lo": lo, "hi": lo + timedelta(days=1), "as_of": as_of},
    ).fetchall()
    return tuple((str(t), Decimal(c)) for t, c in rows)


def _crossed(
    con: Any, rule: budgets_.BudgetRule, start: date, as_of: datetime, amount: Decimal
) -> datetime | None:
    """When the budget's spend in its period first went over ``amount`` (exact, per task)."""
    where, params = _scope_filter(rule.scope, rule.value)
    rows = con.sql(
        f"""SELECT min(created_at) FROM (
              SELECT created_at, sum(cost_usd) OVER (ORDER BY created_at, task_id
                     ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS cum
              FROM tasks
              WHERE parent_task_id IS NULL AND cost_usd IS NOT NULL AND {where}
                AND created_at >= $lo AND created_at <= $as_of) AS running
            WHERE cum >= $amount""",
        params={
            **params,
            "lo": datetime.combine(start, time(), UTC),
            "as_of": as_of,
            "amount": amount,
        },
    ).fetchall()
    at = rows[0][0] if rows else None
    if at is None:
        return None
    return _utc(at)


def _utc(t: Any) -> datetime:
    out: datetime = t.astimezone(UTC) if t.tzinfo else t.replace(tzinfo=UTC)
    return out


# --------------------------------------------------------------------------------- check


def _costliest(cube: pd.DataFrame, column: str, as_of: datetime, n: int) -> list[str]:
    recent = cube[[d >= as_of.date() - timedelta(days=27) for d in cube["day"].tolist()]]
    if not len(recent):
        return []
    labelled = recent[recent[column].notna()]
    totals: dict[str, Decimal] = {}
    for k, v in zip(labelled[column].tolist(), labelled["cost_usd"].tolist(), strict=True):
        if v is not None and not (isinstance(v, float) and v != v):
            totals[str(k)] = totals.get(str(k), Decimal(0)) + Decimal(str(v))
    return [k for k, v in sorted(totals.items(), key=lambda kv: (-kv[1], kv[0])) if v > 0][:n]


def check(
    source: Any,
    settings: budgets_.Guardrails | str | None = None,
    *,
    as_of: datetime | None = None,
    balances: Sequence[Mapping[str, Any]] | pd.DataFrame | None = None,
    state: alerts_.AlertState | None = None,
    paths: int = forecasts_.PATHS,
    forecast_scopes: int = FORECAST_SCOPES,
) -> GuardrailReport:
    """The guardrails of ``source`` (a tasks frame, an Arrow table, a ``LedgerStore`` or its
    directory) at ``as_of`` (default: the later of now and the newest task).

    ``settings``: a :class:`~songlab.ledger.budgets.Guardrails`, the path of a budgets file,
    or None (no budgets; default thresholds). ``balances``: the balance snapshots (default:
    the ``LedgerStore``'s, when ``source`` is one). ``state``: the alerts' memory (first seen,
    sent); without one, "since" is what the data says, or ``as_of``.
    """
    if isinstance(settings, str) or hasattr(settings, "__fspath__"):
        settings = budgets_.load(settings)  # type: ignore[arg-type]
    rules = settings if isinstance(settings, budgets_.Guardrails) else budgets_.Guardrails()
    store = _store_of(source)
    if balances is None and store is not None:
        balances = store.balances()
    snapshots = _snapshots(balances)
    with _connection(source) as con:
        if as_of is None:
            newest = _newest(con)
            now = datetime.now(UTC)
            as_of = max(now, newest) if newest is not None else now
        as_of = as_of.astimezone(UTC)
        cube = _cube(con, as_of)
        report = GuardrailReport(as_of, rules)
        total = series(cube)
        days = sorted(d for d, v in total.items() if v)
        report.history_days = (as_of.date() - days[0]).days if days else 0
        report.forecasts = _forecasts(cube, total, rules, as_of, paths, forecast_scopes)
        report.budgets = _budgets(cube, rules, as_of, report.forecasts)
        found = anomalies_.detect(
            cube,
            as_of=as_of,
            since=as_of.date() - timedelta(days=rules.anomaly_days - 1),
            thresholds=rules.thresholds,
            monitors=rules.monitors,
        )
        report.anomalies = [replace(a, top_tasks=_top_tasks(con, a, as_of)) for a in found]
        if snapshots:
            newest_snapshot = max(snapshots, key=lambda s: s["taken_at"])
            report.expiry = expiry_.outlook(
                newest_snapshot,
                total,
                as_of=as_of,
                snapshots=snapshots,
                level=rules.level,
                paths=paths,
            )
        else:
            report.notes.append(
                "no balance snapshot: expiring tokens need a ledger refreshed from a client "
                "(songlab report --check --ledger DIR)"
            )
        crossings = {
            (b.rule.key, b.period): _crossed(con, b.rule, b.start, as_of, _edge(b))
            for b in report.budgets
            if b.status in ("over", "near")
        }
    report.alerts = alerts_.collect(report, crossings=crossings, state=state)
    return report


def _edge(b: budgets_.BudgetState) -> Decimal:
    """The amount whose crossing started the budget's state (over: the budget; near: its
    near share)."""
    if b.status == "over":
        return b.rule.usd + Decimal("0.00000001")
    return b.rule.usd * b.rule.near / 100


def _store_of(source: Any) -> Any:
    import os

    from songlab.ledger.store import LedgerStore

    if isinstance(source, LedgerStore):
        return source
    if isinstance(source, str | os.PathLike):
        return LedgerStore(source)
    return None


def _snapshots(balances: Sequence[Mapping[str, Any]] | pd.DataFrame | None) -> list[dict[str, Any]]:
    if balances is None:
        return []
    if isinstance(balances, pd.DataFrame):
        rows = balances.to_dict("records")
    else:
        rows = [dict(b) for b in balances]
    out = []
    for r in rows:
        taken = r.get("taken_at")
        if taken is None or (isinstance(taken, float) and taken != taken):
            continue
        if isinstance(taken, pd.Timestamp):
            taken = taken.to_pydatetime()
        r["taken_at"] = taken
        out.append(r)
    return out


def _forecasts(
    cube: pd.DataFrame,
    total: dict[date, Decimal],
    rules: budgets_.Guardrails,
    as_of: datetime,
    paths: int,
    n: int,
) -> list[forecasts_.SpendForecast]:
    """The month and quarter of the account, and of its costliest projects and keys; and the
    periods of the budgets (one fit per scope)."""
    wanted: dict[tuple[str, str | None], set[str]] = {("account", None): {"month", "quarter"}}
    for p in _costliest(cube, "project", as_of, n):
        wanted.setdefault(("project", p), set()).update(("month", "quarter"))
    for k in _costliest(cube, "key_id", as_of, n):
        wanted.setdefault(("key", k), set()).update(("month", "quarter"))
    for rule in rules.budgets:
        wanted.setdefault((rule.scope, rule.value), set()).add(rule.period)
    out: list[forecasts_.SpendForecast] = []
    order = ["day", "week", "month", "quarter"]
    for (kind, value), periods in wanted.items():
        hist = total if kind == "account" else series(cube, kind, value)
        out.extend(
            forecasts_.forecast_periods(
                hist,
                as_of=as_of,
                periods=sorted(periods, key=order.index),
                scope=_scope_name(kind, value),
                level=rules.level,
                paths=paths,
            )
        )
    return out


def _scope_name(kind: str, value: str | None) -> str:
    return "total" if kind == "account" else f"{kind} {value}"


def _budgets(
    cube: pd.DataFrame,
    rules: budgets_.Guardrails,
    as_of: datetime,
    made: Sequence[forecasts_.SpendForecast],
) -> list[budgets_.BudgetState]:
    known = {(f.scope, f.period): f for f in made}
    out = []
    for rule in rules.budgets:
        hist = series(cube, rule.scope, rule.value)
        start, _, label = rule.bounds(as_of.date())
        spent = sum((v for d, v in hist.items() if start <= d <= as_of.date()), Decimal(0))
        fc = known.get((_scope_name(rule.scope, rule.value), label))
        out.append(budgets_.status(rule, spent, fc, at=as_of.date()))
    return out
