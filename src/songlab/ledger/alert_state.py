"""What ``songlab report --check`` remembers between runs: a private JSON file of alert ids.

For each alert id (its subject and state, ``songlab.ledger.alerts``): when it was first seen
(the "since" of the states the data cannot date) and when it was delivered to the webhook.
The file is private (0600, written whole through ``songlab.localfiles``) and locked while a
run uses it, so two overlapping runs cannot both send an alert.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from songlab.ledger.alerts import Alert

__all__ = ["AlertState", "STATE_VERSION", "iso"]

STATE_VERSION: Final[int] = 1


def iso(t: datetime) -> str:
    """``t`` as ISO 8601 UTC to the second (``2026-11-20T07:00:00Z``)."""
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class AlertState:
    """What ``--check`` remembers between runs, in a private JSON file: when each alert was first
    seen, and when it was delivered to the webhook. Use as a context manager: the file is locked
    (so two overlapping runs cannot both send an alert) and saved whole on the way out."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._entries: dict[str, dict[str, Any]] = {}
        self._lock: Any = None
        self._loaded = False

    def __enter__(self) -> AlertState:
        from songlab.localfiles import private_dir

        private_dir(self.path.parent)
        self._lock = _lock(self.path.with_name(self.path.name + ".lock"))
        self._lock.__enter__()
        try:
            self._load()
        except BaseException:
            self._lock.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            if self._loaded:
                self.save()
        finally:
            self._lock.__exit__(*exc)

    def _load(self) -> None:
        from songlab.localfiles import check_private

        if not self.path.exists():
            self._loaded = True
            return
        check_private(self.path, what="alert state file")
        self._entries = read_entries(self.path)
        self._loaded = True

    def save(self) -> None:
        from songlab.localfiles import write_atomic

        doc = {"version": STATE_VERSION, "alerts": self._entries}
        write_atomic(self.path, json.dumps(doc, indent=1, sort_keys=True) + "\n")

    def first_seen(self, alert_id: str, now: datetime) -> datetime:
        """When ``alert_id`` was first seen (recorded now if it is new)."""
        entry = self._entries.setdefault(alert_id, {"first_seen": iso(now)})
        seen = entry.setdefault("first_seen", iso(now))
        return datetime.fromisoformat(str(seen).replace("Z", "+00:00"))

    def seen(self, alerts: Sequence[Alert]) -> None:
        for a in alerts:
            self._entries.setdefault(a.id, {}).setdefault("first_seen", iso(a.since))

    def sent(self, alert_id: str) -> bool:
        return bool(self._entries.get(alert_id, {}).get("sent_at"))

    def mark_sent(self, alert_id: str, at: datetime) -> None:
        entry = self._entries.setdefault(alert_id, {"first_seen": iso(at)})
        entry["sent_at"] = iso(at)
        entry.pop("last_error", None)
        self.save()  # at once: a crash after this must not send it again

    def mark_failed(self, alert_id: str, reason: str) -> None:
        entry = self._entries.setdefault(alert_id, {})
        entry["attempts"] = int(entry.get("attempts", 0)) + 1
        entry["last_error"] = reason

    def entry(self, alert_id: str) -> dict[str, Any]:
        return dict(self._entries.get(alert_id, {}))


def read_entries(path: Path) -> dict[str, dict[str, Any]]:
    """The entries of the state file at ``path``; a ``ValueError`` saying how to start afresh
    when it is not one (never started afresh silently: every alert would be sent again)."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        entries = doc["alerts"]
        if doc.get("version") != STATE_VERSION or not isinstance(entries, dict):
            raise ValueError("unknown layout")
        return {str(k): dict(v) for k, v in entries.items()}
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ValueError(
            f"alert state {path}: not a songlab alert state file ({exc}); move it "
            "aside to start afresh (every active alert is then sent again)"
        ) from None


@contextlib.contextmanager
def _lock(path: Path) -> Iterator[None]:
    """An exclusive lock on ``path`` (POSIX ``flock``; elsewhere none)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
