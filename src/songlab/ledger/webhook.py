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
from typing import Any, Final
from urllib.parse import urlsplit

from songlab.ledger.alert_state import AlertState
from songlab.ledger.alerts import Alert
from songlab.ledger.safe_text import printable_json

__all__ = ["Delivery", "RETRY_STATUS", "check_url", "deliver", "redact_url"]

RETRY_STATUS: Final[frozenset[int]] = frozenset({408, 425, 429, 500, 502, 503, 504})


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
