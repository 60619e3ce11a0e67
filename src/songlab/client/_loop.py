"""The stream and wait loops, as pure state machines both senders drive.

``Client`` and ``AsyncClient`` only open connections, read frames and sleep;
every decision is here, written once and unit-tested without a server:

- :class:`StreamLoop`: the resume cursor (``after=``), dedupe by seq (through
  :class:`~songlab.client._sse.StreamResume`), which refusals and broken
  connections are retried, the pacing of reconnects (immediate after progress,
  then the policy's capped jittered backoff, at least what ``Retry-After`` asks),
  each connection's timeouts (never past the deadline; an idle connection is dropped
  after the client's read timeout and resumed), and the deadlines: the caller's (``wait``
  raises :class:`WaitTimeout`) and the stall limit (no new event for the
  policy's ``max_total_s`` raises :class:`StreamError` carrying the cursor).
- :class:`WaitLoop`: ``wait()``'s deadline, the polling interval and the
  verdict on each snapshot (done, failed, or poll again).
- :class:`WatchLoop`: ``watch()``: a :class:`WaitLoop` that also resumes a stream
  which ended without ``terminal`` (after the last seq it saw, up to
  ``max_resumes`` times) and tells its caller each step as a :class:`WatchUpdate`.
"""

from __future__ import annotations

import logging
import math
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

import httpx

import songlab.client.field_names as field_names
from songlab.client._exceptions import (
    APIConnectionError,
    StreamError,
    TaskFailed,
    ValidationError,
    WaitTimeout,
    error_from_response,
)
from songlab.client._models import Event, Task, parse_event
from songlab.client._redact import scrub_exception
from songlab.client._retry import (
    CallKind,
    RetryPolicy,
    backoff_delay,
    is_retryable,
    retry_after_s,
)
from songlab.client._sse import StreamResume
from songlab.spec import EventKind, Status

__all__ = [
    "POLL_CAP_S",
    "StreamLoop",
    "WaitLoop",
    "WatchLoop",
    "WatchUpdate",
    "bounded_timeout",
    "watch_loop",
]

log = logging.getLogger("songlab.client")

POLL_CAP_S: Final = 5.0  # polling interval grows x1.5 up to this


def bounded_timeout(base: httpx.Timeout, remaining: float | None) -> httpx.Timeout:
    """``base`` with no phase longer than the ``remaining`` seconds of a deadline, so a
    blackholed connection cannot hold a caller past its deadline."""
    if remaining is None:
        return base
    left = max(remaining, 0.5)  # a last attempt right at the deadline still gets a chance

    def cap(value: float | None) -> float:
        return left if value is None else min(value, left)

    return httpx.Timeout(
        connect=cap(base.connect), read=cap(base.read), write=cap(base.write), pool=cap(base.pool)
    )


class StreamLoop:
    """One task stream across any number of connections."""

    def __init__(
        self,
        task_id: str,
        *,
        path: str,
        after: int,
        policy: RetryPolicy,
        rng: random.Random,
        timeout: httpx.Timeout,
        now: float,
        deadline: float | None = None,
    ) -> None:
        self.resume = StreamResume(task_id, last_seq=after)
        self.task_id = task_id
        self.path = path
        self.policy = policy
        self.rng = rng
        self.base_timeout = timeout
        self.deadline = deadline
        self.stalled_since = now
        self.reason = "connection closed before terminal"
        self.retry_after: float | None = None

    @property
    def finished(self) -> bool:
        return self.resume.finished

    def connect(self, now: float) -> tuple[dict[str, int], httpx.Timeout]:
        """Query and timeout of the next connection (raises once the deadline passed)."""
        self._check_deadline(now)
        return self.resume.params(), bounded_timeout(
            self.base_timeout, None if self.deadline is None else self.deadline - now
        )

    def on_refused(self, status_code: int, content: bytes, headers: httpx.Headers) -> None:
        """An error answer to the stream request: raise it unless a retry can change it."""
        err = error_from_response(status_code, content, method="GET", path=self.path)
        if not is_retryable(err, CallKind.READ):
            raise err
        self.reason = f"{err.code or 'HTTP'} [{status_code}]"
        self.retry_after = retry_after_s(headers)

    def on_broken(self, exc: Exception) -> None:
        """The connection failed or was cut: raise if no retry can help."""
        if isinstance(exc, httpx.RequestError) and not is_retryable(exc, CallKind.READ):
            raise APIConnectionError(
                f"{type(exc).__name__}: {exc}", method="GET", path=self.path
            ) from scrub_exception(exc)
        self.reason = type(exc).__name__

    def on_frame(self, data: str, sse_id: str, sse_event: str) -> Event | None:
        """A frame -> the event to show the caller, or None (a repeat, a resume signal or
        a keep-alive). Raises :class:`MalformedResponse` for a frame it cannot read."""
        if not data:
            return None
        event = parse_event(data, sse_id=sse_id, sse_event=sse_event, path=self.path)
        return event if self.resume.accept(event) else None

    def next_delay(self, now: float) -> float:
        """The connection ended without ``terminal``: the sleep before resuming."""
        if self.resume.progressed:
            self.stalled_since = now
        failures = self.resume.on_disconnect()
        self._check_deadline(now)
        delay = 0.0 if failures == 1 else backoff_delay(failures - 2, self.policy, self.rng)
        if self.retry_after is not None:
            delay, self.retry_after = max(delay, self.retry_after), None
        if self.deadline is not None:
            delay = min(delay, max(0.0, self.deadline - now))
        elif now + delay - self.stalled_since > self.policy.max_total_s:
            raise StreamError(
                self.task_id,
                f"no new event for {self.policy.max_total_s:g}s ({self.reason})",
                self.resume.last_seq,
            )
        if failures > 1:
            log.info(
                "stream of %s: resuming after seq %d in %.2fs (%s)",
                self.task_id,
                self.resume.last_seq,
                delay,
                self.reason,
            )
        return delay

    def _check_deadline(self, now: float) -> None:
        if self.deadline is not None and now >= self.deadline:
            raise WaitTimeout(self.task_id, 0.0)


class WaitLoop:
    """``wait()``: follow the stream until the deadline, then poll until done."""

    def __init__(
        self,
        task_id: str,
        *,
        timeout: float,
        poll_interval: float,
        raise_on_failure: bool,
        now: float,
    ) -> None:
        self.task_id = task_id
        self.timeout = timeout
        self.deadline = now + timeout
        self.interval = poll_interval
        self.raise_on_failure = raise_on_failure
        self.last_status: str | None = None

    def saw(self, event: Event) -> None:
        self.last_status = event.status or self.last_status

    def stream_ended(self, exc: Exception) -> None:
        """The stream stopped before ``terminal`` (deadline, stall, unreadable): poll instead."""
        if not isinstance(exc, WaitTimeout):
            log.info("stream of %s unusable (%s); polling", self.task_id, exc)

    def expired(self) -> WaitTimeout:
        return WaitTimeout(self.task_id, self.timeout, self.last_status)

    def on_task(self, task: Task, now: float) -> float | None:
        """None when ``task`` is the answer; else the sleep before the next poll. Raises
        :class:`TaskFailed` or :class:`WaitTimeout`."""
        self.last_status = task.status
        if task.done:
            if task.status == "failed" and self.raise_on_failure:
                raise TaskFailed(task)
            return None
        return self.next_poll(now)

    def next_poll(self, now: float) -> float:
        """The sleep before the next poll of a task not done yet (raises past the deadline)."""
        remaining = self.deadline - now
        if remaining <= 0:
            raise self.expired()
        delay = min(self.interval, remaining)
        self.interval = min(self.interval * 1.5, POLL_CAP_S)
        return delay


@dataclass(frozen=True, slots=True)
class WatchUpdate:
    """What ``watch()`` tells its callback, in order: each stream ``event``; ``resumed`` when a
    stream ended without ``terminal`` (``error``: what ended it, None when it just closed;
    the next connection asks for events ``after`` that seq); each task ``snapshot`` read
    once the stream is over (``task``; the last one is the final task ``watch`` returns)."""

    kind: Literal["event", "resumed", "snapshot"]
    task_id: str
    event: Event | None = None
    task: Task | None = None
    error: Exception | None = None
    after: int = 0


def resumable(exc: BaseException) -> bool:
    """A dropped or abandoned stream (resume it), not an answer such as 403/404 (stop)."""
    if isinstance(exc, StreamError | APIConnectionError | OSError):
        return True
    return bool(getattr(exc, "retryable", False))


def _event_facts(event: object) -> tuple[str | None, int | None, int | None]:
    """(kind, seq, cursor) of an :class:`Event` or of a mapping with the event's fields."""
    if isinstance(event, Mapping):
        kind = field_names.first(event, field_names.EVENT_KIND) or event.get("event")
        seq, cursor = (
            field_names.first(event, field_names.EVENT_SEQ),
            field_names.first(event, field_names.EVENT_CURSOR),
        )
    else:
        kind = getattr(event, "kind", None)
        seq, cursor = getattr(event, "seq", None), getattr(event, "cursor", None)
    if isinstance(cursor, str) and cursor.isdigit():
        cursor = int(cursor)

    def whole(v: object) -> int | None:
        return v if isinstance(v, int) and not isinstance(v, bool) else None

    return (None if kind is None else str(getattr(kind, "value", kind))), whole(seq), whole(cursor)


def _status_of(task: object) -> str | None:
    status = task.get("status") if isinstance(task, Mapping) else getattr(task, "status", None)
    return None if status is None else str(getattr(status, "value", status))


class WatchLoop:
    """``watch()``: follow the stream, resuming it after the last seq when it ends without
    ``terminal`` (at most ``max_resumes`` times; a refusal such as 404 is raised, not
    resumed), then read the task until it is done (the polling and the deadline of
    :class:`WaitLoop`; no deadline when ``timeout`` is None)."""

    def __init__(
        self,
        task_id: str,
        *,
        timeout: float | None,
        poll_interval: float,
        max_resumes: int,
        raise_on_failure: bool,
        now: float,
        after: int = 0,
    ) -> None:
        self.task_id = task_id
        self.wait = WaitLoop(
            task_id,
            timeout=math.inf if timeout is None else timeout,
            poll_interval=poll_interval,
            raise_on_failure=raise_on_failure,
            now=now,
        )
        self.max_resumes = max_resumes
        self.last_seq = after
        self.resumes = 0
        self.ended = False  # the terminal event came
        self.abandoned = False  # the deadline passed while streaming: poll (once) instead

    @property
    def deadline(self) -> float | None:
        return None if math.isinf(self.wait.deadline) else self.wait.deadline

    @property
    def streaming(self) -> bool:
        """True while the stream should be (re)opened, after :attr:`last_seq`."""
        return not (self.ended or self.abandoned) and self.resumes <= self.max_resumes

    def expired(self) -> WaitTimeout:
        return self.wait.expired()

    def on_event(self, event: Any) -> WatchUpdate | None:
        """An event of the stream -> the update to tell, or None (a repeat or a resume
        signal, whose cursor becomes the resume point)."""
        kind, seq, cursor = _event_facts(event)
        if seq is not None:
            if seq <= self.last_seq:
                return None
            self.last_seq = seq
        if kind in (EventKind.TIMEOUT, EventKind.ERROR):
            if cursor is not None:
                self.last_seq = cursor
        elif kind == EventKind.TERMINAL:
            self.ended = True
        if isinstance(event, Event):
            self.wait.saw(event)
        return WatchUpdate("event", self.task_id, event=event)

    def on_stream_end(self, error: Exception | None) -> WatchUpdate | None:
        """The stream stopped: None once ``terminal`` came; raises ``error`` when no resume
        can help; else the ``resumed`` update (the last one when resumes are used up)."""
        if error is not None and isinstance(error, WaitTimeout):
            self.abandoned = True
            return None
        if error is not None and not resumable(error):
            raise error
        if self.ended:
            return None
        self.resumes += 1
        return WatchUpdate("resumed", self.task_id, error=error, after=self.last_seq)

    def on_task(self, task: object, now: float) -> float | None:
        """A snapshot: None when it is the answer, else the sleep before the next read.
        Raises :class:`TaskFailed` (``raise_on_failure``) or :class:`WaitTimeout`."""
        if isinstance(task, Task):
            return self.wait.on_task(task, now)
        status = _status_of(task)  # a duck-typed client's snapshot (a mapping or an object)
        self.wait.last_status = status
        if status in (Status.COMPLETED, Status.FAILED):
            return None
        return self.wait.next_poll(now)


def watch_loop(
    task: object,
    *,
    timeout: float | None,
    poll_interval: float,
    max_resumes: int,
    raise_on_failure: bool,
) -> WatchLoop:
    """The loop of one watch, its options checked (``task``: a task id or a handle)."""
    task_id = getattr(task, "task_id", task)
    if not (isinstance(task_id, str) and task_id.strip()):
        raise ValidationError("task", f"a task id or a task handle, got {task!r}")
    if timeout is not None and not (isinstance(timeout, int | float) and timeout > 0):
        raise ValidationError("timeout", "a positive number of seconds, or None (no deadline)")
    if not (isinstance(poll_interval, int | float) and poll_interval > 0):
        raise ValidationError("poll_interval", "a positive number of seconds")
    if not (
        isinstance(max_resumes, int) and not isinstance(max_resumes, bool) and max_resumes >= 0
    ):
        raise ValidationError("max_resumes", "a non-negative integer")
    return WatchLoop(
        task_id,
        timeout=None if timeout is None else float(timeout),
        poll_interval=float(poll_interval),
        max_resumes=max_resumes,
        raise_on_failure=raise_on_failure,
        now=time.monotonic(),
    )
