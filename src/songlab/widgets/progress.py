"""Live progress of many tasks in one panel, driven by their SSE streams.

Each tracked task gets a row (a progress bar, a status line and, for pipelines
such as song translation, its named steps). A background thread per task follows
it with the client's own loop, ``songlab.client.watch(client, task_id, callback)``
(stream, resume after the last seq when a stream ends without a terminal event,
then read the task snapshot until it is done), folds every update through the
pure reducer of :mod:`songlab.widgets._events` and sets the row's widget values
(never ``with output:``, which ipykernel 7 drops from threads). At the end the
snapshot (one GET) gives the final status or the error message. Errors are shown
in the row and in the panel's log, never lost.

Events that carry only their kind and seq (all the spec promises) leave the row
indeterminate: a full grey bar and "progress not reported", never a stuck "0%";
the ``terminal`` event then ends the stream and the one GET gives the outcome.
Translation steps show when the events carry them.
"""

from __future__ import annotations

import html
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import ipywidgets as W

import songlab.widgets._events as _events
from songlab.client import WatchUpdate, watch
from songlab.widgets._ui import ErrorSink, describe_error, status_html

__all__ = ["ProgressPanel", "TaskRow"]

TICK_SECONDS = 1.0  # how often a running row's elapsed time is shown again
_BAR_STYLE = {"completed": "success", "failed": "danger"}
_INDETERMINATE = "#c8d1dc"  # a full, grey bar: working, how far unknown
_WRAP = "white-space:normal;overflow-wrap:anywhere;line-height:1.3;font-weight:600"
_STEP_MARK = {"finished": "\u2713", "started": "\u25b6", "pending": "\u00b7"}


def _steps_html(steps: tuple[tuple[str, str], ...]) -> str:
    parts = []
    for i, (name, phase) in enumerate(steps, 1):
        text = f"{_STEP_MARK.get(phase, '')} {i} {html.escape(name)}"
        parts.append(f"<b>{text}</b>" if phase == "started" else text)
    return '<span style="font-size:90%">' + " &nbsp; ".join(parts) + "</span>"


class TaskRow(W.VBox):
    """One task: its ``title`` (the whole label, wrapping), ``bar`` (0-100), ``status`` line
    and ``steps`` line; ``state`` is the reducer's. ``extra`` widgets (made by the caller, in
    the main thread) sit below, e.g. the take's player once it completes."""

    def __init__(
        self,
        task_id: str,
        *,
        label: str = "",
        steps: tuple[str, ...] = (),
        extra: tuple[W.Widget, ...] = (),
    ) -> None:
        self.state = _events.initial(task_id, label=label, steps=steps)
        self.task: Any = None  # the final snapshot, once done
        self.finished = threading.Event()
        self.started = time.monotonic()
        self._ended: float | None = None
        self.title = W.HTML(value=f'<div style="{_WRAP}">{html.escape(self.state.label)}</div>')
        self.bar = W.IntProgress(value=0, min=0, max=100, bar_style="info")
        self.status = W.HTML(value=status_html(self._describe()))
        self.steps = W.HTML(value=_steps_html(self.state.steps))
        self.steps.layout.display = "" if steps else "none"
        self._lock = threading.Lock()
        super().__init__(
            children=[
                self.title,
                W.HBox([self.bar, self.status], layout=W.Layout(align_items="center")),
                self.steps,
                *extra,
            ]
        )
        self._render()  # the screen is the state from the first frame

    @property
    def task_id(self) -> str:
        return self.state.task_id

    @property
    def elapsed(self) -> float:
        """Seconds since the row started following its task (frozen once it is done)."""
        return (self._ended or time.monotonic()) - self.started

    def _describe(self) -> str:
        return _events.describe(self.state, label=False, elapsed=self.elapsed)

    def apply(self, event: Any) -> _events.TaskState:
        """Fold one stream event in and render the new state."""
        with self._lock:
            self.state = _events.reduce(self.state, event)
            self._render()
            return self.state

    def settle(self, snapshot: Any) -> _events.TaskState:
        """Fold a task snapshot (a client ``Task`` or a dict) in and render it."""
        raw = getattr(snapshot, "raw", snapshot)
        with self._lock:
            self.state = _events.settle(self.state, raw)
            self._render()
            return self.state

    def note(self, text: str, *, resumed: bool = False, tone: str = "warn") -> None:
        """Say what happened to the stream (until the next event: it is the row's state)."""
        with self._lock:
            self.state = _events.noted(self.state, text, tone=tone, resumed=resumed)
            self._render()

    def fail(self, text: str) -> None:
        with self._lock:
            self.state = replace(self.state, error=text, done=True, status="failed")
            self._render()

    def tick(self) -> None:
        """Show the time passing (the panel's ticker calls it every second while not done)."""
        with self._lock:
            if not self.state.done:
                self._render()

    def _render(self) -> None:
        s = self.state
        if s.done and self._ended is None:
            self._ended = time.monotonic()
        unknown = not (s.done or s.determinate)
        self.bar.value = 100 if unknown else round(s.fraction * 100)
        self.bar.style.bar_color = _INDETERMINATE if unknown else None
        self.bar.bar_style = _BAR_STYLE.get(s.status, "info") if s.done else "info"
        tone = ("error" if s.status == "failed" else "ok") if s.done else "info"
        text = self._describe()
        if s.note:
            text, tone = f"{text} - {s.note}", s.note_tone
        self.status.value = status_html(text, tone)
        if s.steps:
            self.steps.value = _steps_html(s.steps)
            self.steps.layout.display = ""

    def wait(self, timeout: float | None = None) -> _events.TaskState:
        """Block until the row is done (or ``timeout``); return its state."""
        self.finished.wait(timeout)
        return self.state


class ProgressPanel(W.VBox):
    """Many tasks at once: ``track(task_id)`` adds a row followed by a background thread."""

    def __init__(
        self,
        client: Any,
        *,
        title: str = "Tasks",
        max_resumes: int = 50,
        poll_interval: float = 0.5,
    ) -> None:
        self.client = client
        self.max_resumes = max_resumes
        self.poll_interval = poll_interval
        self.sink = ErrorSink()
        self.rows: dict[str, TaskRow] = {}
        self._done_callbacks: list[Callable[[TaskRow], Any]] = []
        self._box = W.VBox()
        self._ticker: threading.Thread | None = None
        self._ticker_lock = threading.Lock()
        super().__init__(
            children=[
                W.HTML(f"<b>{html.escape(title)}</b>"),
                self._box,
                self.sink.line,
                self.sink.log,
            ]
        )

    def on_done(self, callback: Callable[[TaskRow], Any]) -> None:
        """Call ``callback(row)`` (from the row's thread) when a task ends, before
        ``row.wait()`` returns."""
        self._done_callbacks.append(callback)

    def track(
        self,
        task_id: str,
        *,
        label: str = "",
        steps: tuple[str, ...] = (),
        start: bool = True,
        extra: tuple[W.Widget, ...] = (),
    ) -> TaskRow:
        """Add (or return) the row of ``task_id`` and start following its stream. ``extra``:
        widgets shown under the row (made here, in the main thread; filled later)."""
        if task_id in self.rows:
            return self.rows[task_id]
        row = TaskRow(task_id, label=label, steps=steps, extra=extra)
        self.rows[task_id] = row
        self._box.children = (*self._box.children, row)
        if start:
            threading.Thread(
                target=self._follow, args=(row,), daemon=True, name=f"songlab-progress-{task_id}"
            ).start()
            self._start_ticker()
        return row

    def _start_ticker(self) -> None:
        """One thread per panel shows the elapsed time of its running rows, every second."""
        with self._ticker_lock:
            if self._ticker is not None and self._ticker.is_alive():
                return
            self._ticker = threading.Thread(
                target=self._tick, daemon=True, name="songlab-progress-ticker"
            )
            self._ticker.start()

    def _tick(self) -> None:
        while True:
            running = [r for r in list(self.rows.values()) if not r.finished.is_set()]
            if not running:
                with self._ticker_lock:  # a row tracked meanwhile restarts the ticker
                    if all(r.finished.is_set() for r in list(self.rows.values())):
                        self._ticker = None
                        return
                continue
            running[0].finished.wait(TICK_SECONDS)
            for row in running:
                row.tick()

    def wait(self, timeout: float | None = None) -> dict[str, _events.TaskState]:
        """Block until every row is done (or ``timeout`` overall); states by task id."""
        deadline = None if timeout is None else time.monotonic() + timeout
        for row in list(self.rows.values()):
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            row.wait(left)
        return {k: r.state for k, r in self.rows.items()}

    # -- the background thread ------------------------------------------------

    def _follow(self, row: TaskRow) -> None:
        try:
            try:
                row.task = watch(
                    self.client,
                    row.task_id,
                    lambda u: self._show(row, u),
                    max_resumes=self.max_resumes,
                    poll_interval=self.poll_interval,
                    raise_on_failure=False,
                )
            except Exception as exc:  # noqa: BLE001 - the thread must show, not raise
                text = self.sink.error(exc, context=row.state.label)
                if row.state.done:  # the stream said how it ended; only the snapshot is missing
                    row.note(text, tone="error")
                else:
                    row.fail(text)
            for callback in self._done_callbacks:  # before `finished`: wait() sees their effects
                try:
                    callback(row)
                except Exception as exc:  # noqa: BLE001
                    self.sink.error(exc, context=f"{row.state.label} callback")
        finally:
            row.finished.set()

    @staticmethod
    def _show(row: TaskRow, update: WatchUpdate) -> None:
        """One update of the client's watch loop, folded into the row."""
        if update.kind == "event":
            row.apply(update.event)
        elif update.kind == "resumed":
            last = "stream closed" if update.error is None else describe_error(update.error)
            row.note(f"{last}; resuming after seq {row.state.last_seq}", resumed=True)
        else:
            row.settle(update.task)
