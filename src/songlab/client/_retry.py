"""Retry rules: module constants and pure predicates, tested without a server.

What is retried: an error body that says ``retryable: true`` (the spec's
RateLimited and DependencyUnavailable) and transport failures. Nothing else.
Creates are retried with the same ``Idempotency-Key`` every time, so a retry can
never bill twice and a create whose answer was lost returns the original task.
Backoff is exponential with full jitter (delay drawn in [0, min(cap, base*2**n)]),
bounded both by attempts and by total time.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import httpx

from songlab._vocab import RETRYABLE_CODES
from songlab.client._errors import APIError

__all__ = [
    "BACKOFF_BASE_S",
    "BACKOFF_CAP_S",
    "MAX_ATTEMPTS",
    "MAX_TOTAL_S",
    "RETRYABLE_TRANSPORT_ERRORS",
    "RetryPolicy",
    "backoff_delay",
    "is_retryable",
    "next_delay",
]

MAX_ATTEMPTS = 5  # first try included
BACKOFF_BASE_S = 0.25
BACKOFF_CAP_S = 8.0
MAX_TOTAL_S = 60.0
# Every transport failure: connect, read, write, pool and protocol errors, and
# timeouts. (httpx.TransportError also covers UnsupportedProtocol and ProxyError,
# which no retry can fix; they are excluded.)
RETRYABLE_TRANSPORT_ERRORS: tuple[type[Exception], ...] = (
    httpx.TimeoutException,
    httpx.NetworkError,
    httpx.RemoteProtocolError,
)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    max_attempts: int = MAX_ATTEMPTS
    base_s: float = BACKOFF_BASE_S
    cap_s: float = BACKOFF_CAP_S
    max_total_s: float = MAX_TOTAL_S

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("max_attempts: must be >= 1")
        if self.base_s < 0 or self.cap_s < 0 or self.max_total_s < 0:
            raise ValueError("base_s, cap_s, max_total_s: must be >= 0")

    @classmethod
    def never(cls) -> RetryPolicy:
        return cls(max_attempts=1)


def is_retryable(exc: BaseException) -> bool:
    """True for an error body marked retryable (RateLimited, DependencyUnavailable)
    and for transport failures; False for everything else."""
    if isinstance(exc, APIError):
        return exc.retryable and exc.code in RETRYABLE_CODES
    return isinstance(exc, RETRYABLE_TRANSPORT_ERRORS)


def backoff_delay(attempt: int, policy: RetryPolicy, rng: random.Random | None = None) -> float:
    """Full jitter: uniform in [0, min(cap, base * 2**attempt)] for retry number ``attempt``
    (0 for the first retry)."""
    ceiling = min(policy.cap_s, policy.base_s * (2.0 ** attempt))
    return (rng or random).uniform(0.0, ceiling)


def next_delay(
    exc: BaseException,
    attempts_made: int,
    elapsed_s: float,
    policy: RetryPolicy,
    rng: random.Random | None = None,
) -> float | None:
    """The sleep before the next attempt, or None to give up (raise ``exc``).

    Gives up when ``exc`` is not retryable, when ``attempts_made`` reached
    ``max_attempts``, or when the sleep would end past ``max_total_s``.
    """
    if not is_retryable(exc) or attempts_made >= policy.max_attempts:
        return None
    delay = backoff_delay(attempts_made - 1, policy, rng)
    if elapsed_s + delay > policy.max_total_s:
        return None
    return delay
