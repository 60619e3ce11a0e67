"""The asynchronous client: the same operations, awaited. Same surface as :class:`Client`."""

from __future__ import annotations

import asyncio
import inspect
import os
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable, Mapping
from contextlib import aclosing
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import httpx
from httpx_sse import EventSource, SSEError

from songlab.client._assets import AssetCache
from songlab.client._base import NOT_GIVEN, BaseClient, Call, NotGiven, Op, Step, Work
from songlab.client._errors import MalformedResponse, SonglabError, StreamError, WaitTimeout
from songlab.client._loop import WaitLoop, WatchUpdate
from songlab.client._models import Event, Task
from songlab.client._pagination import AsyncCursorIterator
from songlab.client._record import RecordStore
from songlab.client._retry import RetryPolicy
from songlab.client._watch import afollow, watch_loop

if TYPE_CHECKING:
    from songlab.client._agent import Agent
    from songlab.client._compat import Compat
    from songlab.client._dedicated import SongTranslations, VoiceClones
    from songlab.client._estimate import Estimate
    from songlab.client._files import Files
    from songlab.client._generations import Account, Generations, Tools
    from songlab.client._handle import TaskHandle
    from songlab.client._typing import Awaiting
    from songlab.client._workflows import Workflows

__all__ = ["AsyncClient"]


class AsyncClient(BaseClient):
    """Asyncio client: every method of :class:`Client`, awaited (streams and lists are
    async iterators). ``async with AsyncClient(api_key, base_url=...) as client: ...``."""

    if TYPE_CHECKING:  # the shared resources, as this client's type sees them
        generations: Generations[AsyncClient]
        tools: Tools[AsyncClient]
        files: Files[AsyncClient]
        account: Account[AsyncClient]
        voice_clones: VoiceClones[AsyncClient]
        song_translations: SongTranslations[AsyncClient]
        workflows: Workflows[AsyncClient]
        compat: Compat[AsyncClient]
        agent: Agent[AsyncClient]

        def estimate(
            self,
            *,
            tool_id: str | NotGiven = ...,
            operation: str | NotGiven = ...,
            model: str | NotGiven = ...,
            route: str | NotGiven = ...,
            tier: str | NotGiven = ...,
            max_budget: int | NotGiven = ...,
            license: int | str | NotGiven = ...,
            version: str | NotGiven = ...,
        ) -> Awaiting[Estimate]: ...

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
        record: RecordStore | str | os.PathLike[str] | bool | None = None,
        reuse: str | bool = "notebook",
        quiet: bool = False,
        cache: AssetCache | str | os.PathLike[str] | bool | None = None,
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
        self._sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep

    async def batch(
        self,
        requests: Iterable[Mapping[str, Any]],
        *,
        concurrency: int = 8,
        budget_usd: Decimal | int | str | None = None,
        wait: bool = True,
        timeout: float = 600.0,
        poll_interval: float = 0.5,
        progress: bool | None = None,
        pace_base_s: float = 0.05,
        pace_max_s: float = 60.0,
    ) -> Any:  # a pandas DataFrame
        """:meth:`songlab.client.Client.batch` for the async client: the same arguments, checks,
        pacing, resume and result frame; creates and waits run as asyncio tasks."""
        from songlab.client._batch import options, run_batch_async

        return await run_batch_async(
            self,
            list(requests),
            options(
                concurrency,
                budget_usd,
                wait,
                timeout,
                poll_interval,
                progress,
                pace_base_s,
                pace_max_s,
            ),
        )

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
    ) -> Any:
        retrier = self._retrier(call, deadline=deadline, expired=expired)
        while True:
            try:
                request = self._build_request(call, retrier)
                return self._decode(call, await self._http.send(request))
            except Exception as exc:
                await self._sleep(self._backoff(retrier, call, exc))

    async def _perform(
        self, step: Step, deadline: float | None, expired: Callable[[], SonglabError] | None
    ) -> Any:
        if isinstance(step, Work):  # file reads, writes and decoding: off the event loop
            return await asyncio.to_thread(step.fn, *step.args)
        return await self._request(step, deadline, expired)

    async def _adrive(
        self,
        op: Op,
        deadline: float | None = None,
        expired: Callable[[], SonglabError] | None = None,
    ) -> Any:
        try:
            step = next(op)
            while True:
                try:
                    result = await self._perform(step, deadline, expired)
                except BaseException as exc:
                    step = op.throw(exc)
                else:
                    step = op.send(result)
        except StopIteration as stop:
            return stop.value

    def _drive(
        self,
        op: Op,
        deadline: float | None = None,
        expired: Callable[[], SonglabError] | None = None,
    ) -> Any:
        return self._adrive(op, deadline, expired)

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

    async def watch(
        self,
        task: str | TaskHandle[Any],
        callback: Callable[[WatchUpdate], object] | None = None,
        *,
        timeout: float | None = None,
        poll_interval: float = 0.5,
        max_resumes: int = 50,
        raise_on_failure: bool = True,
    ) -> Task:
        """Follow ``task`` (a task id or a handle) to its end -> the final :class:`Task`.

        ``callback(update)`` (a function or a coroutine function) gets a :class:`WatchUpdate` for each stream event, each resume
        (a stream that ended without ``terminal`` is reopened after the last seq it saw, at
        most ``max_resumes`` times; a refusal such as ``NotFound`` is raised) and each task
        snapshot read once the stream is over (polled every ``poll_interval`` s, growing,
        until the task is done). ``timeout``: None follows until the end, else past it
        raises :class:`WaitTimeout`. A failed task raises :class:`TaskFailed` unless
        ``raise_on_failure=False``. What the callback raises ends the watch.
        """
        w = watch_loop(
            task,
            timeout=timeout,
            poll_interval=poll_interval,
            max_resumes=max_resumes,
            raise_on_failure=raise_on_failure,
        )
        task_id = w.task_id

        async def get() -> Task:
            got: Task = await self._drive(
                self.generations._get_op(task_id, "poll"), w.deadline, w.expired
            )
            return got

        final: Task = await afollow(
            w,
            callback,
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

    async def _wait(
        self,
        task_id: str,
        *,
        timeout: float,
        on_event: Callable[[Event], Any] | None,
        raise_on_failure: bool,
        poll_interval: float,
        use_stream: bool,
    ) -> Task:
        w = WaitLoop(
            task_id,
            timeout=timeout,
            poll_interval=poll_interval,
            raise_on_failure=raise_on_failure,
            now=time.monotonic(),
        )
        if use_stream:
            try:  # aclosing(): the connection is released even when on_event raises
                async with aclosing(self._stream(task_id, deadline=w.deadline)) as events:
                    async for event in events:
                        w.saw(event)
                        if on_event is not None:
                            result = on_event(event)
                            if inspect.isawaitable(result):
                                await result
            except (WaitTimeout, StreamError, MalformedResponse) as exc:
                w.stream_ended(exc)
        while True:
            task: Task = await self._drive(
                self.generations._get_op(task_id, "poll"), w.deadline, w.expired
            )
            delay = w.on_task(task, time.monotonic())
            if delay is None:
                return task
            await self._sleep(delay)
