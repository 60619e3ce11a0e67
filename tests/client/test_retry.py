"""Retry rules as pure functions: what is retried per kind of call, how long, and what is raised."""

from __future__ import annotations

import email.utils
import json
import random

import httpx
import pytest

from songlab.client import (
    APIConnectionError,
    APITimeoutError,
    CreateUnconfirmed,
    RateLimited,
    RetryPolicy,
    UnexpectedResponse,
    WaitTimeout,
    error_from_response,
)
from songlab.client._retry import (
    BACKOFF_BASE_S,
    BACKOFF_CAP_S,
    CREATE_DEADLINE_S,
    MAX_TOTAL_S,
    CallKind,
    Retrier,
    backoff_delay,
    is_retryable,
    retry_after_s,
)

READ, CREATE, UPLOAD = CallKind.READ, CallKind.CREATE, CallKind.UPLOAD
HTML = b"<html><body><h1>502 Bad Gateway</h1></body></html>"


def err(code, status, retryable=None):
    body = {"error": code}
    if retryable is not None:
        body |= {"message": "m", "retryable": retryable}
    return error_from_response(status, json.dumps(body).encode())


def page(status, content=HTML):
    return error_from_response(status, content)


@pytest.mark.parametrize(
    ("exc", "read", "create", "upload"),
    [
        (err("RateLimited", 429, True), True, True, True),
        (err("DependencyUnavailable", 503, True), True, True, True),
        (err("DependencyUnavailable", 503, False), False, False, False),  # the body decides
        (err("UnknownTool", 400, False), False, False, False),
        (err("InsufficientFunds", 402, False), False, False, False),
        (err("InvalidGenerationInput", 422, False), False, False, False),
        (err("NOT_FOUND", 404), False, False, False),
        (err("FORBIDDEN", 403), False, False, False),
        (err("INVALID_API_KEY", 401), False, False, False),
        (page(502), True, True, False),
        (page(503), True, True, False),
        (page(504), True, True, False),
        (page(500, b"Internal Server Error"), True, True, False),
        (page(500, b'{"error": "Weird"}'), True, True, False),
        (page(429, b"slow down"), True, True, False),
        (page(404, b"<html>not here</html>"), False, False, False),
        (page(400, b""), False, False, False),
        (httpx.ConnectError("refused"), True, True, True),
        (httpx.ConnectTimeout("slow connect"), True, True, True),
        (httpx.ReadError("reset"), True, True, False),
        (httpx.WriteError("reset"), True, True, False),
        (httpx.ReadTimeout("slow"), True, True, False),
        (httpx.RemoteProtocolError("eof mid-body"), True, True, False),
        (httpx.UnsupportedProtocol("ftp"), False, False, False),
        (ValueError("x"), False, False, False),
    ],
    ids=lambda v: (
        v
        if isinstance(v, bool)
        else f"{type(v).__name__}{'-' + str(v.status_code) if hasattr(v, 'status_code') else ''}"
    ),
)
def test_what_each_kind_of_call_retries(exc, read, create, upload):
    assert (is_retryable(exc, READ), is_retryable(exc, CREATE), is_retryable(exc, UPLOAD)) == (
        read,
        create,
        upload,
    )


def test_constants_are_sane():
    assert 0 < BACKOFF_BASE_S < BACKOFF_CAP_S <= 10
    assert MAX_TOTAL_S >= 30 and CREATE_DEADLINE_S >= 30
    assert RetryPolicy().max_attempts is None  # deadlines, not counts, end the retries


def test_full_jitter_stays_under_the_capped_exponential_ceiling():
    policy = RetryPolicy(base_s=0.5, cap_s=4.0)
    rng = random.Random(7)
    for attempt in range(12):
        ceiling = min(4.0, 0.5 * 2**attempt)
        draws = [backoff_delay(attempt, policy, rng) for _ in range(200)]
        assert all(0.0 <= d <= ceiling for d in draws)
        assert max(draws) > ceiling * 0.8 and min(draws) < ceiling * 0.2


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("3", 3.0),
        (" 1.5 ", 1.5),
        ("0", 0.0),
        ("-4", 0.0),
        ("soon", None),
        ("", None),
        ("inf", None),
        ("nan", None),
    ],
)
def test_retry_after_seconds(value, expected):
    assert retry_after_s({"retry-after": value}) == expected


def test_retry_after_http_date():
    now = 1_800_000_000.0
    header = email.utils.formatdate(now + 7, usegmt=True)
    assert retry_after_s({"retry-after": header}, now=now) == pytest.approx(7.0)
    past = email.utils.formatdate(now - 100, usegmt=True)
    assert retry_after_s({"retry-after": past}, now=now) == 0.0
    assert retry_after_s({}) is None and retry_after_s(None) is None


def retrier(kind=READ, now=0.0, key=None, **policy):
    return Retrier(
        kind,
        RetryPolicy(**{"base_s": 0.1, "cap_s": 0.4, **policy}),
        random.Random(1),
        now=now,
        describe=("GET", "/v1/x"),
        key=key,
    )


def test_reads_retry_until_their_deadline_not_a_count():
    r = retrier(max_total_s=10.0)
    t = 0.0
    for _ in range(40):  # far more than any fixed attempt count
        t += r.on_error(httpx.ConnectError("refused"), t)
    assert t < 10.0
    with pytest.raises(APIConnectionError) as info:
        while True:
            t += r.on_error(httpx.ConnectError("refused"), t)
    assert t < 10.0 and "ConnectError" in str(info.value)
    assert isinstance(info.value.__cause__, httpx.ConnectError)


def test_a_timeout_becomes_api_timeout_error():
    r = retrier(max_attempts=1)
    with pytest.raises(APITimeoutError):
        r.on_error(httpx.ReadTimeout("slow"), 0.0)


def test_an_undecodable_body_is_a_songlab_error_not_an_httpx_one():
    with pytest.raises(APIConnectionError) as info:
        retrier().on_error(httpx.DecodingError("bad gzip"), 0.0)
    assert "DecodingError" in str(info.value)


def test_max_attempts_still_bounds_when_set():
    r = retrier(max_attempts=3)
    r.on_error(page(502), 0.0)
    r.on_error(page(502), 0.0)
    with pytest.raises(UnexpectedResponse):
        r.on_error(page(502), 0.0)
    assert r.attempts == 3


def test_retry_after_is_honoured_and_never_outlives_the_deadline():
    r = retrier(max_total_s=30.0)
    e = page(503)
    e.retry_after_s = 5.0
    assert r.on_error(e, 0.0) == 5.0
    e.retry_after_s = 60.0  # would end past the deadline: give up now, not after a useless sleep
    with pytest.raises(UnexpectedResponse):
        r.on_error(e, 1.0)


def test_a_final_answer_is_raised_at_once_even_with_retry_after():
    r = retrier()
    e = err("INVALID_API_KEY", 401)
    e.retry_after_s = 1.0
    with pytest.raises(type(e)):
        r.on_error(e, 0.0)
    assert r.attempts == 1


def test_the_callers_deadline_replaces_the_error():
    r = Retrier(
        READ,
        RetryPolicy(base_s=1.0, cap_s=1.0),
        random.Random(3),
        now=0.0,
        describe=("GET", "/v1/generations/t"),
        deadline=0.5,
        expired=lambda: WaitTimeout("t", 0.5, "processing"),
    )
    with pytest.raises(WaitTimeout) as info:
        for _ in range(50):
            r.on_error(httpx.ConnectError("refused"), 0.49)
    assert info.value.task_id == "t"


def test_create_gives_up_at_its_deadline_with_the_key_and_how_to_resume():
    r = retrier(CREATE, key="songlab:abc", create_deadline_s=5.0, max_total_s=999)
    t = 0.0
    with pytest.raises(CreateUnconfirmed) as info:
        while True:
            t += r.on_error(httpx.ReadError("reset"), t)
    e = info.value
    assert t < 5.0 and e.idempotency_key == "songlab:abc" and e.attempts == r.attempts
    assert "idempotency_key='songlab:abc'" in str(e) and isinstance(e, APIConnectionError)


def test_a_create_refused_by_a_spec_body_every_time_raises_that_refusal_with_the_key():
    r = retrier(CREATE, key="k1", create_deadline_s=1.0)
    with pytest.raises(RateLimited) as info:
        t = 0.0
        while True:
            t += r.on_error(err("RateLimited", 429, True), t)
    assert info.value.idempotency_key == "k1"


def test_a_create_that_may_have_landed_stays_unconfirmed_even_if_the_last_answer_was_429():
    r = retrier(CREATE, key="k2", max_attempts=2)
    r.on_error(httpx.ReadTimeout("slow"), 0.0)
    with pytest.raises(CreateUnconfirmed) as info:
        r.on_error(err("RateLimited", 429, True), 0.1)
    assert isinstance(info.value.__cause__, RateLimited)


def test_an_upload_is_never_repeated_after_it_may_have_been_stored():
    r = retrier(UPLOAD)
    assert r.on_error(httpx.ConnectError("refused"), 0.0) >= 0.0
    with pytest.raises(APIConnectionError):
        r.on_error(httpx.ReadError("reset after sending"), 0.1)
    with pytest.raises(UnexpectedResponse):
        retrier(UPLOAD).on_error(page(502), 0.0)


@pytest.mark.parametrize(
    "kwargs",
    [{"max_attempts": 0}, {"base_s": -1}, {"max_total_s": -1}, {"create_deadline_s": float("nan")}],
)
def test_policy_validates(kwargs):
    with pytest.raises(ValueError):
        RetryPolicy(**kwargs)


def test_never_policy_tries_once():
    with pytest.raises(APIConnectionError):
        Retrier(
            READ,
            RetryPolicy.never(),
            random.Random(),
            now=0.0,
            describe=("GET", "/"),
        ).on_error(httpx.ConnectError("x"), 0.0)
