"""Retry rules: module constants and pure functions, tested without a server.

Every request belongs to one :class:`CallKind`, and the kind decides what may
be repeated:

- ``READ`` (every GET, streams included): repeated after any transport failure
  (connection refused or reset, timeouts, a body cut short), after an answer the
  spec marks ``retryable``, and after a gateway answer (408, 429, 500, 502, 503,
  504 whose body is *not* the spec's JSON error, e.g. a load balancer's HTML page).
- ``CREATE``: the same failures, always under the create's one Idempotency-Key,
  so a repeat can never bill twice and a create whose answer was lost returns the
  original task.
- ``UPLOAD`` (``POST /v1/files``, which has no Idempotency-Key): repeated only
  where the request provably never reached the server (connect errors) or the
  service's own body says ``retryable`` (nothing was stored); never after a
  reset, a timeout or a gateway answer, which may follow a stored upload.

A spec body decides first: ``{"error": ..., "retryable": false}`` is final
whatever the status or headers say. Then ``Retry-After`` (seconds or an HTTP
date) is honoured where a server sends one. Backoff is capped exponential
with full jitter. What ends the retries is a *deadline* (a read's own, the
wait's, or the create deadline), and ``max_attempts`` if one is set.
:class:`Retrier` is the per-request bookkeeping both senders share.
"""

from __future__ import annotations

import email.utils
import enum
import math
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final

import httpx

from songlab.client._exceptions import (
    APIConnectionError,
    APIError,
    APITimeoutError,
    CreateUnconfirmed,
    SonglabError,
    UnexpectedResponse,
)
from songlab.client._redact import scrub_exception
from songlab.spec import RETRYABLE_CODES

__all__ = [
    "BACKOFF_BASE_S",
    "BACKOFF_CAP_S",
    "CONNECT_ERRORS",
    "CREATE_DEADLINE_S",
    "CallKind",
    "GATEWAY_STATUSES",
    "MAX_TOTAL_S",
    "RETRYABLE_TRANSPORT_ERRORS",
    "Retrier",
    "RetryPolicy",
    "backoff_delay",
    "is_retryable",
    "retry_after_s",
]

BACKOFF_BASE_S: Final = 0.25
BACKOFF_CAP_S: Final = 4.0
MAX_TOTAL_S: Final = 60.0  # how long one read keeps trying (wait() uses its own timeout)
CREATE_DEADLINE_S: Final = 60.0  # how long one create keeps trying under its key
# Answers a gateway or proxy gives when the service behind it is away; retried
# unless the body is a spec error that says otherwise.
GATEWAY_STATUSES: Final = frozenset({408, 429, 500, 502, 503, 504})
# Every transport failure: connect, read, write, pool and protocol errors, and
# timeouts. (httpx.TransportError also covers UnsupportedProtocol and ProxyError,
# which no retry can fix; they are excluded.)
RETRYABLE_TRANSPORT_ERRORS: Final[tuple[type[Exception], ...]] = (
    httpx.TimeoutException,
    httpx.NetworkError,
    httpx.RemoteProtocolError,
)
# Failures before a byte of the request left: the server never saw it.
CONNECT_ERRORS: Final[tuple[type[Exception], ...]] = (
    httpx.ConnectError,
    httpx.ConnectTimeout,
    httpx.PoolTimeout,
)


class CallKind(enum.Enum):
    READ = "read"
    CREATE = "create"
    UPLOAD = "upload"


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """``max_attempts`` (None: only deadlines bound the retries), backoff ``base_s`` doubling
    to ``cap_s`` with full jitter, ``max_total_s`` per read, ``create_deadline_s`` per create."""

    max_attempts: int | None = None
    base_s: float = BACKOFF_BASE_S
    cap_s: float = BACKOFF_CAP_S
    max_total_s: float = MAX_TOTAL_S
    create_deadline_s: float = CREATE_DEADLINE_S

    def __post_init__(self) -> None:
        if self.max_attempts is not None and self.max_attempts < 1:
            raise ValueError("max_attempts: must be >= 1 or None")
        for name in ("base_s", "cap_s", "max_total_s", "create_deadline_s"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and math.isfinite(value) and value >= 0):
                raise ValueError(f"{name}: must be a finite number >= 0")

    @classmethod
    def never(cls) -> RetryPolicy:
        return cls(max_attempts=1)

    def deadline_s(self, kind: CallKind) -> float:
        return self.create_deadline_s if kind is CallKind.CREATE else self.max_total_s


def is_retryable(exc: BaseException, kind: CallKind = CallKind.READ) -> bool:
    """May a request of ``kind`` that failed with ``exc`` be sent again unchanged?"""
    if isinstance(exc, UnexpectedResponse):  # no spec body: a gateway's or proxy's answer
        return kind is not CallKind.UPLOAD and exc.status_code in GATEWAY_STATUSES
    if isinstance(exc, APIError):  # the spec's body decides
        return exc.retryable and exc.code in RETRYABLE_CODES
    if kind is CallKind.UPLOAD:
        return isinstance(exc, CONNECT_ERRORS)
    return isinstance(exc, RETRYABLE_TRANSPORT_ERRORS)


def retry_after_s(headers: Mapping[str, str] | None, now: float | None = None) -> float | None:
    """Seconds a ``Retry-After`` header asks for (delta-seconds or an HTTP date), else None."""
    value = (headers or {}).get("retry-after")
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError, OverflowError):
            return None
        if when.tzinfo is None:
            return None
        seconds = when.timestamp() - (time.time() if now is None else now)
    if not math.isfinite(seconds):
        return None
    return max(0.0, seconds)


def backoff_delay(attempt: int, policy: RetryPolicy, rng: random.Random | None = None) -> float:
    """Full jitter: uniform in [0, min(cap, base * 2**attempt)] for retry number ``attempt``
    (0 for the first retry)."""
    ceiling = min(policy.cap_s, policy.base_s * (2.0 ** min(attempt, 60)))
    return (rng or random.Random()).uniform(0.0, ceiling)


class Retrier:
    """The retry bookkeeping of one request: attempts, deadline, backoff.

    ``on_error(exc, now)`` returns the sleep before the next attempt, or raises
    the songlab error to show the caller (transport errors become
    :class:`APIConnectionError`; a create whose outcome is unknown at its
    deadline becomes :class:`CreateUnconfirmed`, carrying its key). ``expired``
    (a factory) replaces the error when the caller's own deadline ended the
    retries (``wait()`` raises :class:`WaitTimeout` then).
    """

    __slots__ = (
        "attempts",
        "deadline",
        "describe",
        "expired",
        "key",
        "kind",
        "policy",
        "rng",
        "uncertain",
    )

    def __init__(
        self,
        kind: CallKind,
        policy: RetryPolicy,
        rng: random.Random,
        *,
        now: float,
        describe: tuple[str, str],
        key: str | None = None,
        deadline: float | None = None,
        expired: Callable[[], SonglabError] | None = None,
    ) -> None:
        self.kind = kind
        self.policy = policy
        self.rng = rng
        self.deadline = now + policy.deadline_s(kind) if deadline is None else deadline
        self.describe = describe  # (method, loggable path)
        self.key = key
        self.expired = expired
        self.attempts = 0
        self.uncertain = False  # a create attempt may have reached the service

    def on_error(self, exc: BaseException, now: float) -> float:
        self.attempts += 1
        if isinstance(exc, UnexpectedResponse) or not isinstance(exc, (APIError, *CONNECT_ERRORS)):
            self.uncertain = True  # a reset, a timeout or a gateway: it may have been accepted
        if not is_retryable(exc, self.kind):
            raise self._final(exc, deadline_spent=False)
        if self.policy.max_attempts is not None and self.attempts >= self.policy.max_attempts:
            raise self._final(exc, deadline_spent=False)
        delay = backoff_delay(self.attempts - 1, self.policy, self.rng)
        asked = exc.retry_after_s if isinstance(exc, APIError) else None
        if asked is not None:
            delay = max(delay, asked)
        if now + delay >= self.deadline:
            raise self._final(exc, deadline_spent=True)
        return delay

    def _final(self, exc: BaseException, *, deadline_spent: bool) -> BaseException:
        method, path = self.describe
        if deadline_spent and self.expired is not None:
            err: BaseException = self.expired()
        elif (
            self.kind is CallKind.CREATE
            and self.key is not None
            and is_retryable(exc, self.kind)
            and (self.uncertain or not isinstance(exc, APIError))
        ):
            err = CreateUnconfirmed(
                _describe(exc),
                method=method,
                path=path,
                idempotency_key=self.key,
                attempts=self.attempts,
            )
        elif isinstance(exc, SonglabError):
            err = exc
        elif isinstance(exc, httpx.RequestError):  # transport, undecodable body, redirects
            cls = APITimeoutError if isinstance(exc, httpx.TimeoutException) else APIConnectionError
            err = cls(_describe(exc), method=method, path=path)
        else:
            return exc
        if self.key is not None and isinstance(err, APIError | APIConnectionError):
            err.idempotency_key = self.key
        if err is not exc and err.__cause__ is None:
            err.__cause__ = scrub_exception(exc)  # the cause keeps no request headers
        return err


def _describe(exc: BaseException) -> str:
    if isinstance(exc, APIError):
        return f"{exc.code or 'HTTP'} [{exc.status_code}]"
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
