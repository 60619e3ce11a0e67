"""No secret in a log: signed URLs are redacted in songlab's log lines and in httpx's while
songlab's client is in use, and a connection error carries no request headers."""

from __future__ import annotations

import logging
import socket
import traceback

import httpx
import pytest

from songlab.client import APIConnectionError, Client, RetryPolicy
from songlab.client._redact import REDACTOR, redact_url, scrub_exception


def test_httpx_logs_show_no_working_signed_url(sandbox, new_account, caplog):
    acct = new_account()
    caplog.set_level(logging.DEBUG)
    with Client(acct.api_key, base_url=sandbox.base_url, quiet=True, cache=False) as c:
        h = c.generations.create(
            operation="sfx_gen", model="v5", payload={"prompt": "door", "duration_seconds": 1}
        )
        task = h.wait(timeout=60)
        link = c.files.link(task.file_ids[0])
        data = c.files.download(task.file_ids[0])
        assert data and httpx.get(link.url).status_code == 200  # the link works...
    token = link.url.rsplit("/", 1)[1]
    httpx_lines = [r.getMessage() for r in caplog.records if r.name.startswith("httpx")]
    fetched = [m for m in httpx_lines if "/_signed/" in m]
    assert fetched, "httpx logged the download (INFO)"  # logging did happen
    assert all("/_signed/<signed>" in m for m in fetched)
    texts = [r.getMessage() for r in caplog.records] + [caplog.text]
    assert not any(token in t for t in texts)  # ...and no log line holds it
    assert not any(acct.api_key in t for t in texts)


@pytest.mark.parametrize(
    "url",
    [
        "https://bucket.s3.amazonaws.com/a/b.mp3?X-Amz-Algorithm=AWS4&X-Amz-Signature=abc123",
        "https://acct.blob.core.windows.net/c/b.mp3?sv=2024&se=2026&sp=r&sig=abc123",
        "https://storage.googleapis.com/b/o.mp3?X-Goog-Signature=abc123&X-Goog-Expires=600",
        "http://127.0.0.1:9/_signed/f.1795678254.abc123",
    ],
    ids=["s3", "azure", "gcs", "sandbox"],
)
def test_signed_urls_of_any_storage_are_redacted_in_a_log_line(url):
    line = f'HTTP Request: GET {url} "HTTP/1.1 200 OK"'
    clean = REDACTOR.scrub(line)
    assert "abc123" not in clean and clean.endswith('/<signed> "HTTP/1.1 200 OK"')
    assert clean.startswith("HTTP Request: GET " + redact_url(url))


def test_plain_api_urls_stay_readable():
    line = 'HTTP Request: GET http://127.0.0.1:9/v1/generations?limit=100&cursor=5 "200"'
    assert REDACTOR.scrub(line) == line


def test_a_url_the_client_fetched_unsigned_is_redacted_whatever_its_shape():
    url = "https://cdn.example.net/dl/opaque-path-token-xyz"  # no signature-like parameter
    REDACTOR.add_url(url)
    assert "opaque-path-token-xyz" not in REDACTOR.scrub(f"GET {url}.")
    assert REDACTOR.scrub(f"GET {url}.").endswith("/dl/<signed>.")


def _dead_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_connection_error_carries_no_request_headers():
    key = "sk-live-0123456789abcdefSECRET"
    base = f"http://127.0.0.1:{_dead_port()}"
    with Client(key, base_url=base, quiet=True, retry=RetryPolicy.never(), record=False) as c:
        with pytest.raises(APIConnectionError) as caught:
            c.account.balance()
    err = caught.value
    chain: list[BaseException] = []
    cur: BaseException | None = err
    while cur is not None and cur not in chain:
        chain.append(cur)
        cur = cur.__cause__ or cur.__context__
    assert any(isinstance(e, httpx.ConnectError) for e in chain)  # the cause is kept...
    for e in chain:
        if isinstance(e, httpx.RequestError):
            assert "authorization" not in e.request.headers  # ...without the headers
            assert e.request.url.path == "/v1/account/balance"
    texts = [str(err), repr(err), "".join(traceback.format_exception(err))]
    assert not any(key in t or "SECRET" in t for t in texts)


def test_scrub_exception_redacts_a_signed_url_of_an_unauthenticated_request():
    request = httpx.Request("GET", "http://h/_signed/f.1.token-xyz")
    exc = httpx.ReadTimeout("timed out", request=request)
    scrub_exception(exc)
    assert str(exc.request.url) == "http://h/_signed/%3Csigned%3E"
    assert not exc.request.headers.get("authorization")
