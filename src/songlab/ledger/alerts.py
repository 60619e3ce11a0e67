"""Alerts that reach someone: one line each, the same as JSON to a webhook, sent once per state.

An :class:`Alert` is a guardrail in a state worth a person's attention: a budget ``over``,
``forecast over`` or ``near``; an ``anomaly``; base tokens ``expiring`` unused; the balance
that ``runs out`` first. Each says what, how much and since when, in one line
(:meth:`Alert.line`, what ``songlab report --check`` prints) and as JSON
(:meth:`Alert.to_json`, what a webhook receives; money as exact decimal strings).

**Once per state.** An alert's ``id`` names its subject and its state (a budget, its period
and ``over``; an anomaly's series and day; ...): the same state keeps its id from run to run,
a new state (``near`` becoming ``over``, next month's period, another day's anomaly) gets a
new one. :class:`AlertState` remembers, in a private file (0600, written whole:
``songlab.localfiles``), when each id was first seen (the "since" of states the data cannot
date) and when it was delivered. :func:`deliver` POSTs each alert not delivered yet, one
request per alert, retrying a failed one (connection errors, timeouts, 408, 425, 429 and
5xx; ``Retry-After`` honoured) with growing waits; a delivered alert is written to the state
file at once, so neither a crash nor a second run sends it again, and one that still fails is
left for the next run. Each request carries ``Idempotency-Key`` (from the id), so a receiver
can drop a repeat should the state file be lost. The URL is a secret (a chat webhook's path
is its token): messages name its host only.
"""

from __future__ import annotations

import contextlib
import hashlib
import html
import json
import os
import time as _time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from songlab.ledger.guardrails import GuardrailReport

__all__ = [
    "Alert",
    "AlertState",
    "Delivery",
    "EXIT_ALERTS",
    "KINDS",
    "alerts_html",
    "check_url",
    "collect",
    "deliver",
    "redact_url",
]

EXIT_ALERTS: Final[int] = 3  # songlab report --check: some alert is active
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
RETRY_STATUS: Final[frozenset[int]] = frozenset({408, 425, 429, 500, 502, 503, 504})
STATE_VERSION: Final[int] = 1


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
    details: Mapping[str, Any] = field(default_factory=dict)

    def line(self) -> str:
        """``OVER budget project podcast (...): spent $130.12 of $120.00 ...; since ...``."""
        return (
            f"{self.state.upper()} {self.subject}: {self.text}; "
            f"since {self.since:%Y-%m-%d %H:%M} UTC"
        )

    def to_json(self) -> dict[str, Any]:
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
            "since": _iso(self.since),
            "as_of": _iso(self.as_of),
            "details": _jsonable(self.details),
        }


def _iso(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _jsonable(value: Any) -> Any:
    if isinstance(value, Decimal):
        return f"{value:f}"
    if isinstance(value, datetime):
        return _iso(value)
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
    crossings = crossings or {}
    found: list[Alert] = []

    def since(alert_id: str, dated: datetime | None) -> datetime:
        if dated is not None:
            return dated
        if state is not None:
            return state.first_seen(alert_id, as_of)
        return as_of

    for b in report.budgets:
        if b.status == "ok":
            continue
        rule = b.rule
        subject = f"budget {rule.label}"
        aid = f"budget:{rule.key}:{b.period}:{b.status.replace(' ', '-')}"
        fc = b.forecast
        details: dict[str, Any] = {
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
            interval = (
                f" ({fc.level:.0%}: {_money(fc.low_usd)} to {_money(fc.high_usd)}"
                + (f"; {b.p_over:.0%} chance of going over" if b.p_over is not None else "")
                + ")"
                if fc.low_usd is not None
                else " (no interval: " + (fc.note or "too little history") + ")"
            )
            text = (
                f"forecast {_money(fc.mean_usd)}{interval} for {b.period}, over "
                f"{_money(rule.usd)}; spent {_money(b.spent_usd)} so far"
            )
            amount = fc.mean_usd
            when = since(aid, None)
        else:
            text = (
                f"spent {_money(b.spent_usd)} of {_money(rule.usd)} ({b.used_percent}%) in "
                f"{b.period}"
            )
            if fc is not None and b.status == "near":
                text += f"; forecast {_money(fc.mean_usd)}"
            amount = b.spent_usd
            when = since(aid, crossings.get((rule.key, b.period)))
        found.append(Alert(aid, "budget", b.status, subject, text, amount, when, as_of, details))

    for a in report.anomalies:
        drivers = ", ".join(
            f"{d.dimension} {d.value} +{_money(d.excess_usd)}" for d in _main_drivers(a)
        )
        tasks = ", ".join(t for t, _ in a.top_tasks[:3])
        text = (
            f"spent {_money(a.actual_usd)}{' so far' if a.partial else ''} on {a.day}, "
            f"{_money(a.impact_usd)}"
            + (f" (+{a.impact_percent:,.0f}%)" if a.impact_percent is not None else "")
            + f" above its usual {_money(a.usual_usd)}"
            + (f"; made by {drivers}" if drivers else "")
            + f"; {a.tasks:,} tasks"
            + (f" (costliest: {tasks})" if tasks else "")
        )
        details = {
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
        day_start = datetime.combine(a.day, time(), UTC)
        found.append(
            Alert(
                a.key, "anomaly", "anomaly", a.scope, text, a.impact_usd, day_start, as_of, details
            )
        )

    x = report.expiry
    settings = report.settings.expiry
    if x is not None and x.base_expires_at is not None and x.days_to_expiry is not None:
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
        soon = x.days_to_expiry <= settings.warn_days
        if soon and x.unused_tokens >= max(1, settings.min_tokens):
            aid = f"expiry:{_iso(x.base_expires_at)}"
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
            found.append(
                Alert(
                    aid,
                    "expiry",
                    "expiring",
                    "base tokens",
                    text,
                    x.unused_usd,
                    since(aid, None),
                    as_of,
                    {
                        **base,
                        "unused_tokens": x.unused_tokens,
                        "unused_low": x.unused_low,
                        "unused_high": x.unused_high,
                        "p_unused": round(x.p_unused, 3),
                    },
                )
            )
        out = x.runs_out_on
        if out is not None and (out - as_of.date()).days <= settings.warn_days:
            aid = f"runout:{out:%Y-%m}"
            interval = (
                f" ({x.level:.0%}: {x.runs_out_low} to {x.runs_out_high})"
                if x.runs_out_low is not None and x.runs_out_high is not None
                else ""
            )
            text = (
                f"runs out around {out}{interval}, before its base tokens expire at "
                f"{x.base_expires_at:%Y-%m-%d}; {x.total_tokens:,} tokens left at "
                f"{_money(x.rate_usd_per_day)} a day"
            )
            found.append(
                Alert(
                    aid,
                    "runout",
                    "runs out",
                    "balance",
                    text,
                    Decimal(x.total_tokens) / 100,
                    since(aid, None),
                    as_of,
                    {
                        **base,
                        "runs_out_on": out,
                        "runs_out_low": x.runs_out_low,
                        "runs_out_high": x.runs_out_high,
                        "p_runs_out": round(x.p_runs_out, 3),
                    },
                )
            )
    found.sort(key=lambda a: (_RANK.get(a.state, 9), -(a.amount_usd or Decimal(0)), a.id))
    return found


def _main_drivers(a: Any) -> list[Any]:
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


# ------------------------------------------------------------------------------------ html


def alerts_html(alerts: Sequence[Alert], *, as_of: datetime, notes: Sequence[str] = ()) -> str:
    """The alerts as an HTML block (inline styles: it stands alone in a notebook or a report)."""
    colour = {
        "over": "#fdd",
        "runs out": "#fdd",
        "forecast over": "#fdd",
        "anomaly": "#ffe0cc",
        "expiring": "#ffe9b3",
        "near": "#ffe9b3",
    }
    head = (
        f'<div class="songlab-alerts" style="margin:0.5em 0 1em">'
        f'<p style="margin:0 0 0.3em;font-weight:bold">Alerts as of '
        f"{as_of:%Y-%m-%d %H:%M:%S} UTC</p>"
    )
    if not alerts:
        body = '<p style="margin:0;padding:0.3em 0.6em;background:#e3f5e3">No active alerts.</p>'
    else:
        items = "".join(
            f'<li style="background:{colour.get(a.state, "#eee")};padding:0.25em 0.6em;'
            f'margin:0.15em 0;list-style:none"><b>{html.escape(a.state.upper())}</b> '
            f"{html.escape(a.subject)}: {html.escape(a.text)}; since "
            f"{a.since:%Y-%m-%d %H:%M} UTC</li>"
            for a in alerts
        )
        body = f'<ul style="margin:0;padding:0">{items}</ul>'
    extra = "".join(
        f'<p style="margin:0.2em 0;color:#666;font-size:0.85em">{html.escape(n)}</p>' for n in notes
    )
    return head + body + extra + "</div>"


# ----------------------------------------------------------------------------------- state


class AlertState:
    """What ``--check`` remembers between runs, in a private JSON file: when each alert was first
    seen, and when it was delivered to the webhook. Use as a context manager: the file is locked
    (so two overlapping runs cannot both send an alert) and saved whole on the way out."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._entries: dict[str, dict[str, Any]] = {}
        self._lock: Any = None
        self._loaded = False

    def __enter__(self) -> AlertState:
        from songlab.localfiles import private_dir

        private_dir(self.path.parent)
        self._lock = _lock(self.path.with_name(self.path.name + ".lock"))
        self._lock.__enter__()
        try:
            self._load()
        except BaseException:
            self._lock.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            if self._loaded:
                self.save()
        finally:
            self._lock.__exit__(*exc)

    def _load(self) -> None:
        from songlab.localfiles import check_private

        if not self.path.exists():
            self._loaded = True
            return
        check_private(self.path, what="alert state file")
        try:
            doc = json.loads(self.path.read_text(encoding="utf-8"))
            entries = doc["alerts"]
            if doc.get("version") != STATE_VERSION or not isinstance(entries, dict):
                raise ValueError("unknown layout")
        except (ValueError, KeyError, TypeError) as exc:
            # never start afresh over it: every alert would be sent again
            raise ValueError(
                f"alert state {self.path}: not a songlab alert state file ({exc}); move it "
                "aside to start afresh (every active alert is then sent again)"
            ) from None
        self._entries = {str(k): dict(v) for k, v in entries.items()}
        self._loaded = True

    def save(self) -> None:
        from songlab.localfiles import write_atomic

        doc = {"version": STATE_VERSION, "alerts": self._entries}
        write_atomic(self.path, json.dumps(doc, indent=1, sort_keys=True) + "\n")

    def first_seen(self, alert_id: str, now: datetime) -> datetime:
        """When ``alert_id`` was first seen (recorded now if it is new)."""
        entry = self._entries.setdefault(alert_id, {"first_seen": _iso(now)})
        seen = entry.setdefault("first_seen", _iso(now))
        return datetime.fromisoformat(str(seen).replace("Z", "+00:00"))

    def seen(self, alerts: Sequence[Alert]) -> None:
        for a in alerts:
            self._entries.setdefault(a.id, {}).setdefault("first_seen", _iso(a.since))

    def sent(self, alert_id: str) -> bool:
        return bool(self._entries.get(alert_id, {}).get("sent_at"))

    def mark_sent(self, alert_id: str, at: datetime) -> None:
        entry = self._entries.setdefault(alert_id, {"first_seen": _iso(at)})
        entry["sent_at"] = _iso(at)
        entry.pop("last_error", None)
        self.save()  # at once: a crash after this must not send it again

    def mark_failed(self, alert_id: str, reason: str) -> None:
        entry = self._entries.setdefault(alert_id, {})
        entry["attempts"] = int(entry.get("attempts", 0)) + 1
        entry["last_error"] = reason

    def entry(self, alert_id: str) -> dict[str, Any]:
        return dict(self._entries.get(alert_id, {}))


@contextlib.contextmanager
def _lock(path: Path) -> Iterator[None]:
    """An exclusive lock on ``path`` (POSIX ``flock``; elsewhere none)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


# --------------------------------------------------------------------------------- deliver


@dataclass
class Delivery:
    """What a webhook run did: ids delivered now, already delivered before, still failing."""

    sent: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)  # (id, reason)


def redact_url(url: str) -> str:
    """``https://hooks.example.com/...``: the scheme and host only (the path may be a token)."""
    parts = urlsplit(url)
    host = parts.hostname or "?"
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}/..."


def check_url(url: str) -> str:
    """``url`` if it is an http(s) URL with a host, else a ValueError naming the rule (and not
    the URL, which may hold a token)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("webhook: an http:// or https:// URL with a host")
    return url


def deliver(
    alerts: Sequence[Alert],
    url: str,
    state: AlertState,
    *,
    attempts: int = 4,
    backoff: float = 0.5,
    timeout: float = 10.0,
    transport: Any = None,
    sleep: Callable[[float], None] = _time.sleep,
) -> Delivery:
    """POST each alert not delivered yet to ``url`` (one JSON object per request), retrying a
    failed one up to ``attempts`` times with growing waits; record each delivery in ``state``."""
    import httpx

    check_url(url)
    out = Delivery()
    with httpx.Client(timeout=timeout, transport=transport, follow_redirects=False) as http:
        for a in alerts:
            if state.sent(a.id):
                out.skipped.append(a.id)
                continue
            reason = _post(http, url, a, attempts=attempts, backoff=backoff, sleep=sleep)
            if reason is None:
                state.mark_sent(a.id, datetime.now(UTC))
                out.sent.append(a.id)
            else:
                state.mark_failed(a.id, reason)
                out.failed.append((a.id, reason))
    return out


def _post(
    http: Any,
    url: str,
    a: Alert,
    *,
    attempts: int,
    backoff: float,
    sleep: Callable[[float], None],
) -> str | None:
    """None once delivered, else why not (the URL never in it)."""
    import httpx

    body = json.dumps(a.to_json(), sort_keys=True).encode()
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "songlab-alerts",
        "Idempotency-Key": hashlib.sha256(a.id.encode()).hexdigest()[:32],
    }
    reason = "not sent"
    for attempt in range(max(1, attempts)):
        wait = backoff * (2**attempt)
        try:
            r = http.post(url, content=body, headers=headers)
        except httpx.HTTPError as exc:
            reason = f"{type(exc).__name__} from {redact_url(url)}"
        else:
            if 200 <= r.status_code < 300:
                return None
            reason = f"HTTP {r.status_code} from {redact_url(url)}"
            if r.status_code not in RETRY_STATUS:
                return reason  # the receiver refuses it: the next run tries again
            after = r.headers.get("Retry-After")
            if after is not None and after.strip().isdigit():
                wait = min(30.0, float(after))
        if attempt < attempts - 1:
            sleep(wait)
    return reason
