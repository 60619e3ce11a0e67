"""The pure core of the progress panel: stream events -> the state a row shows.

``reduce(state, event)`` folds one SSE event (a mapping or an event object of
the client) into a frozen :class:`TaskState`; ``settle(state, snapshot)`` folds
the final task snapshot in. The panel only renders states, so every rule here
(fraction, the six named steps of song translation, final status and error,
duplicate events after a resume) is tested without widgets, threads or HTTP.

The spec promises an event's kind and seq only. Everything else (status,
progress, step, phase, message) is read through the names of
:mod:`songlab.client.field_names` when present. Without them a row is
*indeterminate* (``determinate`` False: no percentage is claimed) until the
``terminal`` event, which then only says the stream ``ended``: the panel reads the
outcome with one GET and :func:`settle` finishes the row.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Final

import songlab.client.field_names as field_names
from songlab.spec import TRANSLATION_STEPS, EventKind, Status

__all__ = [
    "EVENT_FIELDS",
    "TaskState",
    "as_event",
    "describe",
    "initial",
    "noted",
    "reduce",
    "settle",
]

EVENT_FIELDS: Final[tuple[str, ...]] = (
    "seq",
    "kind",
    "task_id",
    "status",
    "progress",
    "step",
    "phase",
    "message",
    "cursor",
)
_PHASES: Final[tuple[str, ...]] = ("pending", "started", "finished")
_NAMES: Final[dict[str, tuple[str, ...]]] = {
    "seq": field_names.EVENT_SEQ,
    "kind": field_names.EVENT_KIND,
    "task_id": field_names.EVENT_TASK_ID,
    "status": field_names.EVENT_STATUS,
    "progress": field_names.EVENT_PROGRESS,
    "step": field_names.EVENT_STEP,
    "phase": field_names.EVENT_PHASE,
    "message": field_names.EVENT_MESSAGE,
    "cursor": field_names.EVENT_CURSOR,
}


@dataclass(frozen=True, slots=True)
class TaskState:
    """What one progress row shows. ``steps`` is ``((name, phase), ...)``."""

    task_id: str
    label: str = ""
    status: str = Status.QUEUED.value
    fraction: float = 0.0
    steps: tuple[tuple[str, str], ...] = ()
    message: str = ""
    error: str | None = None
    last_seq: int = 0
    resumes: int = 0
    done: bool = False
    determinate: bool = False  # some event or snapshot reported progress or a step
    ended: bool = False  # the terminal event came without the outcome: read the task
    events: int = 0  # task events folded in
    note: str = (
        ""  # what happened to the stream (a resume, a missing outcome), until the next event
    )
    note_tone: str = "warn"

    @property
    def current_step(self) -> str | None:
        started = [name for name, phase in self.steps if phase == "started"]
        return started[-1] if started else None


def initial(task_id: str, *, label: str = "", steps: tuple[str, ...] = ()) -> TaskState:
    """A fresh row; ``steps`` names a fixed pipeline when it is known up front."""
    return TaskState(task_id, label or task_id, steps=tuple((s, "pending") for s in steps))


def as_event(event: Any) -> dict[str, Any]:
    """A plain dict of the SSE ``data`` fields from a mapping or an event object."""
    if isinstance(event, Mapping):
        data = {
            **event,
            **{
                k: v
                for k, names in _NAMES.items()
                if (v := field_names.first(event, names)) is not None
            },
        }
    else:
        data = {k: getattr(event, k) for k in EVENT_FIELDS if getattr(event, k, None) is not None}
        extra = getattr(event, "data", None)
        if isinstance(extra, Mapping):
            data = {**extra, **data}
    if "kind" not in data and "event" in data:
        data["kind"] = data["event"]
    kind = data.get("kind")
    if kind is not None and not isinstance(kind, str):
        data["kind"] = str(getattr(kind, "value", kind))
    return data


def _step_fraction(steps: tuple[tuple[str, str], ...]) -> float:
    if not steps:
        return 0.0
    score = sum(1.0 if p == "finished" else 0.5 if p == "started" else 0.0 for _, p in steps)
    return score / len(steps)


def _with_step(state: TaskState, step: str, phase: str) -> TaskState:
    steps = state.steps
    if not steps and step in TRANSLATION_STEPS:
        steps = tuple((s, "pending") for s in TRANSLATION_STEPS)
    names = [s for s, _ in steps]
    if step not in names:
        steps = (*steps, (step, "pending"))
        names.append(step)
    phase = phase if phase in _PHASES[1:] else "started"
    index = names.index(step)
    new = []
    for i, (name, old) in enumerate(steps):
        if i == index:
            keep = old == "finished" and phase == "started"
            new.append((name, old if keep else phase))
        elif i < index and old != "finished" and names[index] in TRANSLATION_STEPS:
            new.append((name, "finished"))  # the pipeline runs in order
        else:
            new.append((name, old))
    return replace(state, steps=tuple(new))


def _step_message(state: TaskState, step: str, phase: str) -> str:
    names = [s for s, _ in state.steps]
    number = names.index(step) + 1 if step in names else 0
    return f"step {number}/{len(names)} {step}: {phase}"


def reduce(state: TaskState, event: Any) -> TaskState:
    """Fold one stream event into the state. Events already seen (by seq) are ignored; a new
    one takes the row's note (a resume, a missing outcome) with it: its cause is gone."""
    if state.done:
        return state
    data = as_event(event)
    seq = data.get("seq")
    if isinstance(seq, int):
        if seq <= state.last_seq:
            return state
        state = replace(state, last_seq=seq)
    state = replace(state, note="")
    kind = data.get("kind")
    if kind == EventKind.TERMINAL:
        return _terminal(replace(state, events=state.events + 1), data)
    if kind in (EventKind.TIMEOUT, EventKind.ERROR):
        return _cut(state, data, str(kind))
    return _progress(replace(state, events=state.events + 1), data)


def _terminal(state: TaskState, data: Mapping[str, Any]) -> TaskState:
    """The ``terminal`` event: the outcome when it carries one, else "read the task"."""
    status = data.get("status")
    final = status if status in (Status.COMPLETED, Status.FAILED) else state.status
    if final == Status.COMPLETED:
        steps = tuple((s, "finished") for s, _ in state.steps)
        return replace(
            state,
            status=final,
            fraction=1.0,
            steps=steps,
            done=True,
            message="completed",
            error=None,
            ended=True,
        )
    if final == Status.FAILED:
        error = data.get("message") or "the task failed"
        return replace(
            state, status=final, done=True, message="failed", error=str(error), ended=True
        )
    return replace(state, ended=True, message="the stream ended; reading the outcome")


def _cut(state: TaskState, data: Mapping[str, Any], kind: str) -> TaskState:
    """A ``timeout`` or ``error`` event. These take a seq of their own, which may lie past
    events not yet delivered: the resume point is their cursor, not their seq."""
    cursor = data.get("cursor")
    if isinstance(cursor, str) and cursor.isdigit():
        cursor = int(cursor)
    if isinstance(cursor, int) and not isinstance(cursor, bool):
        state = replace(state, last_seq=cursor)
    note = data.get("message") or f"stream {kind}"
    return replace(state, message=f"{note}; resuming")


def _progress(state: TaskState, data: Mapping[str, Any]) -> TaskState:
    """Any other event: the status, the step and the fraction it reports, if any."""
    kind, status = data.get("kind"), data.get("status")
    if status in (Status.QUEUED, Status.PROCESSING):
        state = replace(state, status=status)
    elif kind == EventKind.PROGRESS and state.status == Status.QUEUED:
        state = replace(state, status=Status.PROCESSING.value)
    step = data.get("step")
    message = state.message
    if isinstance(step, str) and step:
        phase = str(data.get("phase") or "started")
        state = replace(_with_step(state, step, phase), determinate=True)
        message = _step_message(state, step, phase)
    elif data.get("message"):
        message = str(data["message"])
    elif kind == EventKind.PROGRESS or status:
        message = state.status
    fraction = state.fraction
    progress = data.get("progress")
    if isinstance(progress, int | float) and not isinstance(progress, bool):
        fraction = max(fraction, min(1.0, max(0.0, float(progress))))
        state = replace(state, determinate=True)
    fraction = max(fraction, min(_step_fraction(state.steps), 0.99))
    return replace(state, fraction=fraction, message=message)


def noted(state: TaskState, text: str, *, tone: str = "warn", resumed: bool = False) -> TaskState:
    """The row's note (what happened to its stream, or an outcome that could not be read)
    until the next event; ``resumed`` counts a resume."""
    resumes = state.resumes + 1 if resumed else state.resumes
    return replace(state, note=text, note_tone=tone, resumes=resumes)


def settle(state: TaskState, snapshot: Mapping[str, Any]) -> TaskState:
    """Fold a task snapshot (``GET /v1/generations/{id}``) in; terminal -> done. A row
    already done keeps its outcome; the snapshot of that same outcome adds its detail (the
    failure's code and message)."""
    status = str(getattr(snapshot.get("status"), "value", snapshot.get("status")) or "")
    if state.done and status != state.status:
        return state
    if status == Status.COMPLETED:
        return reduce(state, {"kind": "terminal", "status": "completed"})
    if status == Status.FAILED:
        failure = field_names.first(snapshot, field_names.TASK_FAILURE) or {}
        code = (
            field_names.first(failure, field_names.FAILURE_CODE)
            if isinstance(failure, Mapping)
            else None
        )
        text = (
            field_names.first(failure, field_names.FAILURE_MESSAGE)
            if isinstance(failure, Mapping)
            else None
        )
        error = ": ".join(str(x) for x in (code, text) if x) or state.error or "the task failed"
        return replace(reduce(state, {"kind": "terminal", "status": "failed"}), error=error)
    progress = field_names.first(snapshot, field_names.TASK_PROGRESS)
    data: dict[str, Any] = {"kind": "progress", "status": status or None}
    if progress is not None:
        data["progress"] = progress
    return reduce(state, data)


def _elapsed(seconds: float | None) -> str:
    if seconds is None:
        return ""
    whole = int(seconds)
    text = f"{whole} s" if whole < 60 else f"{whole // 60} min {whole % 60:02d} s"
    return f" \u00b7 {text}"


def describe(state: TaskState, *, label: bool = True, elapsed: float | None = None) -> str:
    """The one status line of a row (plain text). ``label=False`` leaves the task's label
    out (a row shows it whole above its bar); ``elapsed`` (seconds since the row started)
    is appended, so a row with no reported progress still shows time passing."""
    head = f"{state.label}: " if label else ""
    percent = f"{state.fraction * 100:.0f}%"
    if state.done and state.status == Status.FAILED:
        return f"{head}failed - {state.error}"
    if state.done:
        return f"{head}{state.status} ({percent}){_elapsed(elapsed)}"
    tail = f" - {state.message}" if state.message and state.message != state.status else ""
    if not state.determinate:  # the service reports no progress: claim no percentage
        if state.ended:
            return f"{head}{state.status}{tail}{_elapsed(elapsed)}"
        seen = f"{state.events} event{'s' if state.events != 1 else ''}" if state.events else ""
        note = ", ".join(filter(None, (seen, "progress not reported")))
        return f"{head}{state.status} ({note}){tail}{_elapsed(elapsed)}"
    return f"{head}{state.status} {percent}{tail}{_elapsed(elapsed)}"
