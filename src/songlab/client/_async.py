"""The asynchronous client: the same operations, awaited. Same surface as :class:`Client`."""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections.abc import AsyncIterator, Callable
from contextlib import aclosing
from typing import Any

import httpx
from httpx_sse import EventSource, SSEError

from songlab.client._base import NOT_GIVEN, BaseClient, Call, NotGiven, Op, path_id
from songlab.client._errors import (
    APIError,
    StreamError,
    TaskFailed,
    WaitTimeout,
    error_from_response,
)
from songlab.client._models import Event, Task, parse_event
from songlab.client._pagination import AsyncCursorIterator
from songlab.client._retry import RETRYABLE_TRANSPORT_ERRORS, RetryPolicy, is_retryable, next_delay
from songlab.client._sse import StreamResume

__all__ = ["AsyncClient"]

log = logging.getLogger("songlab.client")


class AsyncClient(BaseClient):
    """Asyncio client: every method of :class:`Client`, awaited (streams and lists are
    async iterators). ``async with AsyncClient(api_key, base_url=...) as client: ...``."""

    def __init__(
        self,
        api_key: str,
        *,
        base_url: str,
        timeout: float | httpx.Timeout | NotGiven = NOT_GIVEN,
        retry: RetryPolicy | NotGiven = NOT_GIVEN,
        transport: httpx.AsyncBaseTransport | None = None,
        max_connections: int = 100,
        seed: int | None = None,
    ) -> None:
        super().__init__(api_key, base_url=base_url, timeout=timeout, retry=retry, seed=seed)
        limits = httpx.Limits(max_connections=max_connections,
                              max_keepalive_connections=max_connections)
        self._http = httpx.AsyncClient(transport=transport, timeout=self.timeout, limits=limits)
        self._sleep: Callable[[float], Any] = asyncio.sleep

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- sending ---------------------------------------------------------------

    async def _request(self, call: Call) -> Any:
        attempt = 0
        start = time.monotonic()
        while True:
            attempt += 1
            try:
                response = await self._http.send(self._build_request(call))
                return self._decode(call, response)
            except (APIError, *RETRYABLE_TRANSPORT_ERRORS) as exc:
                delay = next_delay(exc, attempt, time.monotonic() - start, self.retry, self._rng)
                if delay is None:
                    if isinstance(exc, APIError):
                        raise
                    raise self._transport_error(call, exc) from exc
                log.info("retrying %s %s in %.2fs after %s (attempt %d)", call.method,
                         call.path if call.auth else "<signed url>", delay,
                         getattr(exc, "code", None) or type(exc).__name__, attempt)
                await self._sleep(delay)

    async def _adrive(self, op: Op) -> Any:
        try:
            call = next(op)
            while True:
                try:
                    result = await self._request(call)
                except BaseException as exc:
                    call = op.throw(exc)
                else:
                    call = op.send(result)
        except StopIteration as stop:
            return stop.value

    def _drive(self, op: Op) -> Any:
        return self._adrive(op)

    @staticmethod
    def _then(value: Any, fn: Callable[[Any], Any]) -> Any:
        async def chained() -> Any:
            result = fn(await value)
            if inspect.isawaitable(result):
                result = await result
            return result

        return chained()

    def _paginate(self, page_op: Callable[[str | None], Op]) -> AsyncCursorIterator:
        return AsyncCursorIterator(self._drive, page_op)

    # -- streams ---------------------------------------------------------------

    async def _stream(self, task_id: str, *, after: int = 0,
                      deadline: float | None = None) -> AsyncIterator[Event]:
        state = StreamResume(task_id, last_seq=after, rng=self._rng)
        url = f"{self.base_url}/v1/generations/{path_id(task_id, 'task_id')}/stream"
        headers = {**self._auth_headers, "Accept": "text/event-stream", "Cache-Control": "no-store"}
        while True:
            timeout = self.timeout
            if deadline is not None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise WaitTimeout(task_id, 0.0)
                t = self.timeout
                timeout = httpx.Timeout(connect=t.connect, read=min(remaining, 60.0), write=t.write,
                                        pool=t.pool)
            reason = "connection closed before terminal"
            try:
                async with self._http.stream("GET", url, params=state.params(), headers=headers,
                                             timeout=timeout) as response:
                    if response.status_code >= 400:
                        await response.aread()
                        err = error_from_response(response.status_code, response.content,
                                                  method="GET", path=url[len(self.base_url):])
                        if not is_retryable(err):
                            raise err
                        reason = err.code or "error"
                    else:
                        async for sse in EventSource(response).aiter_sse():
                            if not sse.data:
                                continue
                            event = parse_event(sse.data, sse_id=sse.id, sse_event=sse.event)
                            if state.accept(event):
                                yield event
                            if state.finished:
                                return
            except (*RETRYABLE_TRANSPORT_ERRORS, SSEError) as exc:
                reason = type(exc).__name__
            if deadline is not None and time.monotonic() >= deadline:
                raise WaitTimeout(task_id, 0.0)
            delay = state.on_disconnect(reason)
            if delay:
                await self._sleep(delay)

    async def _wait(self, task_id: str, *, timeout: float,
                    on_event: Callable[[Event], Any] | None, raise_on_failure: bool,
                    poll_interval: float, use_stream: bool) -> Task:
        deadline = time.monotonic() + timeout
        last_status: str | None = None
        if use_stream:
            try:
                async with aclosing(self._stream(task_id, deadline=deadline)) as events:
                    async for event in events:
                        last_status = event.status or last_status
                        if on_event is not None:
                            result = on_event(event)
                            if inspect.isawaitable(result):
                                await result
            except WaitTimeout:
                pass
            except StreamError as exc:
                log.info("stream of %s unusable (%s); polling", task_id, exc)
        interval = poll_interval
        while True:
            task = await self.generations.get(task_id)
            last_status = task.status
            if task.done:
                if task.status == "failed" and raise_on_failure:
                    raise TaskFailed(task)
                return task
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise WaitTimeout(task_id, timeout, last_status)
            await self._sleep(min(interval, remaining))
            interval = min(interval * 1.5, 5.0)
