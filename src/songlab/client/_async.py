"""The asynchronous client: the same operations, awaited. Same surface as :class:`Client`."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from contextlib import aclosing
from typing import TypeVar

import httpx
from httpx_sse import EventSource, SSEError

from songlab.client._base import BaseClient, CacheOption, RecordOption
from songlab.client._batch import run_batch_async
from songlab.client._call import NOT_GIVEN, Call, NotGiven, Op, Step, Wait, Watch, Work
from songlab.client._exceptions import MalformedResponse, SonglabError, StreamError, WaitTimeout
from songlab.client._loop import WaitLoop
from songlab.client._models import Event, Page, Task
from songlab.client._pagination import PageOp, PageT, aitems, apages
from songlab.client._retry import RetryPolicy
from songlab.client._typing import Awaiting
from songlab.client._watch import afollow

__all__ = ["AsyncClient"]

_T = TypeVar("_T")


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
        record: RecordOption = None,
        reuse: str | bool = "notebook",
        quiet: bool = False,
        cache: CacheOption = None,
    ) -> None:
        super().__init__(
            api_key,
            base_url=base_url,
            timeout=timeout,
            retry=retry,
            seed=seed,
            record=record,
            reuse=reuse,
            quiet=quiet,
            cache=cache,
        )
        limits = httpx.Limits(
            max_connections=max_connections, max_keepalive_connections=max_connections
        )
        self._http = httpx.AsyncClient(transport=transport, timeout=self.timeout, limits=limits)
        self._sleep: Callable[[float], Awaitable[object]] = asyncio.sleep

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- sending (every decision is in _base, _retry and _loop) -----------------

    async def _request(
        self,
        call: Call,
        deadline: float | None = None,
        expired: Callable[[], SonglabError] | None = None,
    ) -> object:
        retrier = self._retrier(call, deadline=deadline, expired=expired)
        while True:
            try:
                request = self._build_request(call, retrier)
                return self._decode(call, await self._http.send(request))
            except Exception as exc:  # noqa: BLE001 - the retrier decides: retry, or raise it
                await self._sleep(self._backoff(retrier, call, exc))

    async def _perform(
        self, step: Step, deadline: float | None, expired: Callable[[], SonglabError] | None
    ) -> object:
        if isinstance(step, Call):
            return await self._request(step, deadline, expired)
        if isinstance(step, Work):  # file reads, writes and decoding: off the event loop
            return await asyncio.to_thread(step.fn, *step.args)
        if isinstance(step, Wait):
            return await self._wait(step)
        if isinstance(step, Watch):
            return await self._watch(step)
        await run_batch_async(self, step)
        return None

    async def _adrive(
        self,
        op: Op[_T],
        deadline: float | None = None,
        expired: Callable[[], SonglabError] | None = None,
    ) -> _T:
        try:
            step = next(op)
            while True:
                try:
                    result = await self._perform(step, deadline, expired)
                except BaseException as exc:  # noqa: BLE001 - every outcome is the operation's
                    step = op.throw(exc)
                else:
                    step = op.send(result)
        except StopIteration as stop:
            value: _T = stop.value
            return value

    def _drive(
        self,
        op: Op[_T],
        deadline: float | None = None,
        expired: Callable[[], SonglabError] | None = None,
    ) -> Awaiting[_T]:
        return self._adrive(op, deadline, expired)

    def _pages(self, page_op: PageOp[PageT]) -> AsyncIterator[PageT]:
        return apages(self._drive, page_op)

    def _items(self, page_op: PageOp[Page]) -> AsyncIterator[Task]:
        return aitems(self._drive, page_op)

    def _events(self, task_id: str, after: int) -> AsyncIterator[Event]:
        return self._stream(task_id, after=after)

    # -- streams ---------------------------------------------------------------

    async def _watch(self, step: Watch) -> Task:
        w = step.loop
        task_id = w.task_id

        async def get() -> Task:
            return await self._drive(
                self.generations._get_op(task_id, "poll"), w.deadline, w.expired
            )

        final: Task = await afollow(
            w,
            step.callback,
            open_stream=lambda after: self._stream(task_id, after=after, deadline=w.deadline),
            get=get,
            sleep=self._sleep,
        )
        return final

    async def _stream(
        self, task_id: str, *, after: int = 0, deadline: float | None = None
    ) -> AsyncGenerator[Event, None]:
        loop = self._stream_loop(task_id, after, deadline)
        url = self.base_url + loop.path
        while True:
            params, timeout = loop.connect(time.monotonic())
            try:
                async with self._http.stream(
                    "GET", url, params=params, headers=self._stream_headers, timeout=timeout
                ) as response:
                    if response.status_code >= 400:
                        loop.on_refused(
                            response.status_code, await response.aread(), response.headers
                        )
                    else:
                        async for sse in EventSource(response).aiter_sse():
                            event = loop.on_frame(sse.data, sse.id, sse.event)
                            if event is not None:
                                if event.ends_task:
                                    await self._drive(self._ended_op(task_id, event))
                                yield event
                            if loop.finished:
                                return
            except (httpx.RequestError, SSEError) as exc:
                loop.on_broken(exc)
            await self._sleep(loop.next_delay(time.monotonic()))

    async def _wait(self, step: Wait) -> Task:
        task_id = step.task_id
        w = WaitLoop(
            task_id,
            timeout=step.timeout,
            poll_interval=step.poll_interval,
            raise_on_failure=step.raise_on_failure,
            now=time.monotonic(),
        )
        if step.use_stream:
            try:  # aclosing(): the connection is released even when on_event raises
                async with aclosing(self._stream(task_id, deadline=w.deadline)) as events:
                    async for event in events:
                        w.saw(event)
                        if step.on_event is not None:
                            result = step.on_event(event)
                            if inspect.isawaitable(result):
                                await result
            except (WaitTimeout, StreamError, MalformedResponse) as exc:
                w.stream_ended(exc)
        while True:
            task = await self._drive(
                self.generations._get_op(task_id, "poll"), w.deadline, w.expired
            )
            delay = w.on_task(task, time.monotonic())
            if delay is None:
                return task
            await self._sleep(delay)
