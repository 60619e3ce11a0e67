"""The guardrails of a ledger, all at once: forecasts with intervals, budgets, anomalies, expiring
tokens, and the alerts they raise.

:func:`check` reads the ledger's daily series once (spend per UTC day of the account and of
each project, key, tool, tier and set of tags: exact sums of the report's engine, so every
figure here adds up to the report's),
runs the pure methods of ``forecasts``, ``budgets``, ``anomalies`` and ``expiry`` on it, and
returns a :class:`GuardrailReport`: the forecasts (the account, each project and each key, for
the month and the quarter), every budget's state, the anomalies of the last days, the expiry
outlook, and the :class:`~songlab.ledger.alerts.Alert` list that ``songlab report --check``
prints, the webhook receives, notebook 03 and the HTML report open with.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from typing import Any, Final

import numpy as np
import pandas as pd

import songlab.ledger.alert_html as alert_html
import songlab.ledger.alert_state as alert_state
import songlab.ledger.alerts as alerts_
import songlab.ledger.anomalies as anomalies_
import songlab.ledger.budgets as budgets_
import songlab.ledger.engine as engine
import songlab.ledger.expiry as expiry_
import songlab.ledger.forecasts as forecasts_
from songlab.ledger._periods import budget_frame

__all__ = [
    "FORECAST_SCOPES",
    "GuardrailReport",
    "balance_snapshot",
    "budget_table",
    "check",
    "check_ledger",
    "daily_series",
    "find_anomalies",
    "hold",
    "series",
]

FORECAST_SCOPES: Final[int] = 10  # projects and keys forecast: the costliest of the last 28 days
TOP_TASKS: Final[int] = 5  # costliest tasks named per anomaly

# The daily series: the engine's measures of the relation ``ledger`` (one rule of what
# counts), per UTC day for the account and per day and label for each monitor, up to as_of
# (top level: sub-tasks are inside their run's cost). One scan, grouping sets: a row per
# monitor, label and day, however many tasks (a year of a busy account is a few thousand).
SERIES_MEASURES: Final[tuple[str, ...]] = (
    "tasks",
    "cost_usd",
    "estimated_tasks",
    "unknown_tasks",
    "pending_tasks",
    "pending_usd",
)
# monitor -> the relation's column (tags: budgets by tag; total: the account)
SERIES_COLUMNS: Final[dict[str, str]] = {
    "project": "project",
    "key": "key_id",
    "tool": "tool_id",
    "tier": "tier",
    "tags": "tags",
}


def _totals() -> str:
    return ", ".join(f"{m.total} AS {m.name}" for m in engine.MEASURES if m.name in SERIES_MEASURES)


def _series_sql(as_of: datetime, where: str = "TRUE", dims: Sequence[str] = ()) -> str:
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
        f"FROM ledger WHERE top_level AND day IS NOT NULL AND created_at <= {_ts(as_of)} "
        f"AND {where} GROUP BY GROUPING SETS ({sets})"
    )


def _ts(t: datetime) -> str:
    return f"TIMESTAMPTZ '{t.astimezone(UTC).strftime('%Y-%m-%d %H:%M:%S.%f')}+00:00'"


def _text(value: str) -> str:
    """A SQL string literal."""
    return "'" + value.replace("'", "''") + "'"


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
            return f"no active alerts as of {self.as_of:%Y-%m-%d %H:%M:%S} UTC"
        return "\n".join(self.lines())

    def __repr__(self) -> str:
        return (
            f"<GuardrailReport as of {self.as_of:%Y-%m-%d %H:%M:%S} UTC: "
            f"{_count(len(self.alerts), 'alert')}, {_count(len(self.forecasts), 'forecast')}, "
            f"{_count(len(self.budgets), 'budget')}, "
            f"{_count(len(self.anomalies), 'anomaly', 'anomalies')}>"
        )

    def _repr_html_(self) -> str:
        return alert_html.alerts_html(self.alerts, as_of=self.as_of, notes=self.notes)


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else many or one + 's'}"


# ---------------------------------------------------------------------------------- data


def daily_series(source: Any, *, as_of: datetime) -> pd.DataFrame:
    """The daily spend of the account and of each project, key, tool, tier and set of tags of
    ``source`` (a tasks frame, an Arrow table, a ``LedgerStore`` or its directory) up to
    ``as_of``: one row per ``dimension`` (total, project, key, tool, tier, tags), ``value``
    (null: not labelled) and ``day``, with the engine's measures (so a day's total is the
    report's)."""
    with engine.open_ledger(source) as lg:
        return _series(lg, as_of)


def _series(
    lg: engine.Ledger, as_of: datetime, where: str = "TRUE", dims: Sequence[str] = ()
) -> pd.DataFrame:
    frame = lg.arrow(_series_sql(as_of, where, dims)).to_pandas()
    frame["day"] = [d if isinstance(d, date) else pd.Timestamp(d).date() for d in frame["day"]]
    return frame


def find_anomalies(
    source: Any,
    *,
    as_of: datetime,
    since: date | None = None,
    thresholds: anomalies_.Thresholds | None = None,
    monitors: Sequence[str] = tuple(anomalies_.DIMENSIONS),
) -> list[anomalies_.Anomaly]:
    """The anomalies of ``source`` from ``since`` to ``as_of`` (``anomalies.detect`` on the
    ledger's daily series, drivers and costliest tasks asked of the ledger)."""
    with engine.open_ledger(source) as lg:
        daily = _series(lg, as_of)
        found = anomalies_.detect(
            daily[daily["dimension"] != "tags"],
            as_of=as_of,
            since=since,
            thresholds=thresholds,
            monitors=monitors,
            breakdown=_breakdown(lg, as_of),
        )
        return [replace(a, top_tasks=_top_tasks(lg, a, as_of)) for a in found]


def _breakdown(lg: engine.Ledger, as_of: datetime) -> anomalies_.Breakdown:
    """An anomaly's series by project, key, tool and tier, asked of the ledger."""

    def breakdown(dimension: str, value: str | None, lo: date, hi: date) -> pd.DataFrame:
        where = (
            f"{_scope_filter(dimension, value)} AND day >= DATE '{lo.isoformat()}' "
            f"AND day <= DATE '{hi.isoformat()}'"
        )
        dims = [d for d in ("project", "key", "tool", "tier") if d != dimension]
        return _series(lg, as_of, where, dims)

    return breakdown


def series(
    daily: pd.DataFrame,
    scope: str = "account",
    value: str | None = None,
    *,
    column: str = "cost_usd",
) -> dict[date, Decimal]:
    """The daily spend of one scope (account, project, key, tag) of :func:`daily_series`'s
    frame, exact (``column``: another money measure, ``pending_usd``)."""
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


def _scope_filter(dimension: str, value: str | None) -> str:
    """SQL over ``ledger`` selecting one anomaly series or budget scope."""
    if dimension in ("total", "account"):
        return "TRUE"
    if dimension == "tag":
        return f"list_contains(string_split(coalesce(tags, ''), ','), {_text(str(value))})"
    column = anomalies_.DIMENSIONS.get(dimension) or {"key": "key_id"}.get(dimension, dimension)
    if value == anomalies_.UNLABELLED.get(dimension):
        return f"{column} IS NULL"
    return f"{column} = {_text(str(value))}"


def _top_tasks(
    lg: engine.Ledger, a: anomalies_.Anomaly, as_of: datetime
) -> tuple[tuple[str, Decimal], ...]:
    """The anomaly's costliest tasks of its day (its series, up to as_of)."""
    rows = lg.arrow(
        f"SELECT task_id, cost_usd FROM ledger WHERE top_level AND "
        f"{_scope_filter(a.dimension, a.value)} AND day = DATE '{a.day.isoformat()}' "
        f"AND created_at <= {_ts(as_of)} AND cost_usd IS NOT NULL "
        f"ORDER BY cost_usd DESC, task_id LIMIT {TOP_TASKS}"
    ).to_pylist()
    return tuple((str(r["task_id"]), Decimal(r["cost_usd"])) for r in rows)


def _crossed(
    lg: engine.Ledger, rule: budgets_.BudgetRule, start: date, as_of: datetime, amount: Decimal
) -> datetime | None:
    """When the budget's spend in its period first reached ``amount`` (exact, per task)."""
    lo = datetime.combine(start, time(), UTC)
    rows = lg.arrow(
        "SELECT min(created_at) AS at FROM (SELECT created_at, sum(cost_usd) OVER "
        "(ORDER BY created_at, task_id ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS cum "
        f"FROM ledger WHERE top_level AND cost_usd IS NOT NULL AND "
        f"{_scope_filter(rule.scope, rule.value)} AND created_at >= {_ts(lo)} "
        f"AND created_at <= {_ts(as_of)}) AS running "
        f"WHERE cum >= CAST('{amount:f}' AS DECIMAL(38, 8))"
    ).to_pylist()
    at = rows[0]["at"] if rows else None
    return None if at is None else _utc(at)


def _utc(t: Any) -> datetime:
    out: datetime = t.astimezone(UTC) if t.tzinfo else t.replace(tzinfo=UTC)
    return out


# --------------------------------------------------------------------------------- check


def _costliest(daily: pd.DataFrame, dimension: str, as_of: datetime, n: int) -> list[str]:
    """The ``n`` labels of ``dimension`` that cost most over the last 28 days."""
    if n <= 0:
        return []
    since = as_of.date() - timedelta(days=27)
    totals: dict[str, Decimal] = {}
    for dim, label, d, v in zip(
        daily["dimension"].tolist(),
        daily["value"].tolist(),
        daily["day"].tolist(),
        daily["cost_usd"].tolist(),
        strict=True,
    ):
        if dim == dimension and isinstance(label, str) and d >= since and v is not None:
            totals[label] = totals.get(label, Decimal(0)) + Decimal(str(v))
    return [k for k, v in sorted(totals.items(), key=lambda kv: (-kv[1], kv[0])) if v > 0][:n]


def check(
    source: Any,
    settings: budgets_.Guardrails | str | os.PathLike[str] | None = None,
    *,
    as_of: datetime | None = None,
    balances: Sequence[Mapping[str, Any]] | pd.DataFrame | None = None,
    state: alert_state.AlertState | None = None,
    paths: int = forecasts_.PATHS,
    forecast_scopes: int = FORECAST_SCOPES,
) -> GuardrailReport:
    """The guardrails of ``source`` (a tasks frame, an Arrow table, a ``LedgerStore`` or its
    directory) at ``as_of`` (default: the later of now and the newest task).

    ``settings``: a :class:`~songlab.ledger.budgets.Guardrails`, the path of a budgets file,
    or None (no budgets; default thresholds). ``balances``: the balance snapshots (default:
    the ``LedgerStore``'s, when ``source`` is one). ``state``: the alerts' memory (first seen,
    sent); without one, "since" is what the data says, or ``as_of``. ``forecast_scopes``:
    the costliest projects and keys forecast besides the account (0: only the account and
    the budgets).
    """
    store = _store_of(source)
    if balances is None and store is not None:
        balances = store.balances()
    elif balances is None and callable(getattr(getattr(source, "account", None), "balance", None)):
        balances = [balance_snapshot(source)]  # a client: its balance now
    with engine.open_ledger(store if store is not None else source) as lg:
        return check_ledger(
            lg,
            settings,
            as_of=as_of,
            balances=balances,
            state=state,
            paths=paths,
            forecast_scopes=forecast_scopes,
        )


def check_ledger(
    lg: engine.Ledger,
    settings: budgets_.Guardrails | str | os.PathLike[str] | None = None,
    *,
    as_of: datetime | None = None,
    balances: Sequence[Mapping[str, Any]] | pd.DataFrame | None = None,
    state: alert_state.AlertState | None = None,
    paths: int = forecasts_.PATHS,
    forecast_scopes: int = FORECAST_SCOPES,
) -> GuardrailReport:
    """:func:`check` on a ledger already open (the report opens its source once)."""
    if isinstance(settings, str | os.PathLike):
        settings = budgets_.load(settings)
    rules = settings if isinstance(settings, budgets_.Guardrails) else budgets_.Guardrails()
    snapshots = _snapshots(balances)
    as_of = (as_of or lg.as_of()).astimezone(UTC)
    daily = _series(lg, as_of)
    report = GuardrailReport(as_of, rules)
    total = series(daily)
    days = sorted(d for d, v in total.items() if v)
    report.history_days = (as_of.date() - days[0]).days if days else 0
    if report.history_days < anomalies_.MIN_HISTORY:
        report.notes.append(
            f"{report.history_days} complete days of spend so far: anomalies are judged after "
            f"{anomalies_.MIN_HISTORY}, forecasts have an interval after "
            f"{forecasts_.RESAMPLE_DAYS} and learn the weekly pattern after "
            f"{forecasts_.SEASONAL_DAYS}"
        )
    report.forecasts = _forecasts(daily, total, rules, as_of, paths, forecast_scopes)
    report.budgets = _budgets(daily, rules, as_of, report.forecasts)
    found = anomalies_.detect(
        daily[daily["dimension"] != "tags"],
        as_of=as_of,
        since=as_of.date() - timedelta(days=rules.anomaly_days - 1),
        thresholds=rules.thresholds,
        monitors=rules.monitors,
        breakdown=_breakdown(lg, as_of),
    )
    report.anomalies = [replace(a, top_tasks=_top_tasks(lg, a, as_of)) for a in found]
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
            "(songlab report --ledger DIR)"
        )
    crossings = {
        (b.rule.key, b.period): _crossed(lg, b.rule, b.start, as_of, _edge(b))
        for b in report.budgets
        if b.status in ("over", "near")
    }
    report.alerts = alerts_.collect(report, crossings=crossings, state=state)
    return report


@contextmanager
def hold(
    client: Any,
    settings: budgets_.Guardrails | str | os.PathLike[str],
    source: Any = None,
    *,
    as_of: datetime | None = None,
) -> Iterator[list[Any]]:
    """The hard budgets of a budgets file, held by ``client`` inside the block.

    Each hard budget becomes a ``client.budget`` scoped like it (the account, a project, a tag
    or a key id) and starting from what ``source`` (a ``LedgerStore``, its directory, a
    frame; default: the client's own listing) shows spent in the budget's current period,
    pending tasks' list prices included: a create that would take it over is refused before
    anything is sent, as ``client.budget`` does. The amounts are the period's at the start of
    the block (enter it again in a new period; refresh the ledger to count what others spent
    meanwhile)."""
    if isinstance(settings, str | os.PathLike):
        settings = budgets_.load(settings)
    hard = settings.hard
    if not hard:
        yield []
        return
    store = _store_of(source) if source is not None else None
    target = store if store is not None else source if source is not None else client
    with engine.open_ledger(target) as lg:
        as_of = (as_of or lg.as_of()).astimezone(UTC)
        daily = _series(lg, as_of)
    held = []
    for rule in hard:
        start, _, label = rule.bounds(as_of.date())
        spent = sum(
            (
                v
                for column in ("cost_usd", "pending_usd")
                for d, v in series(daily, rule.scope, rule.value, column=column).items()
                if start <= d <= as_of.date()
            ),
            Decimal(0),
        )
        held.append(
            client.budget(
                usd=rule.usd,
                spent=spent,
                project=rule.value if rule.scope == "project" else None,
                tag=rule.value if rule.scope == "tag" else None,
                key_id=rule.value if rule.scope == "key" else None,
                label=f"budget {rule.label} in {label}",
            )
        )
    with ExitStack() as stack:
        for b in held:
            stack.enter_context(b)
        yield held


def balance_snapshot(client: Any) -> dict[str, Any]:
    """The client's account balance now (``GET /v1/account/balance``), as a snapshot."""
    bal = client.account.balance()
    raw = bal if isinstance(bal, Mapping) else vars(bal) if hasattr(bal, "__dict__") else {}
    get = raw.get if raw else (lambda k, d=None: getattr(bal, k, d))
    return {
        "taken_at": datetime.now(UTC),
        "total_effective": get("total_effective"),
        "base_effective": get("base_effective"),
        "extra_tokens": get("extra_tokens", 0),
        "base_expires_at": get("base_expires_at"),
    }


def budget_table(states: Sequence[budgets_.BudgetState]) -> pd.DataFrame:
    """The report's budget table (its columns: scope, month, budget_usd, spent_usd,
    remaining_usd, used_pct, forecast_usd, status) from the guardrails' judgement of each
    budget, so the table, the report's budget card and the alerts give one answer.
    ``month`` holds the budget's period (``2026-11``; ``2026-Q4``, ``week of 2026-11-16`` or
    a day for the budgets file's other periods, which the scope then names);
    ``forecast_usd`` is the forecast's mean (None when nothing could be forecast)."""
    rows = []
    for b in states:
        rule = b.rule
        scope = "overall" if rule.scope == "account" else rule.subject
        if rule.period != "month":
            scope += f", {rule.period}"
        if rule.name:
            scope = f"{rule.name} ({scope})"
        rows.append(
            {
                "scope": scope,
                "month": b.period,
                "budget_usd": rule.usd,
                "spent_usd": b.spent_usd,
                "remaining_usd": b.remaining_usd,
                "used_pct": b.used_percent,
                "forecast_usd": b.forecast.mean_usd if b.forecast is not None else None,
                "status": b.status,
            }
        )
    return budget_frame(rows)


def _edge(b: budgets_.BudgetState) -> Decimal:
    """The amount whose crossing started the budget's state (over: the budget; near: its
    near share)."""
    if b.status == "over":
        return b.rule.usd + Decimal("0.00000001")
    return b.rule.usd * b.rule.near / 100


def _store_of(source: Any) -> Any:
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
    for k in _costliest(cube, "key", as_of, n):
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
