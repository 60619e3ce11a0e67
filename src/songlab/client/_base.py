"""What the sync and async clients share and that needs no I/O.

Every operation is a generator (sans-I/O): it yields :class:`Call` objects (and
:class:`Work`, blocking local work such as reading a file; :class:`Wait`, following a
task; :class:`Batch`, running a batch) and receives the answer of each; a sender
(``Client._drive`` or ``AsyncClient._drive``) performs them and throws errors back in.
Request building, validation, estimates, budget checks, response parsing and every retry
decision (``_retry.Retrier``, ``_loop``) are written once and unit-tested with
``httpx.MockTransport``; the two clients only send, sleep and (async) hand ``Work`` to a
thread.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import random
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping
from datetime import UTC, datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Final, TypeVar, Unpack

import httpx

import songlab.client._attribution as _attribution
from songlab.client._agent import Agent
from songlab.client._assets import AssetCache, resolve_cache
from songlab.client._batch import BatchArgs, BatchProgress, BatchRequest, BatchResult, batch_op
from songlab.client._budget import Budget, BudgetStack
from songlab.client._call import NOT_GIVEN, Call, NotGiven, Op, Watch, Work, path_id
from songlab.client._compat import Compat
from songlab.client._cost_estimate import Estimate
from songlab.client._create import canonical_body, content_keyed, find_previous
from songlab.client._create_record import CreateRecord
from songlab.client._dedicated import SongTranslations, VoiceClones
from songlab.client._exceptions import MalformedResponse, SonglabError, error_from_response
from songlab.client._files import Files
from songlab.client._generations import Account, Generations, Tools, estimate_op
from songlab.client._handle import TaskHandle
from songlab.client._loop import StreamLoop, WatchUpdate, bounded_timeout, watch_loop
from songlab.client._models import Event, Page, Task, Tool, UploadedFile, parse_tools
from songlab.client._origin import current_origin
from songlab.client._pagination import PageOp, PageT
from songlab.client._record_store import RecordStore, shared_store
from songlab.client._redact import REDACTOR, redact_url
from songlab.client._retry import Retrier, RetryPolicy, retry_after_s
from songlab.client._typing import Slot, operation
from songlab.client._validate import ValidationError, canonical_json, require
from songlab.client._watch import follow
from songlab.client._workflows import Workflows

if TYPE_CHECKING:
    from songlab.client._async import AsyncClient
    from songlab.client._sync import Client

__all__ = ["BaseClient", "CacheOption", "RecordOption", "watch"]

_Self = TypeVar("_Self", bound="BaseClient")

log = logging.getLogger("songlab.client")

DEFAULT_TIMEOUT: Final = httpx.Timeout(30.0, connect=10.0)
USER_AGENT: Final = "songlab-client/0.1"
REUSE_SCOPES: Final = ("notebook", "account")

RecordOption = RecordStore | str | os.PathLike[str] | bool | None
CacheOption = AssetCache | str | os.PathLike[str] | bool | None


def resolve_record(record: object) -> RecordStore | None:
    """``record=`` of a client: None/True -> the default store, False -> none, a path or a
    :class:`RecordStore`."""
    if record is False:
        return None
    if record is None or record is True:
        return shared_store()
    if isinstance(record, RecordStore):
        return record
    if isinstance(record, str | os.PathLike):
        return shared_store(record)
    raise ValidationError("record", f"a path, a RecordStore, None or False, got {record!r}")


class BaseClient:
    """Configuration, state and the pure request/response halves of the client."""

    # The resources: one line each, typed on each client (``Generations[Client]`` ...).
    generations: Slot[Generations[Client], Generations[AsyncClient]] = Slot(Generations)
    tools: Slot[Tools[Client], Tools[AsyncClient]] = Slot(Tools)
    files: Slot[Files[Client], Files[AsyncClient]] = Slot(Files)
    account: Slot[Account[Client], Account[AsyncClient]] = Slot(Account)
    voice_clones: Slot[VoiceClones[Client], VoiceClones[AsyncClient]] = Slot(VoiceClones)
    song_translations: Slot[SongTranslations[Client], SongTranslations[AsyncClient]] = Slot(
        SongTranslations
    )
    workflows: Slot[Workflows[Client], Workflows[AsyncClient]] = Slot(Workflows)
    compat: Slot[Compat[Client], Compat[AsyncClient]] = Slot(Compat)
    agent: Slot[Agent[Client], Agent[AsyncClient]] = Slot(Agent)

    # An opaque slot the client never reads: ``songlab.connect()`` puts the local service it
    # started there (``base_url``, ``admin_token``, ``stop()``); None otherwise.
    sandbox: object = None

    def __init__(
        self,
        api_key: str,
        *,
        base_url: str,
        timeout: float | httpx.Timeout | NotGiven = NOT_GIVEN,
        retry: RetryPolicy | NotGiven = NOT_GIVEN,
        seed: int | None = None,
        record: RecordOption = None,
        reuse: str | bool = "notebook",
        quiet: bool = False,
        cache: CacheOption = None,
    ) -> None:
        require(isinstance(api_key, str) and bool(api_key.strip()), "api_key", "a non-empty string")
        # A stray newline or control character would make httpx refuse the header with an
        # error that quotes the key: strip the ends, refuse the rest naming only the rule.
        api_key = api_key.strip()
        require(
            api_key.isascii() and api_key.isprintable() and " " not in api_key,
            "api_key",
            "printable ASCII without spaces or control characters",
        )
        require(
            isinstance(base_url, str) and base_url.startswith(("http://", "https://")),
            "base_url",
            "an http:// or https:// URL",
        )
        self.base_url = base_url.rstrip("/")
        self._plain_headers = {
            "Accept": "*/*",
            "Accept-Encoding": "gzip, deflate",
            "User-Agent": USER_AGENT,
        }
        # The spec: every authenticated request carries the bearer header and
        # Content-Type: application/json, except multipart uploads.
        self._auth_headers = {
            **self._plain_headers,
            "Authorization": f"Bearer {api_key}",
            "Content-Type": "application/json",
        }
        self.timeout = DEFAULT_TIMEOUT if isinstance(timeout, NotGiven) else httpx.Timeout(timeout)
        self._extensions = {"timeout": self.timeout.as_dict()}
        self._longest_timeout = max(
            (v for v in self.timeout.as_dict().values() if v is not None), default=float("inf")
        )
        self.retry = RetryPolicy() if isinstance(retry, NotGiven) else retry
        self._rng = random.Random(seed)
        self._tools: tuple[Tool, ...] | None = None
        self._uploads: dict[str, UploadedFile] = {}
        self._finished: set[str] = set()  # tasks whose end (and status) the record has
        self._budgets = BudgetStack()
        self.key_id = _attribution.key_id(api_key)  # non-secret; names the key in ledgers
        if reuse is True:
            reuse = "notebook"
        require(
            reuse is False or reuse in REUSE_SCOPES,
            "reuse",
            f"'notebook', 'account' or False, got {reuse!r}",
        )
        self.reuse: str | bool = reuse
        self.record: RecordStore | None = resolve_record(record)
        self.quiet = bool(quiet)
        self.cache: AssetCache | None = resolve_cache(cache)
        REDACTOR.add(api_key)

    @property
    def _c(self: _Self) -> _Self:
        """The client itself (what a method of a resource reaches its client by)."""
        return self

    def __repr__(self) -> str:
        return f"{type(self).__name__}(base_url={self.base_url!r}, api_key=<redacted>)"

    # -- the operations on the client itself -----------------------------------

    @operation
    def estimate(
        self,
        *,
        tool_id: str | NotGiven = NOT_GIVEN,
        operation: str | NotGiven = NOT_GIVEN,
        model: str | NotGiven = NOT_GIVEN,
        route: str | NotGiven = NOT_GIVEN,
        tier: str | NotGiven = NOT_GIVEN,
        max_budget: int | NotGiven = NOT_GIVEN,
        license: int | str | NotGiven = NOT_GIVEN,
        version: str | NotGiven = NOT_GIVEN,
    ) -> Op[Estimate]:
        """What a create would bill -> :class:`Estimate` (Decimal USD), before sending it.

        Name the create by ``tool_id``, ``operation`` (+ ``model``), a create
        ``route`` (``"/v1/karaoke-tracks"``, ``"/v1/voice-clones"``,
        ``"/v7/generate/song"`` ...) or an Agent One ``tier`` (+ ``max_budget``).
        """
        return estimate_op(
            self,
            tool_id=tool_id,
            operation=operation,
            model=model,
            route=route,
            tier=tier,
            max_budget=max_budget,
            license=license,
            version=version,
        )

    @operation
    def watch(
        self,
        task: str | TaskHandle[Client] | TaskHandle[AsyncClient],
        callback: Callable[[WatchUpdate], object] | None = None,
        *,
        timeout: float | None = None,
        poll_interval: float = 0.5,
        max_resumes: int = 50,
        raise_on_failure: bool = True,
    ) -> Op[Task]:
        """Follow ``task`` (a task id or a handle) to its end -> the final :class:`Task`.

        ``callback(update)`` (on an :class:`AsyncClient` a function or a coroutine function)
        gets a :class:`WatchUpdate` for each stream event, each resume (a stream that ended
        without ``terminal`` is reopened after the last seq it saw, at most ``max_resumes``
        times; a refusal such as ``NotFound`` is raised) and each task snapshot read once
        the stream is over (polled every ``poll_interval`` s, growing, until the task is
        done). ``timeout``: None follows until the end, else past it raises
        :class:`WaitTimeout`. A failed task raises :class:`TaskFailed` unless
        ``raise_on_failure=False``. What the callback raises ends the watch.
        """
        loop = watch_loop(
            task,
            timeout=timeout,
            poll_interval=poll_interval,
            max_resumes=max_resumes,
            raise_on_failure=raise_on_failure,
        )
        return _followed(Watch(loop, callback))

    @operation
    def batch(
        self,
        requests: Iterable[BatchRequest],
        *,
        on_progress: Callable[[BatchProgress], object] | None = None,
        **options: Unpack[BatchArgs],
    ) -> Op[BatchResult]:
        """Create many native generations through the record -> :class:`BatchResult`, one
        :class:`BatchRow` per request (failures are rows, not exceptions).

        ``requests``: dicts of ``generations.create`` arguments (``tool_id`` or
        ``operation`` + ``model``, ``payload``, ``license``, ``take``), all checked and
        priced before anything is sent. ``budget_usd``: refuse to start (``BudgetExceeded``,
        nothing sent) when the new creates' list price is over it. ``concurrency``: creates
        in flight at once (8). A ``RateLimited`` answer slows that tool down (an adaptive
        spacing from ``pace_base_s`` up to ``pace_max_s``) and the request goes back in line.
        Run it again after a crash or a kernel restart: tasks already made are re-attached
        from the record and followed, only the rest are created. ``wait``: follow every
        task to its end (else status is the one at creation; ``timeout``,
        ``poll_interval``). ``on_progress`` gets a :class:`BatchProgress` as the batch
        moves (``songlab.widgets.batch`` shows it as a bar in a notebook or a line on a
        terminal, and returns the result as a frame). The options: :class:`BatchArgs`.
        """
        return batch_op(self, requests, options, on_progress)

    def budget(
        self,
        *,
        usd: Decimal | int | str,
        spent: Decimal | int | str = 0,
        project: str | None = None,
        tag: str | None = None,
        key_id: str | None = None,
        label: str | None = None,
    ) -> Budget:
        """``with client.budget(usd="2.50"):`` refuses creates that would exceed it; scoped to
        the creates of one ``project``, ``tag`` or ``key_id`` when given, starting from
        ``spent`` (``songlab.ledger.budgets.hold`` reads a team's budgets file this way)."""
        amounts = []
        for name, value in (("usd", usd), ("spent", spent)):
            try:
                amount = Decimal(str(value))
            except ArithmeticError:
                raise ValidationError(name, f"a decimal amount, got {value!r}") from None
            require(amount.is_finite() and amount >= 0, name, f"a non-negative amount, got {value}")
            amounts.append(amount)
        if project is not None or tag is not None:
            _attribution.make_labels(project, [tag] if tag is not None else [])
        return Budget(
            amounts[0],
            self._budgets,
            spent=amounts[1],
            project=project,
            tag=tag,
            key_id=key_id,
            label=label,
        )

    def task(self: _Self, task_id: str) -> TaskHandle[_Self]:
        """A handle on an existing task, from its id alone (e.g. after a kernel restart)."""
        path_id(task_id, "task_id")
        return TaskHandle(task_id, None, None, None, {}, self)

    def previous_create(
        self, route: str, body: Mapping[str, object], *, take: int = 1
    ) -> CreateRecord | None:
        """The recorded create this one would re-attach to (same account, route, canonical
        request, scope and take), or None: a local look-up, nothing is sent. ``body`` is the
        request body (a native create's ``payload_json`` as its text or as the object)."""
        _, scope = self._scope()
        if scope is None or self.record is None:
            return None
        payload = body.get("payload_json")
        if isinstance(payload, str):
            try:
                payload = json.loads(payload)
            except ValueError:
                pass  # sent as the string it is
        text = None if payload is None else canonical_json(payload)
        canonical = canonical_body({k: v for k, v in body.items() if k != "payload_json"}, text)
        sha = hashlib.sha256(canonical.encode()).hexdigest()
        identity = content_keyed(canonical, sha, self._uploads)
        return find_previous(self, route, identity, scope, take, sha)

    # -- implemented by the senders (Client, AsyncClient) ------------------------

    def _drive(
        self,
        op: Op[object],
        deadline: float | None = None,
        expired: Callable[[], SonglabError] | None = None,
    ) -> object:
        raise NotImplementedError  # pragma: no cover

    def _pages(self, page_op: PageOp[PageT]) -> Iterator[PageT] | AsyncIterator[PageT]:
        raise NotImplementedError  # pragma: no cover

    def _items(self, page_op: PageOp[Page]) -> Iterator[Task] | AsyncIterator[Task]:
        raise NotImplementedError  # pragma: no cover

    def _events(self, task_id: str, after: int) -> Iterator[Event] | AsyncIterator[Event]:
        raise NotImplementedError  # pragma: no cover

    # -- requests --------------------------------------------------------------

    def _build_request(self, call: Call, retrier: Retrier | None = None) -> httpx.Request:
        """The request of ``call``, built directly (no merge with client defaults: the
        get path is measured against raw httpx by ``benchmarks/client_overhead.py``); its
        timeouts end no later than the retrier's deadline."""
        headers = self._auth_headers if call.auth else self._plain_headers
        if call.files is not None:
            headers = {k: v for k, v in headers.items() if k != "Content-Type"}
        if call.idempotency_key is not None:
            headers = {**headers, "Idempotency-Key": call.idempotency_key}
        if call.path.startswith(("http://", "https://")):
            url = call.path
            if not call.auth:  # a signed URL: a bearer of its own, never shown in a log
                REDACTOR.add_url(url)
        else:
            url = self.base_url + call.path
        extensions = self._extensions
        if retrier is not None:
            remaining = retrier.deadline - time.monotonic()
            if remaining < self._longest_timeout:
                extensions = {"timeout": bounded_timeout(self.timeout, remaining).as_dict()}
        return httpx.Request(
            call.method,
            url,
            params=call.params,
            json=call.json,
            files=call.files,
            headers=headers,
            extensions=extensions,
        )

    @staticmethod
    def _decode(call: Call, response: httpx.Response) -> object:
        """The answer of a call (decoded JSON, or the bytes), or the exception of its error
        body (with what a ``Retry-After`` header asked for)."""
        if response.status_code >= 400:
            err = error_from_response(
                response.status_code,
                response.content,
                method=call.method,
                path=_loggable(call.path),
            )
            err.retry_after_s = retry_after_s(response.headers)
            raise err
        if call.expect == "bytes":
            return response.content
        if not response.content:
            return None
        try:
            decoded: object = json.loads(response.content)
        except ValueError:
            kind = response.headers.get("content-type", "no content-type")
            raise MalformedResponse(
                f"the body is not JSON ({kind}, {len(response.content)} bytes)",
                method=call.method,
                path=_loggable(call.path),
                status_code=response.status_code,
            ) from None
        return decoded

    def _retrier(
        self,
        call: Call,
        *,
        deadline: float | None = None,
        expired: Callable[[], SonglabError] | None = None,
    ) -> Retrier:
        return Retrier(
            call.kind,
            self.retry,
            self._rng,
            now=time.monotonic(),
            describe=(call.method, _loggable(call.path)),
            key=call.idempotency_key,
            deadline=deadline,
            expired=expired,
        )

    def _backoff(self, retrier: Retrier, call: Call, exc: Exception) -> float:
        """The sleep before the next attempt of ``call`` (raises when retrying is over)."""
        code = getattr(exc, "code", None)
        if call.final_codes and code in call.final_codes:
            if call.idempotency_key is not None and isinstance(exc, SonglabError):
                exc.idempotency_key = call.idempotency_key  # type: ignore[attr-defined]
            raise exc
        delay = retrier.on_error(exc, time.monotonic())
        log.info(
            "retrying %s %s in %.2fs after %s (attempt %d)",
            call.method,
            _loggable(call.path),
            delay,
            code or type(exc).__name__,
            retrier.attempts,
        )
        return delay

    def _stream_loop(self, task_id: str, after: int, deadline: float | None) -> StreamLoop:
        path = f"/v1/generations/{path_id(task_id, 'task_id')}/stream"
        return StreamLoop(
            task_id,
            path=path,
            after=after,
            policy=self.retry,
            rng=self._rng,
            timeout=self.timeout,
            now=time.monotonic(),
            deadline=deadline,
        )

    @property
    def _stream_headers(self) -> dict[str, str]:
        return {**self._auth_headers, "Accept": "text/event-stream", "Cache-Control": "no-store"}

    # -- shared operations -----------------------------------------------------

    def _tools_op(self, refresh: bool = False) -> Op[tuple[Tool, ...]]:
        if self._tools is None or refresh:
            self._tools = parse_tools((yield Call("GET", "/v1/tools")))
        return self._tools

    def _tool_by_id(self, tool_id: str) -> Op[Tool | None]:
        tools = yield from self._tools_op()
        for t in tools:
            if t.id == tool_id:
                return t
        return None

    def _scope(self) -> tuple[str | None, str | None]:
        """(origin, reuse scope) of a create made now; scope None when reuse is off."""
        origin = current_origin()
        if self.reuse is False:
            return origin, None
        return origin, "account" if self.reuse == "account" else (origin or "unknown")

    def _seen_ended_op(self, task_id: str, status: str | None, via: str) -> Op[None]:
        """Note in the record when this client first saw ``task_id`` end (its own clock),
        with the status it ended with (None if what it saw did not say) and how (``via``:
        "stream", "poll" or "get"). Once per task and client; a record that cannot be
        written is logged and never fails the read."""
        record = self.record
        if record is None or task_id in self._finished:
            return None
        at = datetime.now(UTC)
        try:
            yield Work(
                functools.partial(
                    record.finish,
                    task_id=task_id,
                    key_id=self.key_id,
                    at=at,
                    status=status,
                    via=via,
                )
            )
        except Exception:  # noqa: BLE001 - the task is read: never fail the read
            log.warning("could not note the end of task %s in %s", task_id, record.path)
            return None
        if status is not None:
            self._finished.add(task_id)
        return None

    def _ended_op(self, task_id: str, event: Event) -> Op[None]:
        """A stream event that shows the task ended, noted in the record."""
        return (yield from self._seen_ended_op(task_id, event.final_status, "stream"))

    def _say(self, message: str) -> None:
        """One line a notebook shows (stdout, like ``connect()``'s), also logged; ``quiet``
        clients only log it."""
        log.info("%s", message)
        if not self.quiet:
            print(f"songlab: {message}", flush=True)


def watch(
    client: object,
    task: object,
    callback: Callable[[WatchUpdate], object] | None = None,
    *,
    timeout: float | None = None,
    poll_interval: float = 0.5,
    max_resumes: int = 50,
    raise_on_failure: bool = True,
) -> object:
    """``client.watch(task, callback, ...)`` for a songlab client (awaitable on an
    :class:`AsyncClient`); for any other object with the client's public
    ``generations.stream``/``generations.get``, the same loop over those (blocking)."""
    loop = watch_loop(
        task,
        timeout=timeout,
        poll_interval=poll_interval,
        max_resumes=max_resumes,
        raise_on_failure=raise_on_failure,
    )
    if isinstance(client, BaseClient):
        return client._drive(_followed(Watch(loop, callback)))
    if not hasattr(client, "generations"):
        raise TypeError(
            "watch: client must be a songlab client or have the client's generations.stream "
            f"and generations.get, got {type(client).__name__}"
        )
    generations = client.generations  # a duck-typed client
    return follow(
        loop,
        callback,
        open_stream=lambda after: generations.stream(loop.task_id, after=after),
        get=lambda: generations.get(loop.task_id),
        sleep=time.sleep,
    )


def _followed(step: Watch) -> Op[Task]:
    task: Task = yield step
    return task


def _loggable(path: str) -> str:
    """A path safe to show: signed URLs lose their token."""
    if path.startswith(("http://", "https://")):
        return redact_url(path)
    return path
