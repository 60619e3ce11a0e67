"""What the sync and async clients share and that needs no I/O.

Every operation is a generator (sans-I/O): it yields :class:`Call` objects (and
:class:`Work`, blocking local work such as reading a file) and receives the
answer of each; a sender (``Client._drive`` or ``AsyncClient._drive``) performs
them and throws errors back in. Request building, validation, estimates, budget
checks, response parsing and every retry decision (``_retry.Retrier``,
``_loop``) are written once and unit-tested with ``httpx.MockTransport``; the
two clients only send, sleep and (async) hand ``Work`` to a thread.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import random
import time
from collections.abc import Callable
from datetime import UTC, datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Final, TypeVar

import httpx

import songlab.client._attribution as _attribution
from songlab.client._assets import AssetCache, resolve_cache
from songlab.client._budget import Budget, BudgetStack
from songlab.client._call import (
    NOT_GIVEN,
    Call,
    NotGiven,
    Op,
    Step,
    Work,
    new_idempotency_key,
    path_id,
)
from songlab.client._errors import (
    Forbidden,
    MalformedResponse,
    NotFound,
    SonglabError,
    error_from_response,
)
from songlab.client._loop import StreamLoop, WatchUpdate, bounded_timeout
from songlab.client._models import Event, Tool, UploadedFile, parse_task, parse_tools
from songlab.client._record import (
    RecordRow,
    RecordStore,
    canonical_request,
    current_origin,
    shared_store,
)
from songlab.client._redact import REDACTOR
from songlab.client._retry import Retrier, RetryPolicy, retry_after_s
from songlab.client._validate import ValidationError, require

if TYPE_CHECKING:
    from songlab.client._agent import Agent
    from songlab.client._compat import Compat
    from songlab.client._dedicated import SongTranslations, VoiceClones
    from songlab.client._files import Files
    from songlab.client._generations import Account, Generations, Tools
    from songlab.client._handle import TaskHandle
    from songlab.client._workflows import Workflows

# Call, Work, NOT_GIVEN ... live in _call; re-exported here, where the operations import them.
__all__ = [
    "BaseClient",
    "Call",
    "NOT_GIVEN",
    "NotGiven",
    "Op",
    "Step",
    "Work",
    "new_idempotency_key",
    "path_id",
]

_Self = TypeVar("_Self", bound="BaseClient")

log = logging.getLogger("songlab.client")

DEFAULT_TIMEOUT: Final = httpx.Timeout(30.0, connect=10.0)
USER_AGENT: Final = "songlab-client/0.1"
REUSE_SCOPES: Final = ("notebook", "account")
_PACED: Final = frozenset({"RateLimited"})


def deterministic_key(key_id: str, route: str, canonical: str, scope: str, take: int) -> str:
    """The Idempotency-Key of a create: the same (key id, route, canonical request, scope,
    take) always gives the same key, so the service itself deduplicates a re-run even when
    the record is lost or on another machine. 74 characters of the spec's alphabet."""
    digest = hashlib.sha256("\n".join((key_id, route, canonical, scope, str(take))).encode())
    return "songlab:r:" + digest.hexdigest()


def resolve_record(record: Any) -> RecordStore | None:
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

    _http: Any

    def __init__(
        self,
        api_key: str,
        *,
        base_url: str,
        timeout: float | httpx.Timeout | NotGiven = NOT_GIVEN,
        retry: RetryPolicy | NotGiven = NOT_GIVEN,
        seed: int | None = None,
        record: Any = None,
        reuse: str | bool = "notebook",
        quiet: bool = False,
        cache: Any = None,
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
        self._attach_resources()
        REDACTOR.add(api_key)

    # The resources; Client and AsyncClient narrow their type parameter.
    generations: Generations[Any]
    tools: Tools[Any]
    files: Files[Any]
    account: Account[Any]
    voice_clones: VoiceClones[Any]
    song_translations: SongTranslations[Any]
    workflows: Workflows[Any]
    compat: Compat[Any]
    agent: Agent[Any]

    def _attach_resources(self) -> None:
        from songlab.client._agent import Agent
        from songlab.client._compat import Compat
        from songlab.client._dedicated import SongTranslations, VoiceClones
        from songlab.client._files import Files
        from songlab.client._generations import Account, Generations, Tools
        from songlab.client._workflows import Workflows

        self.generations = Generations(self)
        self.tools = Tools(self)
        self.files = Files(self)
        self.account = Account(self)
        self.voice_clones = VoiceClones(self)
        self.song_translations = SongTranslations(self)
        self.workflows = Workflows(self)
        self.compat = Compat(self)
        self.agent = Agent(self)

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
    ) -> Any:
        """What a create would bill -> :class:`Estimate` (Decimal USD), before sending it.

        Name the create by ``tool_id``, ``operation`` (+ ``model``), a create
        ``route`` (``"/v1/karaoke-tracks"``, ``"/v1/voice-clones"``,
        ``"/v7/generate/song"`` ...) or an Agent One ``tier`` (+ ``max_budget``).
        """
        from songlab.client._generations import estimate_op

        return self._drive(
            estimate_op(
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
        )

    # -- implemented by the senders (Client, AsyncClient) ------------------------

    # An opaque slot the client never reads: ``songlab.connect()`` puts the local service it
    # started there (``base_url``, ``admin_token``, ``stop()``); None otherwise.
    sandbox: Any = None

    def _drive(
        self,
        op: Op,
        deadline: float | None = None,
        expired: Callable[[], SonglabError] | None = None,
    ) -> Any:
        raise NotImplementedError  # pragma: no cover

    @staticmethod
    def _then(value: Any, fn: Callable[[Any], Any]) -> Any:
        raise NotImplementedError  # pragma: no cover

    def _paginate(self, page_op: Callable[[str | None], Op]) -> Any:
        raise NotImplementedError  # pragma: no cover

    def _stream(self, task_id: str, *, after: int = 0, deadline: float | None = None) -> Any:
        raise NotImplementedError  # pragma: no cover

    def _wait(
        self,
        task_id: str,
        *,
        timeout: float,
        on_event: Callable[[Any], Any] | None,
        raise_on_failure: bool,
        poll_interval: float,
        use_stream: bool,
    ) -> Any:
        raise NotImplementedError  # pragma: no cover

    def watch(
        self,
        task: Any,
        callback: Callable[[WatchUpdate], object] | None = None,
        *,
        timeout: float | None = None,
        poll_interval: float = 0.5,
        max_resumes: int = 50,
        raise_on_failure: bool = True,
    ) -> Any:
        raise NotImplementedError  # pragma: no cover

    def __repr__(self) -> str:
        return f"{type(self).__name__}(base_url={self.base_url!r}, api_key=<redacted>)"

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
        url = (
            call.path
            if call.path.startswith(("http://", "https://"))
            else self.base_url + call.path
        )
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
    def _decode(call: Call, response: httpx.Response) -> Any:
        """The answer of a call, or the exception of its error body (with what a
        ``Retry-After`` header asked for)."""
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
            return json.loads(response.content)
        except ValueError:
            kind = response.headers.get("content-type", "no content-type")
            raise MalformedResponse(
                f"the body is not JSON ({kind}, {len(response.content)} bytes)",
                method=call.method,
                path=_loggable(call.path),
                status_code=response.status_code,
            ) from None

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
        if call.final_codes and getattr(exc, "code", None) in call.final_codes:
            if call.idempotency_key is not None and isinstance(exc, SonglabError):
                exc.idempotency_key = call.idempotency_key  # type: ignore[attr-defined]
            raise exc
        delay = retrier.on_error(exc, time.monotonic())
        log.info(
            "retrying %s %s in %.2fs after %s (attempt %d)",
            call.method,
            _loggable(call.path),
            delay,
            getattr(exc, "code", None) or type(exc).__name__,
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

    def _tools_op(self, refresh: bool = False) -> Op:
        if self._tools is None or refresh:
            self._tools = parse_tools((yield Call("GET", "/v1/tools")))
        return self._tools

    def _tool_by_id(self, tool_id: str) -> Op:
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

    def previous_create(
        self, route: str, body: dict[str, Any], *, take: int = 1
    ) -> RecordRow | None:
        """The recorded create this one would re-attach to (same account, route, canonical
        request, scope and take), or None: a local look-up, nothing is sent."""
        _, scope = self._scope()
        if scope is None or self.record is None:
            return None
        key = deterministic_key(self.key_id, route, canonical_request(route, body), scope, take)
        return self.record.find(key_id=self.key_id, base_url=self.base_url, idempotency_key=key)

    def _seen_ended_op(self, task_id: str, status: str | None, via: str) -> Op:
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

    def _ended_op(self, task_id: str, event: Event) -> Op:
        """A stream event that shows the task ended, noted in the record."""
        return (yield from self._seen_ended_op(task_id, event.final_status, "stream"))

    def _say(self, message: str) -> None:
        """One line a notebook shows (stdout, like ``connect()``'s), also logged; ``quiet``
        clients only log it."""
        log.info("%s", message)
        if not self.quiet:
            print(f"songlab: {message}", flush=True)

    def _create_op(
        self,
        path: str,
        body: dict[str, Any],
        estimate: Any,
        key: str | None,
        take: Any = 1,
        fresh: Any = False,
        *,
        paced: bool = False,
        announce: bool = True,
    ) -> Op:
        """POST a create with its Idempotency-Key, under the active budgets; or re-attach to
        the recorded task of the same request (no POST). ``paced``: a RateLimited answer is
        raised at once (a batch's pacer decides when to send again); ``announce``: say a
        re-attach in one line (a batch sums them up instead)."""
        from songlab.client._handle import TaskHandle

        require(
            isinstance(take, int) and not isinstance(take, bool) and take >= 1,
            "take",
            f"a whole number >= 1, got {take!r}",
        )
        require(isinstance(fresh, bool), "fresh", f"True or False, got {fresh!r}")
        if key is not None and (fresh or take != 1):
            raise ValidationError(
                "idempotency_key", "alone names the create: give it, or take=/fresh=, not both"
            )
        canonical = canonical_request(path, body)
        origin, scope = self._scope()
        if key is not None or fresh:
            scope = None
        if key is None:
            key = (
                new_idempotency_key()
                if scope is None
                else deterministic_key(self.key_id, path, canonical, scope, take)
            )
        elif scope is None:
            take = 1
        if scope is not None and self.record is not None:
            try:
                found = yield Work(
                    functools.partial(
                        self.record.find,
                        key_id=self.key_id,
                        base_url=self.base_url,
                        idempotency_key=key,
                    )
                )
            except Exception:  # noqa: BLE001 - an unreadable record: the key still dedups
                log.warning(
                    "could not read the record %s; creating (the Idempotency-Key "
                    "still lets the service deduplicate)",
                    self.record.path,
                    exc_info=True,
                )
                found = None
            if found is not None:
                handle = yield from self._reattach_op(found, key, announce)
                if handle is not None:
                    return handle
        sha = hashlib.sha256(canonical.encode()).hexdigest()
        sent_at = datetime.now(UTC)
        reservation = self._budgets.reserve(estimate)
        try:
            data = yield Call(
                "POST",
                path,
                json=body,
                idempotency_key=key,
                final_codes=_PACED if paced else frozenset(),
            )
            if not (
                isinstance(data, dict) and isinstance(data.get("task_id"), str) and data["task_id"]
            ):
                raise MalformedResponse(
                    f"the create answer has no task_id (got {str(data)[:200]!r}); the task may "
                    f"exist: send the same create again with idempotency_key={key!r}",
                    method="POST",
                    path=path,
                )
        except BaseException:
            reservation.release()
            raise
        reservation.commit(data["task_id"])
        rec = _attribution.build_record(
            self,
            route=path,
            body=body,
            estimate=estimate,
            key=key,
            data=data,
            payload_sha256=sha,
            scope=scope,
            take=take if scope is not None else None,
            origin=origin,
            sent_at=sent_at,
        )
        if self.record is not None:
            try:
                yield Work(
                    functools.partial(
                        self.record.write,
                        _row_of(rec),
                        payload=canonical,
                        consent_id=data.get("consent_id"),
                    )
                )
            except Exception:  # noqa: BLE001 - the task exists and is billed: never fail it
                log.exception("could not record task %s in %s", rec.task_id, self.record.path)
        _attribution.notify(self, rec)
        return TaskHandle.from_created(data, key, self)

    def _reattach_op(self, found: RecordRow, key: str, announce: bool = True) -> Op:
        """A handle on the recorded task, checked with one GET; None (and the row forgotten)
        when the service no longer has it."""
        from songlab.client._handle import TaskHandle

        try:
            raw = yield Call("GET", "/v1/generations/" + path_id(found.task_id, "task_id"))
        except (NotFound, Forbidden):
            yield Work(
                functools.partial(
                    self.record.forget if self.record else _noop,
                    task_id=found.task_id,
                    key_id=self.key_id,
                )
            )
            self._say(
                f"recorded task {found.task_id[:8]}... is gone from the service; creating it again"
            )
            return None
        task = parse_task(raw)
        if task.done:
            yield from self._seen_ended_op(found.task_id, task.status, "get")
        when = (
            found.accepted_at.astimezone().strftime("%H:%M")
            if found.accepted_at is not None
            else "earlier"
        )
        cost = (
            f"${found.estimate_usd.normalize():f}"
            if found.estimate_usd is not None
            else "its price"
        )
        if announce and task.status == "failed":
            self._say(
                f"reused task {found.task_id[:8]}... from {when}: it failed (nothing "
                "was billed); take=2 or fresh=True asks again"
            )
        elif announce:
            self._say(
                f"reused task {found.task_id[:8]}... from {when}; {cost} not spent "
                "again; fresh=True makes a new one"
            )
        consent = yield Work(
            functools.partial(
                self.record.consent_id if self.record else _noop,
                task_id=found.task_id,
                key_id=self.key_id,
            )
        )
        body = {
            "task_id": found.task_id,
            "status": task.status,
            "consent_id": consent,
            "reused": True,
        }
        return TaskHandle.from_created(body, key, self)

    def budget(self, *, usd: Decimal | int | str) -> Budget:
        """``with client.budget(usd="2.50"):`` refuses creates that would exceed it."""
        try:
            limit = Decimal(str(usd))
        except ArithmeticError:
            raise ValidationError("usd", f"a decimal amount, got {usd!r}") from None
        require(limit.is_finite() and limit >= 0, "usd", f"a non-negative amount, got {usd}")
        return Budget(limit, self._budgets)

    def task(self: _Self, task_id: str) -> TaskHandle[_Self]:
        """A handle on an existing task, from its id alone (e.g. after a kernel restart)."""
        from songlab.client._handle import TaskHandle

        path_id(task_id, "task_id")
        return TaskHandle(
            task_id=task_id,
            status=None,
            consent_id=None,
            idempotency_key=None,
            raw={},
            _client=self,
        )


def _noop(**_: Any) -> None:
    return None


def _row_of(rec: _attribution.CreateRecord) -> RecordRow:
    return RecordRow(
        task_id=rec.task_id,
        key_id=rec.key_id,
        base_url=rec.base_url,
        idempotency_key=rec.idempotency_key,
        route=rec.route,
        tool_id=rec.tool_id,
        operation=rec.operation,
        model=rec.model,
        license=rec.license,
        payload_sha256=rec.payload_sha256,
        estimate_usd=rec.estimate_usd,
        project=rec.project,
        tags=",".join(sorted(rec.tags)) or None,
        scope=rec.scope,
        take=rec.take,
        origin=rec.origin,
        sent_at=rec.sent_at,
        accepted_at=rec.accepted_at,
    )


def _loggable(path: str) -> str:
    """A path safe to show: signed URLs lose their token."""
    if path.startswith(("http://", "https://")):
        return path.split("?", 1)[0].rsplit("/", 1)[0] + "/<signed>"
    return path
