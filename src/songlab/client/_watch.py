"""``watch()``: follow one task to its end, telling a callback each event, resume and snapshot.

The decisions are :class:`~songlab.client._loop.WatchLoop`'s (resume after the last
seq, which errors end the watch, polling and the deadline, the same as ``wait()``);
:func:`follow` and :func:`afollow` only open streams, read snapshots and sleep.
``client.watch`` yields a ``Watch`` step that each client performs with them on its own
stream loop (``_stream``, with the deadline) and its snapshot call.
``songlab.client.watch`` (in ``_base``) is the same for any object with the client's
public ``generations.stream(task_id, after=...)`` and ``generations.get(task_id)`` (what
the widgets are written against).
"""

from __future__ import annotations

import inspect
import time
from collections.abc import AsyncIterable, Awaitable, Callable, Iterable
from typing import Any

from songlab.client._loop import WatchLoop, WatchUpdate

__all__ = ["Callback", "afollow", "follow"]

Callback = Callable[[WatchUpdate], object]


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
        except Exception as exc:  # the loop decides: resume, poll or raise
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
        except Exception as exc:  # the loop decides: resume, poll or raise
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


def _ignore(update: WatchUpdate) -> None:
    return None
