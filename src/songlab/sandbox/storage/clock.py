"""The sandbox clock: wall time plus an offset that only the admin route moves.

``--speed`` never changes it. Rate-limit windows, signed-URL expiry, balance
expiry and the stream idle timeout all read this clock.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime

# One advance moves the clock by at most a century, and never past the year 9000: the
# clock must stay a date that ISO 8601 (and every answer carrying a time) can show.
MAX_ADVANCE_SECONDS = 100 * 365 * 86400
LATEST = datetime(9000, 1, 1, tzinfo=UTC).timestamp()


class Clock:
    def __init__(self, offset: float = 0.0) -> None:
        self._offset = float(offset)
        self._lock = threading.Lock()
        self._listeners: list[Callable[[], None]] = []

    @property
    def offset(self) -> float:
        return self._offset

    def now(self) -> float:
        """Seconds since the epoch on the sandbox clock."""
        return time.time() + self._offset

    def advance(self, seconds: float) -> float:
        if not 0 <= seconds <= MAX_ADVANCE_SECONDS:  # also refuses NaN
            raise ValueError(f"advance_seconds: must be 0-{MAX_ADVANCE_SECONDS}, got {seconds}")
        with self._lock:
            if self.now() + seconds > LATEST:
                raise ValueError("advance_seconds: would move the clock past the year 9000")
            self._offset += seconds
        for listener in list(self._listeners):
            listener()
        return self.now()

    def on_advance(self, listener: Callable[[], None]) -> None:
        self._listeners.append(listener)


def iso(ts: float) -> str:
    """ISO 8601 UTC with milliseconds and a ``Z``: ``2026-11-21T23:46:00.123Z``."""
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
