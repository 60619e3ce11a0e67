"""Alerts delivered to a webhook: one JSON POST per alert, once per state, retried on failure.

:func:`deliver` POSTs each alert not delivered yet, one request per alert, retrying a failed
one (connection errors, timeouts, 408, 425, 429 and 5xx; ``Retry-After`` honoured) with
growing waits; a delivered alert is written to the state file at once
(``songlab.ledger.alert_state``), so neither a crash nor a second run sends it again, and one
that still fails is left for the next run. Each request carries ``Idempotency-Key`` (from the
id), so a receiver can drop a repeat should the state file be lost. The URL is a secret (a
chat webhook's path is its token): messages name its host only.
"""

from __future__ import annotations

import hashlib
import json
import time as _time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    import httpx
from urllib.parse import urlsplit

from songlab.ledger.alert_state import AlertState
from songlab.ledger.alerts import Alert
from songlab.ledger.safe_text import printable_json

__all__ = ["Delivery", "MAX_URL", "RETRY_STATUS", "check_url", "deliver", "redact_url"]

RETRY_STATUS: Final[frozenset[int]] = frozenset({408, 425, 429, 500, 502, 503, 504})
MAX_URL: Final[int] = 2048


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
    """``url`` if a webhook can be sent to it, else a ``ValueError`` naming the rule it breaks
    (and never the URL, which may hold a token): text of at most ``MAX_URL`` characters with no
    space or control character, ``http://`` or ``https://``, a host (a name or an IP address
    httpx accepts), a port from 1 to 65535 if one is given. Checked before anything is read
    or sent, so a run never finds it out after printing its alerts."""
    if not isinstance(url, str) or not url:
        raise ValueError("webhook: an http:// or https:// URL with a host")
    if len(url) > MAX_URL:
        raise ValueError(f"webhook: a URL of at most {MAX_URL:,} characters")
    if any(ch.isspace() or not ch.isprintable() for ch in url):
        raise ValueError("webhook: a URL without spaces or control characters")
    try:
        parts = urlsplit(url)
    except ValueError:  # an unclosed [IPv6 address
        raise ValueError("webhook: a URL with a host: a name or an IP address") from None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise ValueError("webhook: an http:// or https:// URL with a host")
    try:
        port = parts.port
    except ValueError:
        raise ValueError("webhook: a port is a number from 1 to 65535") from None
    if port is not None and not 1 <= port <= 65535:
        raise ValueError(f"webhook: a port is a number from 1 to 65535, got {port}")
    import httpx

    try:
        host = httpx.URL(url).host  # as httpx will send to it: IDNA, IPv6 brackets, ...
    except (httpx.InvalidURL, ValueError):
        host = ""
    if not host:
        raise ValueError("webhook: a URL whose host httpx can send to (a name or an IP address)")
    return url


def deliver(
    alerts: Sequence[Alert],
    url: str,
    state: AlertState,
    *,
    attempts: int = 4,
    backoff: float = 0.5,
    timeout: float = 10.0,
    transport: httpx.BaseTransport | None = None,
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
    http: httpx.Client,
    url: str,
    a: Alert,
    *,
    attempts: int,
    backoff: float,
    sleep: Callable[[float], None],
) -> str | None:
    """None once delivered, else why not (the URL never in it)."""
    import httpx

    # every string of the body with its control characters escaped: a chat shows ``text`` as is
    body = json.dumps(printable_json(a.to_json()), sort_keys=True).encode()
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
