"""Retry rules as pure predicates: what is retried, how long we wait, when we stop."""

from __future__ import annotations

import json
import random

import httpx
import pytest

from songlab.client import RetryPolicy, error_from_response
from songlab.client._retry import (
    BACKOFF_BASE_S,
    BACKOFF_CAP_S,
    MAX_ATTEMPTS,
    MAX_TOTAL_S,
    backoff_delay,
    is_retryable,
    next_delay,
)


def err(code, status, retryable=None):
    body = {"error": code}
    if retryable is not None:
        body |= {"message": "m", "retryable": retryable}
    return error_from_response(status, json.dumps(body).encode())


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (err("RateLimited", 429, True), True),
        (err("DependencyUnavailable", 503, True), True),
        (err("UnknownTool", 400, False), False),
        (err("InsufficientFunds", 402, False), False),
        (err("ToolNotPriced", 422, False), False),
        (err("InvalidGenerationInput", 422, False), False),
        (err("NOT_FOUND", 404), False),
        (err("INVALID_API_KEY", 401), False),
        (err("Weird", 500), False),
        (httpx.ConnectError("refused"), True),
        (httpx.ReadError("reset"), True),
        (httpx.ReadTimeout("slow"), True),
        (httpx.RemoteProtocolError("eof"), True),
        (httpx.UnsupportedProtocol("ftp"), False),
        (ValueError("x"), False),
    ],
    ids=lambda v: type(v).__name__ if not isinstance(v, bool) else str(v),
)
def test_is_retryable(exc, expected):
    assert is_retryable(exc) is expected


def test_a_retryable_code_marked_false_by_the_body_is_not_retried():
    assert is_retryable(err("RateLimited", 429, False)) is False


def test_constants_are_bounded():
    assert 1 < MAX_ATTEMPTS <= 10 and 0 < BACKOFF_BASE_S < BACKOFF_CAP_S and MAX_TOTAL_S > 0


def test_full_jitter_stays_under_the_exponential_ceiling():
    policy = RetryPolicy(base_s=0.5, cap_s=4.0)
    rng = random.Random(7)
    for attempt in range(8):
        ceiling = min(4.0, 0.5 * 2 ** attempt)
        draws = [backoff_delay(attempt, policy, rng) for _ in range(200)]
        assert all(0.0 <= d <= ceiling for d in draws)
        assert max(draws) > ceiling * 0.8  # full jitter spans the range
        assert min(draws) < ceiling * 0.2


def test_next_delay_gives_up_after_max_attempts():
    policy = RetryPolicy(max_attempts=3, base_s=0.01, cap_s=0.01)
    e = err("RateLimited", 429, True)
    assert next_delay(e, 1, 0.0, policy) is not None
    assert next_delay(e, 2, 0.0, policy) is not None
    assert next_delay(e, 3, 0.0, policy) is None


def test_next_delay_gives_up_past_total_time():
    policy = RetryPolicy(max_attempts=10, base_s=1.0, cap_s=1.0, max_total_s=2.0)
    rng = random.Random(1)
    e = httpx.ConnectError("refused")
    assert next_delay(e, 1, 0.5, policy, rng) is not None
    assert all(next_delay(e, 1, 2.0001, policy, random.Random(s)) is None for s in range(20))


def test_next_delay_never_retries_a_final_error():
    assert next_delay(err("InsufficientFunds", 402, False), 1, 0.0, RetryPolicy()) is None


@pytest.mark.parametrize("kwargs", [{"max_attempts": 0}, {"base_s": -1}, {"max_total_s": -1}])
def test_policy_validates(kwargs):
    with pytest.raises(ValueError):
        RetryPolicy(**kwargs)


def test_never_policy_tries_once():
    assert next_delay(httpx.ConnectError("x"), 1, 0.0, RetryPolicy.never()) is None
