"""Alerts that reach someone: a guardrail in a state worth a person's attention, one line each.

An :class:`Alert` is a budget ``over``, ``forecast over`` or ``near``; an ``anomaly``; base
tokens ``expiring`` unused; the balance that ``runs out`` first. Each says what, how much and
since when, in one line (:meth:`Alert.line`, what ``songlab report --check`` prints) and as
JSON (:meth:`Alert.to_json`, what a webhook receives; money as exact decimal strings).
:func:`collect` makes them from a guardrail report, most urgent first.

**Once per state.** An alert's ``id`` names its subject and its state (a budget, its period
and ``over``; an anomaly's series and day; ...): the same state keeps its id from run to run,
a new state (``near`` becoming ``over``, next month's period, another day's anomaly) gets a
new one. ``songlab.ledger.alert_state`` remembers when each id was first seen and sent;
``songlab.ledger.webhook`` delivers them; ``songlab.ledger.alert_html`` shows them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Final

from songlab.ledger.alert_state import AlertState, iso
from songlab.ledger.safe_text import printable

if TYPE_CHECKING:
    from songlab.ledger.anomalies import Anomaly, Driver
    from songlab.ledger.budgets import BudgetState
    from songlab.ledger.expiry import ExpiryOutlook
    from songlab.ledger.forecasts import SpendForecast
    from songlab.ledger.guardrails import GuardrailReport

__all__ = ["Alert", "KINDS", "collect"]

KINDS: Final[tuple[str, ...]] = ("budget", "anomaly", "expiry", "runout")
# the order alerts are listed in: the most urgent first
_RANK: Final[dict[str, int]] = {
    "over": 0,
    "runs out": 1,
    "forecast over": 2,
    "anomaly": 3,
    "expiring": 4,
    "near": 5,
}

# when an alert's state began: (alert id, the time the data says, if any) -> the time shown
Since = Callable[[str, datetime | None], datetime]


@dataclass(frozen=True, slots=True)
class Alert:
    """A guardrail in a state worth a person's attention."""

    id: str  # subject and state: the same state keeps it, a new state gets another
    kind: str  # budget, anomaly, expiry, runout
    state: str  # over, forecast over, near, anomaly, expiring, runs out
    subject: str  # "budget project podcast ($120.00 a month, hard)", "project research", ...
    text: str  # what and how much
    amount_usd: Decimal | None  # how much: spent, impact, tokens' worth
    since: datetime
    as_of: datetime
    details: Mapping[str, object] = field(default_factory=dict)

    def line(self) -> str:
        """``OVER budget project podcast (...): spent $130.12 of $120.00 ...; since ...``: one
        line, whatever the names in it hold (control characters escaped: ``safe_text``)."""
        return printable(
            f"{self.state.upper()} {self.subject}: {self.text}; "
            f"since {self.since:%Y-%m-%d %H:%M} UTC"
        )

    def to_json(self) -> dict[str, object]:
        """The alert as JSON (Decimal amounts as exact strings, times ISO 8601 UTC); ``text``
        is the line, so a chat webhook (Slack, Teams, Mattermost) shows it as is."""
        return {
            "source": "songlab",
            "id": self.id,
            "kind": self.kind,
            "state": self.state,
            "subject": self.subject,
            "text": self.line(),
            "amount_usd": None if self.amount_usd is None else f"{self.amount_usd:f}",
            "since": iso(self.since),
            "as_of": iso(self.as_of),
            "details": _jsonable(self.details),
        }


def _jsonable(value: Any) -> Any:
    if isinstance(value, Decimal):
        return f"{value:f}"
    if isinstance(value, datetime):
        return iso(value)
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, float) and value != value:
        return None
    return value


def _money(x: Decimal | None) -> str:
    if x is None:
        return "unknown"
    from songlab.ledger.display import cents

    return f"${cents(x)}"


# ------------------------------------------------------------------------------- collect


def collect(
    report: GuardrailReport,
    *,
    crossings: Mapping[tuple[str, str], datetime | None] | None = None,
    state: AlertState | None = None,
) -> list[Alert]:
    """The alerts of a guardrail report, most urgent first. ``crossings``: when each budget's
    spend crossed into its state (from the tasks); ``state``: first-seen times for the states
    the data cannot date (a forecast, an expiry outlook)."""
    as_of = report.as_of

    def since(alert_id: str, dated: datetime | None) -> datetime:
        if dated is not None:
            return dated
        if state is not None:
            return state.first_seen(alert_id, as_of)
        return as_of

    found = [
        *_budget_alerts(report, crossings or {}, since),
        *_anomaly_alerts(report),
        *_expiry_alerts(report, since),
    ]
    found.sort(key=lambda a: (_RANK.get(a.state, 9), -(a.amount_usd or Decimal(0)), a.id))
    return found


def _budget_alerts(
    report: GuardrailReport, crossings: Mapping[tuple[str, str], datetime | None], since: Since
) -> list[Alert]:
    out = []
    for b in report.budgets:
        if b.status == "ok":
            continue
        rule, fc = b.rule, b.forecast
        aid = f"budget:{rule.key}:{b.period}:{b.status.replace(' ', '-')}"
        details: dict[str, object] = {
            "scope": rule.scope,
            "value": rule.value,
            "period": b.period,
            "period_start": b.start,
            "period_end": b.end,
            "budget_usd": rule.usd,
            "spent_usd": b.spent_usd,
            "used_percent": b.used_percent,
            "hard": rule.hard,
        }
        if fc is not None:
            details.update(
                forecast_usd=fc.mean_usd,
                forecast_low_usd=fc.low_usd,
                forecast_high_usd=fc.high_usd,
                forecast_level=fc.level,
                p_over=None if b.p_over is None else round(b.p_over, 3),
                method=fc.method,
            )
        if b.status == "forecast over" and fc is not None:
            text, amount, when = _forecast_over_text(b, fc), fc.mean_usd, since(aid, None)
        else:
            text = (
                f"spent {_money(b.spent_usd)} of {_money(rule.usd)} ({b.used_percent}%) in "
                f"{b.period}"
            )
            if fc is not None and b.status == "near":
                text += f"; forecast {_money(fc.mean_usd)}"
            amount = b.spent_usd
            when = since(aid, crossings.get((rule.key, b.period)))
        subject = f"budget {rule.label}"
        out.append(
            Alert(aid, "budget", b.status, subject, text, amount, when, report.as_of, details)
        )
    return out


def _forecast_over_text(b: BudgetState, fc: SpendForecast) -> str:
    rule = b.rule
    if fc.low_usd is not None:
        chance = f"; {b.p_over:.0%} chance of going over" if b.p_over is not None else ""
        interval = f" ({fc.level:.0%}: {_money(fc.low_usd)} to {_money(fc.high_usd)}{chance})"
    else:
        interval = " (no interval: " + (fc.note or "too little history") + ")"
    return (
        f"forecast {_money(fc.mean_usd)}{interval} for {b.period}, over "
        f"{_money(rule.usd)}; spent {_money(b.spent_usd)} so far"
    )


def _anomaly_alerts(report: GuardrailReport) -> list[Alert]:
    out = []
    for a in report.anomalies:
        drivers = ", ".join(
            f"{d.dimension} {d.value} +{_money(d.excess_usd)}" for d in _main_drivers(a)
        )
        tasks = ", ".join(t for t, _ in a.top_tasks[:3])
        text = (
            f"spent {_money(a.actual_usd)}{' so far' if a.partial else ''} on {a.day}, "
            f"{_money(a.impact_usd)}"
            + (f" (+{a.impact_percent:,}%)" if a.impact_percent is not None else "")
            + f" above its usual {_money(a.usual_usd)}"
            + (f"; made by {drivers}" if drivers else "")
            + f"; {a.tasks:,} tasks"
            + (f" (costliest: {tasks})" if tasks else "")
        )
        day_start = datetime.combine(a.day, time(), UTC)
        out.append(
            Alert(
                a.key,
                "anomaly",
                "anomaly",
                a.scope,
                text,
                a.impact_usd,
                day_start,
                report.as_of,
                _anomaly_details(a),
            )
        )
    return out


def _anomaly_details(a: Anomaly) -> dict[str, object]:
    return {
        "dimension": a.dimension,
        "value": a.value,
        "day": a.day,
        "partial_day": a.partial,
        "actual_usd": a.actual_usd,
        "usual_usd": a.usual_usd,
        "upper_usd": a.upper_usd,
        "impact_usd": a.impact_usd,
        "impact_percent": a.impact_percent,
        "z": a.z,
        "history_days": a.history_days,
        "tasks": a.tasks,
        "unknown_cost_tasks": a.unknown_tasks,
        "drivers": [
            {
                "dimension": d.dimension,
                "value": d.value,
                "actual_usd": d.actual_usd,
                "usual_usd": d.usual_usd,
                "excess_usd": d.excess_usd,
            }
            for d in a.drivers
        ],
        "top_tasks": [{"task_id": t, "cost_usd": c} for t, c in a.top_tasks],
    }


def _main_drivers(a: Anomaly) -> list[Driver]:
    """The drivers worth naming: the largest of each dimension, if it made a tenth of the
    impact or more."""
    seen: set[str] = set()
    out = []
    for d in a.drivers:
        if d.dimension in seen or d.excess_usd < a.impact_usd / 10:
            continue
        seen.add(d.dimension)
        out.append(d)
    return out


def _expiry_alerts(report: GuardrailReport, since: Since) -> list[Alert]:
    """Base tokens expected to expire unused, and the balance running out first."""
    x = report.expiry
    if x is None or x.base_expires_at is None or x.days_to_expiry is None:
        return []
    settings = report.settings.expiry
    base = {
        "base_expires_at": x.base_expires_at,
        "days_to_expiry": round(x.days_to_expiry, 2),
        "total_tokens": x.total_tokens,
        "base_tokens": x.base_tokens,
        "extra_tokens": x.extra_tokens,
        "rate_usd_per_day": x.rate_usd_per_day,
        "rate_source": x.rate_source,
        "balance_taken_at": x.taken_at,
        "method": x.method,
        "note": x.note,
    }
    out = []
    soon = x.days_to_expiry <= settings.warn_days
    if soon and x.unused_tokens >= max(1, settings.min_tokens):
        out.append(_expiring(report, x, base, since))
    ends = x.runs_out_on
    if ends is not None and (ends - report.as_of.date()).days <= settings.warn_days:
        out.append(_runs_out(report, x, base, since))
    return out


def _expiring(
    report: GuardrailReport, x: ExpiryOutlook, base: dict[str, object], since: Since
) -> Alert:
    expires = x.base_expires_at
    if expires is None:  # never: the caller alerts only when the base expires
        raise ValueError("expiry: the base has no expiry to alert on")
    aid = f"expiry:{iso(expires)}"
    interval = (
        f" ({x.level:.0%}: {x.unused_low:,} to {x.unused_high:,})"
        if x.unused_low is not None and x.unused_high is not None
        else ""
    )
    text = (
        f"{x.unused_tokens:,} base tokens ({_money(x.unused_usd)}) expected to expire "
        f"unused at {x.base_expires_at:%Y-%m-%d %H:%M} UTC{interval}, at "
        f"{_money(x.rate_usd_per_day)} a day"
    )
    details = {
        **base,
        "unused_tokens": x.unused_tokens,
        "unused_low": x.unused_low,
        "unused_high": x.unused_high,
        "p_unused": round(x.p_unused, 3),
    }
    when = since(aid, None)
    return Alert(
        aid, "expiry", "expiring", "base tokens", text, x.unused_usd, when, report.as_of, details
    )


def _runs_out(
    report: GuardrailReport, x: ExpiryOutlook, base: dict[str, object], since: Since
) -> Alert:
    ends = x.runs_out_on
    aid = f"runout:{ends:%Y-%m}"
    interval = (
        f" ({x.level:.0%}: {x.runs_out_low} to {x.runs_out_high})"
        if x.runs_out_low is not None and x.runs_out_high is not None
        else ""
    )
    text = (
        f"runs out around {ends}{interval}, before its base tokens expire at "
        f"{x.base_expires_at:%Y-%m-%d}; {x.total_tokens:,} tokens left at "
        f"{_money(x.rate_usd_per_day)} a day"
    )
    details = {
        **base,
        "runs_out_on": ends,
        "runs_out_low": x.runs_out_low,
        "runs_out_high": x.runs_out_high,
        "p_runs_out": round(x.p_runs_out, 3),
    }
    amount = Decimal(x.total_tokens) / 100
    when = since(aid, None)
    return Alert(aid, "runout", "runs out", "balance", text, amount, when, report.as_of, details)
