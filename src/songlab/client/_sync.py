"""The synchronous client: sends what the operations of ``_base`` ask for."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Generator, Iterable, Mapping
from contextlib import closing
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import httpx
from httpx_sse import EventSource, SSEError

from songlab.client._assets import AssetCache
from songlab.client._base import NOT_GIVEN, BaseClient, Call, NotGiven, Op, Step, Work
from songlab.client._errors import MalformedResponse, SonglabError, StreamError, WaitTimeout
from songlab.client._loop import WaitLoop, WatchUpdate
from songlab.client._models import Event, Task
from songlab.client._pagination import CursorIterator
from songlab.client._record import RecordStore
from songlab.client._retry import RetryPolicy
from songlab.client._watch import follow, watch_loop

if TYPE_CHECKING:
    from songlab.client._agent import Agent
    from songlab.client._compat import Compat
    from songlab.client._dedicated import SongTranslations, VoiceClones
    from songlab.client._estimate import Estimate
    from songlab.client._files import Files
    from songlab.client._generations import Account, Generations, Tools
    from songlab.client._handle import TaskHandle
    from songlab.client._workflows import Workflows

__all__ = ["Client"]


class Client(BaseClient):
    """Blocking client. ``Client(api_key, base_url=...)``; use as a context manager or ``close()``.

    ``transport=`` is the test seam (``httpx.MockTransport``); the client never
    knows whether it talks to the sandbox or to the real service.
    """

    if TYPE_CHECKING:  # the shared resources, as this client's type sees them
        generations: Generations[Client]
        tools: Tools[Client]
        files: Files[Client]
        account: Account[Client]
        voice_clones: VoiceClones[Client]
        song_translations: SongTranslations[Client]
        workflows: Workflows[Client]
        compat: Compat[Client]
        agent: Agent[Client]

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
        ) -> Estimate: ...

    def __init__(
        self,
        api_key: str,
        *,
        base_url: str,
        timeout: float | httpx.Timeout | NotGiven = NOT_GIVEN,
        retry: RetryPolicy | NotGiven = NOT_GIVEN,
        transport: httpx.BaseTransport | None = None,
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
        self._http = httpx.Client(transport=transport, timeout=self.timeout)
        self._sleep: Callable[[float], None] = time.sleep

    def batch(
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
        """Create many native generations through the record -> a pandas frame, one row per
        request (``request, task_id, status, reused, take, tool_id, cost_usd, cost_source,
        file_ids, error``); failures are rows, not exceptions.

        ``requests``: dicts of ``generations.create`` arguments (``tool_id`` or
        ``operation`` + ``model``, ``payload``, ``license``, ``take``), all checked and
        priced before anything is sent. ``budget_usd``: refuse to start (``BudgetExceeded``,
        nothing sent) when the new creates' list price is over it. ``concurrency``: creates
        in flight at once. A ``RateLimited`` answer slows that tool down (an adaptive
        spacing from ``pace_base_s`` up to ``pace_max_s``) and the request goes back in line.
        Run it again after a crash or a kernel restart: tasks already made are re-attached
        from the record and followed, only the rest are created. ``wait``: follow every
        task to its end (else status is the one at creation). ``progress``: one bar in a
        notebook, one line on a terminal (None: when interactive).
        """
        from songlab.client._batch import options, run_batch

        return run_batch(
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

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- sending (every decision is in _base, _retry and _loop) -----------------

    def _request(
        self,
        call: Call,
        deadline: float | None = None,
        expired: Callable[[], SonglabError] | None = None,
    ) -> Any:
        retrier = self._retrier(call, deadline=deadline, expired=expired)
        while True:
            try:
                request = self._build_request(call, retrier)
                return self._decode(call, self._http.send(request))
            except Exception as exc:
                self._sleep(self._backoff(retrier, call, exc))

    def _perform(
        self, step: Step, deadline: float | None, expired: Callable[[], SonglabError] | None
    ) -> Any:
        if isinstance(step, Work):
            return step.fn(*step.args)
        return self._request(step, deadline, expired)

    def _drive(
        self,
        op: Op,
        deadline: float | None = None,
        expired: Callable[[], SonglabError] | None = None,
    ) -> Any:
        try:
            step = next(op)
            while True:
                try:
                    result = self._perform(step, deadline, expired)
                except BaseException as exc:
                    step = op.throw(exc)
                else:
                    step = op.send(result)
        except StopIteration as stop:
            return stop.value

    @staticmethod
    def _then(value: Any, fn: Callable[[Any], Any]) -> Any:
        return fn(value)

    def _paginate(self, page_op: Callable[[str | None], Op]) -> CursorIterator:
        return CursorIterator(self._drive, page_op)

    # -- streams ---------------------------------------------------------------

    def watch(
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

        ``callback(update)`` gets a :class:`WatchUpdate` for each stream event, each resume
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
        final: Task = follow(
            w,
            callback,
            open_stream=lambda after: self._stream(task_id, after=after, deadline=w.deadline),
            get=lambda: self._drive(
                self.generations._get_op(task_id, "poll"), w.deadline, w.expired
            ),
            sleep=self._sleep,
        )
        return final

    def _stream(
        self, task_id: str, *, after: int = 0, deadline: float | None = None
    ) -> Generator[Event, None, None]:
        loop = self._stream_loop(task_id, after, deadline)
        url = self.base_url + loop.path
        while True:
            params, timeout = loop.connect(time.monotonic())
            try:
                with self._http.stream(
                    "GET", url, params=params, headers=self._stream_headers, timeout=timeout
                ) as response:
                    if response.status_code >= 400:
                        loop.on_refused(response.status_code, response.read(), response.headers)
                    else:
                        for sse in EventSource(response).iter_sse():
                            event = loop.on_frame(sse.data, sse.id, sse.event)
                            if event is not None:
                                if event.ends_task:
                                    self._drive(self._ended_op(task_id, event))
                                yield event
                            if loop.finished:
                                return
            except (httpx.RequestError, SSEError) as exc:
                loop.on_broken(exc)
            self._sleep(loop.next_delay(time.monotonic()))

    def _wait(
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
            try:  # closing(): the connection is released even when on_event raises
                with closing(self._stream(task_id, deadline=w.deadline)) as events:
                    for event in events:
                        w.saw(event)
                        if on_event is not None:
                            on_event(event)
            except (WaitTimeout, StreamError, MalformedResponse) as exc:
                w.stream_ended(exc)
        while True:
            task: Task = self._drive(
                self.generations._get_op(task_id, "poll"), w.deadline, w.expired
            )
            delay = w.on_task(task, time.monotonic())
            if delay is None:
                return task
            self._sleep(delay)
