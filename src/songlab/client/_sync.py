"""The synchronous client: sends what the operations of ``_base`` ask for."""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Iterator
from contextlib import closing
from typing import TypeVar

import httpx
from httpx_sse import EventSource, SSEError

from songlab.client._base import BaseClient, CacheOption, RecordOption
from songlab.client._batch import run_batch
from songlab.client._call import NOT_GIVEN, Call, NotGiven, Op, Step, Wait, Watch, Work
from songlab.client._exceptions import MalformedResponse, SonglabError, StreamError, WaitTimeout
from songlab.client._loop import WaitLoop
from songlab.client._models import Event, Page, Task
from songlab.client._pagination import PageOp, PageT, items, pages
from songlab.client._retry import RetryPolicy
from songlab.client._watch import follow

__all__ = ["Client"]

_T = TypeVar("_T")


class Client(BaseClient):
    """Blocking client. ``Client(api_key, base_url=...)``; use as a context manager or ``close()``.

    ``transport=`` is the test seam (``httpx.MockTransport``); the client never
    knows whether it talks to the sandbox or to the real service.
    """

    def __init__(
        self,
        api_key: str,
        *,
        base_url: str,
        timeout: float | httpx.Timeout | NotGiven = NOT_GIVEN,
        retry: RetryPolicy | NotGiven = NOT_GIVEN,
        transport: httpx.BaseTransport | None = None,
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
        self._http = httpx.Client(transport=transport, timeout=self.timeout)
        self._sleep: Callable[[float], None] = time.sleep

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
    ) -> object:
        retrier = self._retrier(call, deadline=deadline, expired=expired)
        while True:
            try:
                request = self._build_request(call, retrier)
                return self._decode(call, self._http.send(request))
            except Exception as exc:  # noqa: BLE001 - the retrier decides: retry, or raise it
                self._sleep(self._backoff(retrier, call, exc))

    def _perform(
        self, step: Step, deadline: float | None, expired: Callable[[], SonglabError] | None
    ) -> object:
        if isinstance(step, Call):
            return self._request(step, deadline, expired)
        if isinstance(step, Work):
            return step.fn(*step.args)
        if isinstance(step, Wait):
            return self._wait(step)
        if isinstance(step, Watch):
            return self._watch(step)
        run_batch(self, step)
        return None

    def _drive(
        self,
        op: Op[_T],
        deadline: float | None = None,
        expired: Callable[[], SonglabError] | None = None,
    ) -> _T:
        try:
            step = next(op)
            while True:
                try:
                    result = self._perform(step, deadline, expired)
                except BaseException as exc:  # noqa: BLE001 - every outcome is the operation's
                    step = op.throw(exc)
                else:
                    step = op.send(result)
        except StopIteration as stop:
            value: _T = stop.value
            return value

    def _pages(self, page_op: PageOp[PageT]) -> Iterator[PageT]:
        return pages(self._drive, page_op)

    def _items(self, page_op: PageOp[Page]) -> Iterator[Task]:
        return items(self._drive, page_op)

    def _events(self, task_id: str, after: int) -> Iterator[Event]:
        return self._stream(task_id, after=after)

    # -- streams ---------------------------------------------------------------

    def _watch(self, step: Watch) -> Task:
        w = step.loop
        task_id = w.task_id
        final: Task = follow(
            w,
            step.callback,
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

    def _wait(self, step: Wait) -> Task:
        task_id = step.task_id
        w = WaitLoop(
            task_id,
            timeout=step.timeout,
            poll_interval=step.poll_interval,
            raise_on_failure=step.raise_on_failure,
            now=time.monotonic(),
        )
        if step.use_stream:
            try:  # closing(): the connection is released even when on_event raises
                with closing(self._stream(task_id, deadline=w.deadline)) as events:
                    for event in events:
                        w.saw(event)
                        if step.on_event is not None:
                            step.on_event(event)
            except (WaitTimeout, StreamError, MalformedResponse) as exc:
                w.stream_ended(exc)
        while True:
            task = self._drive(self.generations._get_op(task_id, "poll"), w.deadline, w.expired)
            delay = w.on_task(task, time.monotonic())
            if delay is None:
                return task
            self._sleep(delay)
