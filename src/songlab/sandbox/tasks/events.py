"""The per-task event log behind the SSE stream, and the wake-ups of its readers.

Every event takes the task's next ``seq`` (from 1, never repeated). Events the
worker emits are stored and replayed to any reader with ``after=<seq>``;
``timeout`` and ``error`` belong to one connection: they take a seq too but are
not replayed. Writers (worker threads) call :meth:`EventHub.notify` after the
commit; readers (asyncio streams) wait on an ``asyncio.Event`` set thread-safely.
"""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

from songlab.sandbox.ports import Now
from songlab.sandbox.storage.db import Store

REPLAYED = ("progress", "streaming_url", "partial_output", "terminal")


def append(
    store: Store, task_id: str, kind: str, data: dict[str, Any], now: float, *, persist: bool = True
) -> int:
    """Give the event the task's next seq, store it (if ``persist``); returns the seq."""
    with store.tx():
        row = store.one("SELECT next_seq FROM tasks WHERE id = ?", (task_id,))
        if row is None:
            raise KeyError(task_id)
        seq: int = row[0]
        store.execute("UPDATE tasks SET next_seq = ? WHERE id = ?", (seq + 1, task_id))
        if persist:
            body = {"seq": seq, "kind": kind, "task_id": task_id, **data}
            store.execute(
                "INSERT INTO events (task_id, seq, kind, data, at) VALUES (?,?,?,?,?)",
                (task_id, seq, kind, json.dumps(body), now),
            )
    return seq


def after(store: Store, task_id: str, seq: int) -> list[tuple[int, str, str]]:
    """Stored events with a seq above ``seq``: (seq, kind, data JSON)."""
    rows = store.all(
        "SELECT seq, kind, data FROM events WHERE task_id = ? AND seq > ? ORDER BY seq",
        (task_id, seq),
    )
    return [(r[0], r[1], r[2]) for r in rows]


def frame(seq: int, kind: str, data: str) -> bytes:
    """One SSE frame: ``id``, ``event`` and ``data`` lines."""
    return f"id: {seq}\nevent: {kind}\ndata: {data}\n\n".encode()


class EventHub:
    """Wakes the asyncio readers of a task (or all of them) from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiters: dict[str, set[tuple[asyncio.AbstractEventLoop, asyncio.Event]]] = {}

    def subscribe(self, task_id: str) -> tuple[asyncio.AbstractEventLoop, asyncio.Event]:
        entry = (asyncio.get_running_loop(), asyncio.Event())
        with self._lock:
            self._waiters.setdefault(task_id, set()).add(entry)
        return entry

    def unsubscribe(
        self, task_id: str, entry: tuple[asyncio.AbstractEventLoop, asyncio.Event]
    ) -> None:
        with self._lock:
            waiters = self._waiters.get(task_id)
            if waiters is not None:
                waiters.discard(entry)
                if not waiters:
                    del self._waiters[task_id]

    def notify(self, task_id: str) -> None:
        with self._lock:
            entries = list(self._waiters.get(task_id, ()))
        for loop, ev in entries:
            _wake(loop, ev)

    def notify_all(self) -> None:
        with self._lock:
            entries = [e for ws in self._waiters.values() for e in ws]
        for loop, ev in entries:
            _wake(loop, ev)


class EventLog:
    """The events of every task: appended in the writer's transaction, readers woken after it.

    Satisfies :class:`~songlab.sandbox.ports.EventSink` (the worker, creates and runners
    emit) and is what the stream route reads and subscribes to.
    """

    def __init__(self, store: Store, clock: Now) -> None:
        self._store = store
        self._clock = clock
        self.hub = EventHub()

    def emit(self, task_id: str, kind: str, data: dict[str, Any], *, persist: bool = True) -> int:
        """Append an event and wake the task's stream readers after the commit."""
        seq = append(self._store, task_id, kind, data, self._clock.now(), persist=persist)
        self._store.after_commit(lambda: self.hub.notify(task_id))
        return seq

    def after(self, task_id: str, seq: int) -> list[tuple[int, str, str]]:
        return after(self._store, task_id, seq)


def _wake(loop: asyncio.AbstractEventLoop, ev: asyncio.Event) -> None:
    try:
        loop.call_soon_threadsafe(ev.set)
    except RuntimeError:  # the loop is closed (server stopped)
        pass
