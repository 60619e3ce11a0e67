"""``watch()``: follow one task to its end, telling a callback each event, resume and snapshot.

The decisions are :class:`~songlab.client._loop.WatchLoop`'s (resume after the last
seq, which errors end the watch, polling and the deadline, the same as ``wait()``);
:func:`follow` and :func:`afollow` only open streams, read snapshots and sleep.
``Client.watch`` / ``AsyncClient.watch`` run them on the client's own stream loop
(``_stream``, with the deadline) and its snapshot call. :func:`watch` is the same
for any object with the client's public ``generations.stream(task_id, after=...)``
and ``generations.get(task_id)`` (what the widgets are written against).
"""

from __future__ import annotations

import inspect
import time
from collections.abc import AsyncIterable, Awaitable, Callable, Iterable
from typing import Any

from songlab.client._base import BaseClient
from songlab.client._loop import WatchLoop, WatchUpdate
from songlab.client._validate import ValidationError

__all__ = ["Callback", "afollow", "follow", "watch", "watch_loop"]

Callback = Callable[[WatchUpdate], object]


def watch_loop(
    task: Any,
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


def follow(
    w: WatchLoop,
    callback: Callback | None,
    *,
    open_stream: Callable[[int], Iterable[Any]],
    get: Callable[[], Any],
    sleep: Callable[[float], object],
) -> Any:
    """Drive ``w`` with blocking calls; returns the final snapshot."""
    tell: Callback = callback if callback is not None else _ignore
    while w.streaming:
        error: Exception | None = None
        in_callback = False  # what the callback raises is the caller's, never a stream drop
        try:
            events = open_stream(w.last_seq)
            try:
                for event in events:
                    update = w.on_event(event)
                    if update is not None:
                        in_callback = True
                        tell(update)
                        in_callback = False
                    if w.ended:
                        break
            finally:
                close = getattr(events, "close", None)
                if callable(close):  # the connection is released even when the callback raises
                    close()
        except Exception as exc:  # noqa: BLE001 - the loop decides: resume, poll or raise
            if in_callback:
                raise
            error = exc
        resumed = w.on_stream_end(error)
        if resumed is not None:
            tell(resumed)
    while True:
        task = get()
        tell(WatchUpdate("snapshot", w.task_id, task=task))
        delay = w.on_task(task, time.monotonic())
        if delay is None:
            return task
        sleep(delay)


async def afollow(
    w: WatchLoop,
    callback: Callback | None,
    *,
    open_stream: Callable[[int], AsyncIterable[Any]],
    get: Callable[[], Awaitable[Any]],
    sleep: Callable[[float], Awaitable[object]],
) -> Any:
    """:func:`follow`, awaited; ``callback`` may be a coroutine function."""

    async def tell(update: WatchUpdate) -> None:
        if callback is not None:
            result = callback(update)
            if inspect.isawaitable(result):
                await result

    while w.streaming:
        error: Exception | None = None
        in_callback = False  # what the callback raises is the caller's, never a stream drop
        try:
            events = open_stream(w.last_seq)
            try:
                async for event in events:
                    update = w.on_event(event)
                    if update is not None:
                        in_callback = True
                        await tell(update)
                        in_callback = False
                    if w.ended:
                        break
            finally:
                aclose = getattr(events, "aclose", None)
                if callable(aclose):
                    await aclose()
        except Exception as exc:  # noqa: BLE001 - the loop decides: resume, poll or raise
            if in_callback:
                raise
            error = exc
        resumed = w.on_stream_end(error)
        if resumed is not None:
            await tell(resumed)
    while True:
        task = await get()
        await tell(WatchUpdate("snapshot", w.task_id, task=task))
        delay = w.on_task(task, time.monotonic())
        if delay is None:
            return task
        await sleep(delay)


def watch(
    client: Any,
    task: Any,
    callback: Callback | None = None,
    *,
    timeout: float | None = None,
    poll_interval: float = 0.5,
    max_resumes: int = 50,
    raise_on_failure: bool = True,
) -> Any:
    """``client.watch(task, callback, ...)`` for a songlab client (awaitable on an
    :class:`AsyncClient`); for any other object with the client's public
    ``generations.stream``/``generations.get``, the same loop over those (blocking)."""
    options: dict[str, Any] = {
        "timeout": timeout,
        "poll_interval": poll_interval,
        "max_resumes": max_resumes,
        "raise_on_failure": raise_on_failure,
    }
    if isinstance(client, BaseClient):
        return client.watch(task, callback, **options)
    w = watch_loop(task, **options)
    generations = client.generations
    return follow(
        w,
        callback,
        open_stream=lambda after: generations.stream(w.task_id, after=after),
        get=lambda: generations.get(w.task_id),
        sleep=time.sleep,
    )


def _ignore(update: WatchUpdate) -> None:
    return None
