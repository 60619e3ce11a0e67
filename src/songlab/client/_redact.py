"""Defence in depth for secrets in logs and errors: API keys and signed URLs never show.

One filter per process (:data:`REDACTOR`), installed on the loggers of httpx, httpcore and
songlab's client by the first client made, scrubs from every record:

- every client's API key;
- every signed URL: those the client fetched (each absolute URL it sends without the
  Authorization header is registered), the sandbox's ``/_signed/<token>`` form, and any
  URL whose query carries a signature-like parameter (``X-Amz-Signature``, ``sig``, ...).
  A signed URL is shown as :func:`redact_url` shows it: its host and folder, then
  ``<signed>``.

httpx logs every request's full URL at INFO, so a user who turns logging on would
otherwise see working download links. :func:`scrub_exception` takes the request (and
with it the Authorization header) off an httpx exception that becomes the cause of a
songlab error.
"""

from __future__ import annotations

import logging
import re
from collections import OrderedDict
from typing import Final
from urllib.parse import parse_qsl, urlsplit

import httpx

__all__ = ["REDACTOR", "redact_url", "scrub_exception"]

_URL: Final = re.compile(r"https?://[^\s\"'<>]+")
_SIGNED_PATH: Final = "/_signed/"
# query parameters that carry a signature or a credential in the signed URLs of the big
# storage services (S3, GCS, Azure SAS, CloudFront) and in common hand-rolled ones
_SIGNATURE_PARAMS: Final = frozenset(
    {
        "x-amz-signature",
        "x-amz-credential",
        "x-amz-security-token",
        "x-goog-signature",
        "x-goog-credential",
        "signature",
        "sig",
        "se",
        "sp",
        "sv",
        "skoid",
        "sktid",
        "token",
        "access_token",
        "key",
        "key-pair-id",
        "policy",
        "expires",
    }
)
_REMEMBERED: Final = 10_000  # signed URLs kept to recognise (the newest)


def redact_url(url: str) -> str:
    """``url`` without what makes it a bearer: its query and its last path segment (where
    the sandbox keeps its token) become ``<signed>``."""
    head = url.split("?", 1)[0].split("#", 1)[0]
    folder = head.rsplit("/", 1)[0] if head.count("/") > 2 else head
    return folder + "/<signed>"


def _looks_signed(url: str) -> bool:
    if _SIGNED_PATH in url:
        return True
    query = urlsplit(url).query
    return bool(query) and any(k.lower() in _SIGNATURE_PARAMS for k, _ in parse_qsl(query))


class _RedactingFilter(logging.Filter):
    """Scrub every client's key and every signed URL from records of httpx, httpcore and
    songlab's client (see the module's docstring)."""

    def __init__(self) -> None:
        super().__init__()
        self.secrets: set[str] = set()
        self.urls: OrderedDict[str, None] = OrderedDict()
        self.installed = False

    def _install(self) -> None:
        if not self.installed:
            for name in _FILTERED_LOGGERS:
                logging.getLogger(name).addFilter(self)
            self.installed = True

    def add(self, secret: str) -> None:
        self.secrets.add(secret)
        self._install()

    def add_url(self, url: str) -> None:
        """Remember a signed URL the client is about to fetch (the newest 10,000 are kept)."""
        self.urls[url] = None
        self.urls.move_to_end(url)
        while len(self.urls) > _REMEMBERED:
            self.urls.popitem(last=False)
        self._install()

    def scrub(self, text: str) -> str:
        """``text`` with every key and signed URL replaced."""
        for secret in self.secrets:
            if secret in text:
                text = text.replace(secret, "<redacted>")
        if "://" in text:
            text = _URL.sub(self._url, text)
        return text

    def _url(self, m: re.Match[str]) -> str:
        url = m.group()
        bare = url.rstrip(".,;:)]}")
        if bare in self.urls or _looks_signed(bare):
            return redact_url(bare) + url[len(bare) :]
        return url

    def filter(self, record: logging.LogRecord) -> bool:
        msg = record.getMessage()
        clean = self.scrub(msg)
        if clean != msg:
            record.msg, record.args = clean, ()
        return True


def scrub_exception(exc: BaseException) -> BaseException:
    """Take the request (its headers, the Authorization header among them) off an httpx
    exception and the httpx exceptions chained to it; return ``exc``. What is left names
    the method and a redacted URL, in a request with no headers."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if isinstance(cur, httpx.RequestError):
            try:
                request = cur.request
            except RuntimeError:  # never had one
                request = None
            if request is not None:
                url = str(request.url)
                shown = redact_url(url) if request.headers.get("authorization") is None else url
                cur.request = httpx.Request(request.method, shown)
        cur = cur.__cause__ or cur.__context__
    return exc


_FILTERED_LOGGERS = (
    "httpx",
    "httpcore",
    "httpcore.connection",
    "httpcore.http11",
    "httpcore.http2",
    "httpcore.proxy",
    "songlab.client",
)
REDACTOR = _RedactingFilter()
