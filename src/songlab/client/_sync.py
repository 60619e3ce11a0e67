"""The synchronous client: sends what the operations of ``_base`` ask for."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
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
from songlab.client._pagination import CursorIterator
from songlab.client._retry import RETRYABLE_TRANSPORT_ERRORS, RetryPolicy, is_retryable, next_delay
from songlab.client._sse import StreamResume

__all__ = ["Client"]

log = logging.getLogger("songlab.client")


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
    ) -> None:
        super().__init__(api_key, base_url=base_url, timeout=timeout, retry=retry, seed=seed)
        self._http = httpx.Client(transport=transport, timeout=self.timeout)
        self._sleep: Callable[[float], None] = time.sleep

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- sending ---------------------------------------------------------------

    def _request(self, call: Call) -> Any:
        attempt = 0
        start = time.monotonic()
        while True:
            attempt += 1
            try:
                response = self._http.send(self._build_request(call))
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
                self._sleep(delay)

    def _drive(self, op: Op) -> Any:
        try:
            call = next(op)
            while True:
                try:
                    result = self._request(call)
                except BaseException as exc:
                    call = op.throw(exc)
                else:
                    call = op.send(result)
        except StopIteration as stop:
            return stop.value

    @staticmethod
    def _then(value: Any, fn: Callable[[Any], Any]) -> Any:
        return fn(value)

    def _paginate(self, page_op: Callable[[str | None], Op]) -> CursorIterator:
        return CursorIterator(self._drive, page_op)

    # -- streams ---------------------------------------------------------------

    def _stream(self, task_id: str, *, after: int = 0,
                deadline: float | None = None) -> Iterator[Event]:
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
                with self._http.stream("GET", url, params=state.params(), headers=headers,
                                       timeout=timeout) as response:
                    if response.status_code >= 400:
                        response.read()
                        err = error_from_response(response.status_code, response.content,
                                                  method="GET", path=url[len(self.base_url):])
                        if not is_retryable(err):
                            raise err
                        reason = err.code or "error"
                    else:
                        for sse in EventSource(response).iter_sse():
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
                self._sleep(delay)

    def _wait(self, task_id: str, *, timeout: float, on_event: Callable[[Event], Any] | None,
              raise_on_failure: bool, poll_interval: float, use_stream: bool) -> Task:
        deadline = time.monotonic() + timeout
        last_status: str | None = None
        if use_stream:
            try:
                for event in self._stream(task_id, deadline=deadline):
                    last_status = event.status or last_status
                    if on_event is not None:
                        on_event(event)
            except WaitTimeout:
                pass
            except StreamError as exc:
                log.info("stream of %s unusable (%s); polling", task_id, exc)
        interval = poll_interval
        while True:
            task = self.generations.get(task_id)
            last_status = task.status
            if task.done:
                if task.status == "failed" and raise_on_failure:
                    raise TaskFailed(task)
                return task
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise WaitTimeout(task_id, timeout, last_status)
            self._sleep(min(interval, remaining))
            interval = min(interval * 1.5, 5.0)
