"""Defence in depth for secrets in logs: one filter scrubs every client's API key."""

from __future__ import annotations

import logging

__all__ = ["REDACTOR"]


class _RedactingFilter(logging.Filter):
    """Defence in depth: scrub every client's key from records of httpx/httpcore/songlab.

    httpx logs no headers, and no songlab log line includes one; this filter makes
    sure of it. One filter per process holds the keys of the clients made.
    """

    def __init__(self) -> None:
        super().__init__()
        self.secrets: set[str] = set()
        self.installed = False

    def add(self, secret: str) -> None:
        self.secrets.add(secret)
        if not self.installed:
            for name in _FILTERED_LOGGERS:
                logging.getLogger(name).addFilter(self)
            self.installed = True

    def filter(self, record: logging.LogRecord) -> bool:
        msg = record.getMessage()
        hits = [s for s in self.secrets if s in msg]
        if hits:
            for secret in hits:
                msg = msg.replace(secret, "<redacted>")
            record.msg, record.args = msg, ()
        return True


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
