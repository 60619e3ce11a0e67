"""Native pipeline: generations (create/get/list/stream/wait), tools, account balance.

:func:`native_request` is the one builder of a native create (``POST /v1/generations``):
``generations.create``, Agent One's ``agent.start`` and ``client.batch`` all make their
requests with it, then send them through the one create path (``_create.create_op``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Unpack

from songlab.client._call import NOT_GIVEN, Call, NotGiven, Op, path_id
from songlab.client._cost_estimate import (
    Estimate,
    estimate_agent,
    estimate_operation,
    estimate_route,
)
from songlab.client._create import (
    CreateOptions,
    CreateRequest,
    create_op,
    create_options,
    route_request,
)
from songlab.client._exceptions import ToolLookupError
from songlab.client._handle import TaskHandle, wait_op
from songlab.client._models import (
    Asset,
    Balance,
    Event,
    Page,
    RawPage,
    Task,
    Tool,
    UploadedFile,
    parse_balance,
    parse_page,
    parse_raw_page,
    parse_task,
)
from songlab.client._typing import C, Resource, creates, iterates, operation
from songlab.client._validate import (
    ValidationError,
    canonical_json,
    license_number,
    list_limit,
    payload_for,
    payload_object,
)
from songlab.client.choices import check_name
from songlab.spec import AGENT_TIERS, STEM_MODELS, TRANSCRIBE_MODEL

if TYPE_CHECKING:
    from songlab.client._base import BaseClient

__all__ = [
    "Account",
    "Generations",
    "Tools",
    "estimate_for_tool",
    "estimate_op",
    "find_tool",
    "native_request",
]


def find_tool(tools: tuple[Tool, ...], operation: str, model: str | None = None) -> Tool:
    """The one tool of ``operation`` (and ``model``) in the listing. A name the listing does
    not hold is the caller's to fix: a ValidationError naming the field, what the listing
    holds and the nearest (never another tool in its place); an operation without the
    model it needs is a :class:`ToolLookupError` saying to pass it."""
    listed = sorted({t.operation for t in tools})
    check_name(operation, "operation", listed, of="the operations in GET /v1/tools")
    models = sorted({t.model for t in tools if t.operation == operation})
    if model is not None:
        check_name(model, "model", models, of=f"the models of {operation} in GET /v1/tools")
    matches = [t for t in tools if t.operation == operation and (model is None or t.model == model)]
    if len(matches) == 1:
        return matches[0]
    raise ToolLookupError(
        f"operation {operation!r} has several models "
        f"({', '.join(sorted(t.model for t in matches))}); pass model="
    )


def estimate_for_tool(
    tool: Tool | None, payload: Mapping[str, object], license: int | None
) -> Estimate | None:
    if tool is None:
        return None
    if tool.operation == "agent":
        cap = payload.get("max_budget")
        return estimate_agent(tool.model, cap if isinstance(cap, int) else None, license)
    try:
        return estimate_operation(tool.operation, tool.model, license)
    except ValidationError:
        return None


def native_request(
    client: BaseClient,
    *,
    tool_id: object,
    operation: object,
    model: object,
    payload: object,
    license: object,
) -> Op[CreateRequest]:
    """The checked, priced :class:`CreateRequest` of a native create (nothing billable is
    sent; the tool listing is read to resolve ``operation`` + ``model`` or to know the tool).
    The payload is made canonical once: that text is the ``payload_json`` sent (a payload
    given as JSON text is sent as the caller wrote it, and parsed once to check it)."""
    lic = None if isinstance(license, NotGiven) else license_number(license)
    obj = payload_object(payload)
    text = canonical_json(obj)
    if isinstance(tool_id, NotGiven) or tool_id is None:
        if not isinstance(operation, str):
            raise ValidationError("tool_id", "required (or operation= and model=)")
        tools = yield from client._tools_op()
        tool: Tool | None = find_tool(
            tools, operation, None if isinstance(model, NotGiven) else str(model)
        )
        assert tool is not None
        tool_id = tool.id
    else:
        if not isinstance(tool_id, str) or not tool_id:
            raise ValidationError("tool_id", "a non-empty string")
        tool = yield from client._tool_by_id(tool_id)
    payload_for(tool.operation if tool else None, obj, client._uploads)
    fields: dict[str, object] = {"tool_id": tool_id}
    if lic is not None:
        fields["license"] = lic
    return route_request(
        "/v1/generations",
        fields,
        estimate_for_tool(tool, obj, lic),
        payload=text,
        payload_text=payload if isinstance(payload, str) else None,
        tool_id=tool_id,
        operation=tool.operation if tool else None,
        model=tool.model if tool else None,
        license=lic,
    )


AudioRef = str | UploadedFile | Asset | dict[str, str]


def audio_input(audio: AudioRef) -> object:
    """A payload's file input from what a caller holds: an upload, an output asset or a
    file id (sent as ``{"url": "file_id:<id>"}``), a URL, or a file-input object as the
    service takes it (passed as it is)."""
    if isinstance(audio, UploadedFile | Asset):
        audio = audio.file_id
    if isinstance(audio, str) and "://" not in audio and not audio.startswith("file_id:"):
        audio = f"file_id:{audio}"
    return {"url": audio} if isinstance(audio, str) else audio


class Generations(Resource[C]):
    @creates
    def create(
        self,
        *,
        payload: Mapping[str, object] | str,
        tool_id: str | NotGiven = NOT_GIVEN,
        operation: str | NotGiven = NOT_GIVEN,
        model: str | NotGiven = NOT_GIVEN,
        **options: Unpack[CreateOptions],
    ) -> Op[TaskHandle[C]]:
        """``POST /v1/generations`` -> a :class:`TaskHandle`.

        Give ``tool_id``, or ``operation`` (and ``model``) to look it up.
        ``payload`` is a dict (sent as the string ``payload_json``); ``license``
        is 0-5 or a tier name. The same request again re-attaches to the recorded task
        (no POST, nothing billed; see ``docs/client.md``): ``take=2`` or ``fresh=True`` asks
        for a new one. Without an ``idempotency_key`` one is derived from the request.
        """
        reuse, license = create_options(options, "create")
        request = yield from native_request(
            self._c,
            tool_id=tool_id,
            operation=operation,
            model=model,
            payload=payload,
            license=license,
        )
        return (yield from create_op(self._c, request, reuse))

    @creates
    def transcribe(
        self,
        audio: AudioRef,
        *,
        language: str | None = None,
        **options: Unpack[CreateOptions],
    ) -> Op[TaskHandle[C]]:
        """Transcribe the lyrics or speech of ``audio`` (``transcribe`` on
        whisper-transcribe-v1, priced flat) -> a :class:`TaskHandle`; the text is
        ``handle.wait().output.text``.

        ``audio``: an upload, an output asset or a file id (sent as ``file_id:<id>``), a URL,
        or a file-input object as the service takes it. ``language``: the language to
        expect (the service detects it when not given). Paid once like every create: the
        same audio and language again re-attaches to the recorded transcription.
        """
        reuse, license = create_options(options, "transcribe")
        payload: dict[str, object] = {"audio": audio_input(audio)}
        if language is not None:
            payload["language"] = language
        request = yield from native_request(
            self._c,
            tool_id=NOT_GIVEN,
            operation="transcribe",
            model=TRANSCRIBE_MODEL,
            payload=payload,
            license=license,
        )
        return (yield from create_op(self._c, request, reuse))

    @creates
    def separate_stems(
        self,
        audio: AudioRef,
        *,
        model: str = "2stem",
        **options: Unpack[CreateOptions],
    ) -> Op[TaskHandle[C]]:
        """Split ``audio`` into stems (``separate_stems``, priced flat) -> a
        :class:`TaskHandle`; each stem is an asset of ``handle.wait().output.assets``.

        ``model``: ``2stem`` (vocals and instrumental, the default), ``6-stem`` or ``12stem``;
        another is refused before anything is sent. ``audio``: an upload, an output asset or
        a file id, a URL, or a file-input object as the service takes it. Paid once like
        every create: the same audio and model again re-attaches to the recorded task.
        """
        if model not in STEM_MODELS:
            raise ValidationError("model", f"one of {', '.join(STEM_MODELS)}, got {model!r}")
        reuse, license = create_options(options, "separate_stems")
        request = yield from native_request(
            self._c,
            tool_id=NOT_GIVEN,
            operation="separate_stems",
            model=model,
            payload={"audio": audio_input(audio)},
            license=license,
        )
        return (yield from create_op(self._c, request, reuse))

    def _get_op(self, task_id: str, via: str = "get") -> Op[Task]:
        """The snapshot; one that shows the task ended is noted in the record (``via``: a
        single "get", or a "poll" of wait/watch)."""
        task = parse_task((yield Call("GET", "/v1/generations/" + path_id(task_id, "task_id"))))
        if task.done:
            yield from self._c._seen_ended_op(task_id, task.status, via)
        return task

    @operation
    def get(self, task_id: str) -> Op[Task]:
        """``GET /v1/generations/{id}`` -> :class:`Task`."""
        return self._get_op(task_id)

    @staticmethod
    def _page_call(limit: int, cursor: str | None, expect: str = "json") -> Call:
        params: dict[str, str | int] = {"limit": limit}
        if cursor:
            params["cursor"] = cursor
        return Call("GET", "/v1/generations", params=params, expect=expect)

    def _page_op(self, limit: int, cursor: str | None) -> Op[Page]:
        return parse_page((yield self._page_call(limit, cursor)))

    @operation
    def page(self, *, limit: int = 20, cursor: str | None = None) -> Op[Page]:
        """One page (:class:`Page`) of the account's tasks, newest first."""
        list_limit(limit)
        return self._page_op(limit, cursor)

    @iterates
    def list(self, *, limit: int = 20) -> Iterator[Task] | AsyncIterator[Task]:
        """Every task of the account, newest first, fetched ``limit`` per page as you iterate."""
        list_limit(limit)
        return self._c._items(lambda cursor: self._page_op(limit, cursor))

    def _raw_page_op(self, limit: int, cursor: str | None) -> Op[RawPage]:
        return parse_raw_page((yield self._page_call(limit, cursor, expect="bytes")))

    @iterates
    def raw_pages(self, *, limit: int = 100) -> Iterator[RawPage] | AsyncIterator[RawPage]:
        """Every page of the listing as :class:`RawPage` (the body's bytes, undecoded),
        fetched as you iterate, with the same retries as :meth:`list`. For readers that
        decode the tasks themselves (``songlab.ledger.tasks_frame`` reads them into Arrow
        without a Python dict per task)."""
        list_limit(limit)
        return self._c._pages(lambda cursor: self._raw_page_op(limit, cursor))

    @iterates
    def stream(self, task_id: str, *, after: int = 0) -> Iterator[Event] | AsyncIterator[Event]:
        """The task's events (:class:`Event`): resumed after drops and ``timeout``/``error``
        events with ``after=<last seq>``; each event once, in order."""
        path_id(task_id, "task_id")
        if not isinstance(after, int) or isinstance(after, bool) or after < 0:
            raise ValidationError("after", "a non-negative integer seq")
        return self._c._events(task_id, after)

    @operation
    def wait(
        self,
        task_id: str,
        *,
        timeout: float = 600.0,
        on_event: Callable[[Event], object] | None = None,
        raise_on_failure: bool = True,
        poll_interval: float = 0.5,
        use_stream: bool = True,
    ) -> Op[Task]:
        """Until the task is completed or failed -> final :class:`Task`.

        Follows the stream (``on_event`` gets each event), falls back to
        polling if the stream cannot be used. Past ``timeout`` seconds raises
        :class:`WaitTimeout` carrying ``task_id``; a failed task raises
        :class:`TaskFailed` unless ``raise_on_failure=False``.
        """
        return wait_op(task_id, timeout, on_event, raise_on_failure, poll_interval, use_stream)


class Tools(Resource[C]):
    @operation
    def list(self) -> Op[tuple[Tool, ...]]:
        """``GET /v1/tools`` -> tuple of :class:`Tool` (refreshes the client's cache)."""
        return self._c._tools_op(refresh=True)

    @operation
    def by_id(self) -> Op[dict[str, Tool]]:
        """Every listed tool by its id, from the client's cached listing (one
        ``GET /v1/tools`` per client; ``list()`` refreshes it). Tool ids are stable."""
        tools = yield from self._c._tools_op()
        return {t.id: t for t in tools}

    @operation
    def get(self, tool_id: str) -> Op[Tool | None]:
        """The listed tool with ``tool_id`` (its ``model`` and ``operation``), or None if the
        listing does not have it; from the cached listing. ``get(id).is_agent`` tells an
        Agent One run by the tool it was created with, whatever its snapshot shows."""
        if not isinstance(tool_id, str) or not tool_id:
            raise ValidationError("tool_id", "a non-empty string")
        return self._c._tool_by_id(tool_id)

    def _find_op(self, operation: str, model: str | None) -> Op[Tool]:
        tools = yield from self._c._tools_op()
        return find_tool(tools, operation, model)

    @operation
    def find(self, operation: str, model: str | None = None) -> Op[Tool]:
        """The tool of ``operation`` on ``model`` (model optional if there is one)."""
        return self._find_op(operation, model)

    @operation
    def agent(self, tier: str) -> Op[Tool]:
        """The Agent One tool of ``tier`` (flash, standard, pro)."""
        if tier not in AGENT_TIERS:
            raise ValidationError("tier", f"one of {', '.join(AGENT_TIERS)}, got {tier!r}")
        return self._find_op("agent", tier)


class Account(Resource[C]):
    @operation
    def balance(self) -> Op[Balance]:
        """``GET /v1/account/balance`` -> :class:`Balance` (tokens; 1 token = $0.01)."""
        return parse_balance((yield Call("GET", "/v1/account/balance")))


def estimate_op(
    client: BaseClient,
    *,
    tool_id: str | NotGiven,
    operation: str | NotGiven,
    model: str | NotGiven,
    route: str | NotGiven,
    tier: str | NotGiven,
    max_budget: int | NotGiven,
    license: int | str | NotGiven,
    version: str | NotGiven,
) -> Op[Estimate]:
    """The estimate of any create, named by tool id, operation+model, route or agent tier."""
    lic = None if isinstance(license, NotGiven) else license_number(license)
    given = [
        n
        for n, v in (
            ("tool_id", tool_id),
            ("operation", operation),
            ("route", route),
            ("tier", tier),
        )
        if not isinstance(v, NotGiven)
    ]
    if len(given) != 1:
        raise ValidationError(
            "estimate",
            "give exactly one of tool_id, operation (+ model), "
            f"route or tier; got {', '.join(given) or 'none'}",
        )
    mb = None if isinstance(max_budget, NotGiven) else max_budget
    if not isinstance(tier, NotGiven):
        return estimate_agent(tier, mb, lic)
    if not isinstance(route, NotGiven):
        return estimate_route(
            route, lic, version="v5" if isinstance(version, NotGiven) else version
        )
    if not isinstance(operation, NotGiven):
        if isinstance(model, NotGiven):
            raise ValidationError("model", f"required to price operation {operation!r}")
        if operation == "agent":
            check_name(model, "model", AGENT_TIERS, of="Agent One's tiers")
            return estimate_agent(model, mb, lic)
        return estimate_operation(operation, model, lic)
    assert not isinstance(tool_id, NotGiven)
    tool = yield from client._tool_by_id(tool_id)
    if tool is None:
        raise ToolLookupError(f"tool {tool_id!r} is not in GET /v1/tools")
    est = estimate_for_tool(tool, {"max_budget": mb}, lic)
    if est is None:
        raise ToolLookupError(f"no price for tool {tool.id!r} ({tool.operation} {tool.model})")
    return est
