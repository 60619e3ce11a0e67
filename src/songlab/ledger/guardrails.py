"""The guardrails of a ledger, all at once: forecasts with intervals, budgets, anomalies, expiring
tokens, and the alerts they raise.

:func:`check` reads the ledger's daily series once (``songlab.ledger.daily``: spend per UTC
day of the account and of each project, key, tool, tier and set of tags, from the report's
own cube, so every figure here adds up to the report's), runs the pure methods of
``forecasts``, ``budgets``, ``anomalies`` and ``expiry`` on it, and returns a
:class:`GuardrailReport`: the forecasts (the account and each budget's scope, for the periods
that are shown; the costliest projects and keys too when asked), every budget's state, the
anomalies of the last days, the expiry outlook, and the :class:`~songlab.ledger.alerts.Alert`
list that ``songlab report --check`` prints, the webhook receives, notebook 03 and the HTML
report open with. Each series is fitted once: every period and view of it reads that fit.
:func:`judge` is the forecasts and budgets alone (the report's month figures, without the
anomalies and alerts).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Final

import pandas as pd

import songlab.ledger.alert_html as alert_html
import songlab.ledger.alert_state as alert_state
import songlab.ledger.alerts as alerts_
import songlab.ledger.anomalies as anomalies_
import songlab.ledger.budgets as budgets_
import songlab.ledger.daily as daily_
import songlab.ledger.engine as engine
import songlab.ledger.expiry as expiry_
import songlab.ledger.forecasts as forecasts_
from songlab.ledger.budgets import budget_frame

if TYPE_CHECKING:
    from songlab.ledger.store import LedgerStore

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
    "judge",
    "series",
]

FORECAST_SCOPES: Final[int] = 10  # projects and keys forecast: the costliest of the last 28 days

# the daily series and one scope's spend (songlab.ledger.daily), as this module has long named them
daily_series = daily_.daily_series
series = daily_.of_scope


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


def check(
    source: object,
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
    report, daily = _judged(lg, settings, as_of, paths, forecast_scopes)
    rules, as_of = report.settings, report.as_of
    if report.history_days < anomalies_.MIN_HISTORY:
        report.notes.append(
            f"{report.history_days} complete days of spend so far: anomalies are judged after "
            f"{anomalies_.MIN_HISTORY}, forecasts have an interval after "
            f"{forecasts_.RESAMPLE_DAYS} and learn the weekly pattern after "
            f"{forecasts_.SEASONAL_DAYS}"
        )
    since = as_of.date() - timedelta(days=rules.anomaly_days - 1)
    report.anomalies = _anomalies(lg, daily, as_of, since, rules.thresholds, rules.monitors)
    snapshots = _snapshots(balances)
    if snapshots:
        newest_snapshot = max(snapshots, key=lambda s: s["taken_at"])
        report.expiry = expiry_.outlook(
            newest_snapshot,
            daily_.of_scope(daily),
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
        (b.rule.key, b.period): daily_.crossed(
            lg, b.rule.scope, b.rule.value, b.start, as_of, _edge(b)
        )
        for b in report.budgets
        if b.status in ("over", "near")
    }
    report.alerts = alerts_.collect(report, crossings=crossings, state=state)
    return report


def judge(
    lg: engine.Ledger,
    settings: budgets_.Guardrails | str | os.PathLike[str] | None = None,
    *,
    as_of: datetime | None = None,
    paths: int = forecasts_.PATHS,
    forecast_scopes: int = 0,
) -> GuardrailReport:
    """The forecasts and the budgets' states of ``lg`` at ``as_of`` (no anomalies, expiry or
    alerts): what the report's month figures and budget table show, each series fitted once."""
    return _judged(lg, settings, as_of, paths, forecast_scopes)[0]


def _judged(
    lg: engine.Ledger,
    settings: budgets_.Guardrails | str | os.PathLike[str] | None,
    as_of: datetime | None,
    paths: int,
    forecast_scopes: int,
) -> tuple[GuardrailReport, pd.DataFrame]:
    if isinstance(settings, str | os.PathLike):
        settings = budgets_.load(settings)
    rules = settings if isinstance(settings, budgets_.Guardrails) else budgets_.Guardrails()
    as_of = (as_of or lg.as_of()).astimezone(UTC)
    daily = daily_.series_frame(lg, as_of)
    report = GuardrailReport(as_of, rules)
    total = daily_.of_scope(daily)
    days = sorted(d for d, v in total.items() if v)
    report.history_days = (as_of.date() - days[0]).days if days else 0
    report.forecasts = _forecasts(daily, total, rules, as_of, paths, forecast_scopes)
    report.budgets = _budgets(daily, rules, as_of, report.forecasts)
    return report, daily


def find_anomalies(
    source: object,
    *,
    as_of: datetime,
    since: date | None = None,
    thresholds: anomalies_.Thresholds | None = None,
    monitors: Sequence[str] = tuple(anomalies_.DIMENSIONS),
) -> list[anomalies_.Anomaly]:
    """The anomalies of ``source`` from ``since`` to ``as_of`` (``anomalies.detect`` on the
    ledger's daily series, drivers and costliest tasks asked of the ledger)."""
    with engine.open_ledger(source) as lg:
        return _anomalies(lg, daily_.series_frame(lg, as_of), as_of, since, thresholds, monitors)


def _anomalies(
    lg: engine.Ledger,
    daily: pd.DataFrame,
    as_of: datetime,
    since: date | None,
    thresholds: anomalies_.Thresholds | None,
    monitors: Sequence[str],
) -> list[anomalies_.Anomaly]:
    found = anomalies_.detect(
        daily[daily["dimension"] != "tags"],
        as_of=as_of,
        since=since,
        thresholds=thresholds,
        monitors=monitors,
        breakdown=daily_.breakdown(lg, as_of),
    )
    return [replace(a, top_tasks=daily_.top_tasks(lg, a, as_of)) for a in found]


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


@contextmanager
def hold(
    client: Any,
    settings: budgets_.Guardrails | str | os.PathLike[str],
    source: object = None,
    *,
    as_of: datetime | None = None,
) -> Iterator[list[object]]:
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
        daily = daily_.series_frame(lg, as_of)
    held = []
    for rule in hard:
        start, _, label = rule.bounds(as_of.date())
        spent = sum(
            (
                v
                for column in ("cost_usd", "pending_usd")
                for d, v in daily_.of_scope(daily, rule.scope, rule.value, column=column).items()
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


def _store_of(source: object) -> LedgerStore | None:
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
        rows = [{str(k): v for k, v in r.items()} for r in balances.to_dict("records")]
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
        hist = total if kind == "account" else daily_.of_scope(cube, kind, value)
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
        hist = daily_.of_scope(cube, rule.scope, rule.value)
        start, _, label = rule.bounds(as_of.date())
        spent = sum((v for d, v in hist.items() if start <= d <= as_of.date()), Decimal(0))
        fc = known.get((_scope_name(rule.scope, rule.value), label))
        out.append(budgets_.status(rule, spent, fc, at=as_of.date()))
    return out
