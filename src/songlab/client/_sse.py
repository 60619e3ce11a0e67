"""The stream resume state machine: pure, no I/O.

A task stream ends normally with a ``terminal`` event. It can also end early: the
connection drops, or the server sends ``timeout``/``error`` (each carrying a
resume cursor) and closes. Either way the client reconnects with
``after=<last seq seen>``, and :meth:`StreamResume.accept` drops any event whose
seq it already delivered, so the caller sees every task event once, in order.

``timeout`` and ``error`` are transport signals, not task events: they are
consumed here, never shown to the caller, and the resume point is their
``cursor`` (the last task event the server sent), not their own seq. Their seq
comes from the same counter but they are not replayable, and when the server
replays history, a signal's seq can be larger than task events the caller
has not seen yet (design.md: every event, ``timeout``/``error`` included, takes
the next seq).

Reconnects are paced by capped, jittered backoff (the first one after progress
is immediate); how long a stream may go without progress is the business of its
caller's deadline (:class:`songlab.client._loop.StreamLoop`), not a count.
"""

from __future__ import annotations

from dataclasses import dataclass

from songlab.client._models import Event
from songlab.spec import EventKind

__all__ = ["StreamResume"]


@dataclass(slots=True)
class StreamResume:
    task_id: str
    last_seq: int = 0
    finished: bool = False
    failures: int = 0  # reconnects since the last new event
    connections: int = 0
    signals: int = 0  # timeout/error events consumed
    idle_timeouts: int = 0
    progressed: bool = False  # a new event (or an idle timeout) since the last disconnect

    def params(self) -> dict[str, int]:
        """Query of the next connection: ``after`` once anything was seen."""
        self.connections += 1
        return {"after": self.last_seq} if self.last_seq else {}

    def accept(self, event: Event) -> bool:
        """Record ``event``; True if the caller should see it (a task event, not a repeat)."""
        if self.finished:
            return False
        if event.is_resume_signal:
            self.signals += 1
            if event.cursor is not None and event.cursor > self.last_seq:
                self.last_seq = event.cursor
            if event.kind == EventKind.TIMEOUT:
                self.failures = 0
                self.idle_timeouts += 1
                self.progressed = True
            return False
        seq = event.seq
        if seq and seq <= self.last_seq:
            return False
        if seq:
            self.last_seq = seq
        self.failures = 0
        self.progressed = True
        if event.is_terminal:
            self.finished = True
        return True

    def on_disconnect(self) -> int:
        """The connection ended without ``terminal``: how many disconnects in a row brought
        nothing new (1 right after progress: resume at once; the caller paces the rest)."""
        if self.finished:
            raise RuntimeError("stream already finished")
        self.failures += 1
        self.progressed = False
        return self.failures
