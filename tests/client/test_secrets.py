"""The API key never appears in a repr, a log record, an exception text or a traceback."""

from __future__ import annotations

import logging
import traceback

import httpx
import pytest

from songlab.client import APIError, Client, SonglabError
from tests.client.fakes import API_KEY, BASE, FAST_RETRY


def exercise(client, fake):
    """Every kind of call, including failures, retries and a stream."""
    errors: list[BaseException] = []
    fake.fail_next(
        "/v1/generations", 429, {"error": "RateLimited", "message": "m", "retryable": True}
    )
    h = client.generations.create(tool_id="t-song-v5", payload={"prompt": "x"})
    client.generations.get(h.task_id)
    for call in (
        lambda: client.generations.get("absent"),
        lambda: client.generations.get("foreign"),
        lambda: client.files.link("nope"),
        lambda: client.voice_clones.create(
            reference_file_id="f", consent=False, rights_attestation="r"
        ),
    ):
        try:
            call()
        except SonglabError as e:
            errors.append(e)
    fake.fail_next("/v1/account/balance", None, times=9)
    try:
        client.account.balance()
    except SonglabError as e:
        errors.append(e)
    return h, errors


def test_key_never_leaks(fake, caplog):
    caplog.set_level(logging.DEBUG)
    client = Client(API_KEY, base_url=BASE, transport=httpx.MockTransport(fake), retry=FAST_RETRY)
    client._sleep = lambda s: None
    h, errors = exercise(client, fake)
    assert len(errors) == 5
    texts = [repr(client), str(client), repr(h), repr(client.generations.get(h.task_id))]
    for e in errors:
        texts += [str(e), repr(e), "".join(traceback.format_exception(e))]
    texts += [r.getMessage() for r in caplog.records] + [caplog.text]
    assert any("RateLimited" in r.getMessage() for r in caplog.records)  # logging did happen
    secret = API_KEY.removeprefix("sk-")
    for text in texts:
        assert secret not in text
    # the request itself did carry it
    assert fake.requests[-1].headers["authorization"] == f"Bearer {API_KEY}"


def test_redacting_filter_scrubs_a_leaked_record(caplog):
    Client(API_KEY, base_url=BASE, transport=httpx.MockTransport(lambda r: httpx.Response(200)))
    caplog.set_level(logging.DEBUG)
    logging.getLogger("httpx").debug("header Authorization: Bearer %s", API_KEY)
    assert API_KEY not in caplog.text and "<redacted>" in caplog.text


def test_errors_keep_no_request():
    from songlab.client import error_from_response

    err = error_from_response(429, b'{"error": "RateLimited", "message": "m", "retryable": true}')
    assert isinstance(err, APIError)
    assert not any(isinstance(v, httpx.Request | httpx.Response) for v in vars(err).values())


@pytest.mark.parametrize("bad", ["", "   ", None])
def test_empty_key_is_refused(bad):
    with pytest.raises(ValueError, match="api_key"):
        Client(bad, base_url=BASE)
