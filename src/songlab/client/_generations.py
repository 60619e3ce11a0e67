"""Native pipeline: generations (create/get/list/stream/wait), tools, account balance."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Generic, overload

from songlab.client._call import NOT_GIVEN, Call, NotGiven, Op, path_id
from songlab.client._errors import ToolLookupError
from songlab.client._estimate import Estimate, estimate_agent, estimate_operation
from songlab.client._models import (
    Balance,
    Event,
    Page,
    RawPage,
    Task,
    Tool,
    parse_balance,
    parse_page,
    parse_raw_page,
    parse_task,
)
from songlab.client._typing import Awaiting, C
from songlab.client._validate import (
    ValidationError,
    idempotency_key,
    license_number,
    list_limit,
    payload_for,
    payload_json,
)
from songlab.spec import AGENT_TIERS

if TYPE_CHECKING:
    from songlab.client._async import AsyncClient
    from songlab.client._handle import TaskHandle
    from songlab.client._pagination import AsyncCursorIterator, CursorIterator
    from songlab.client._sync import Client

__all__ = ["Account", "Generations", "Tools", "estimate_for_tool", "find_tool", "resolve_key"]


def resolve_key(key: Any) -> str | None:
    """The caller's Idempotency-Key (checked), or None: the client derives one (a
    deterministic key while reuse is on, see ``BaseClient._create_op``)."""
    if isinstance(key, NotGiven) or key is None:
        return None
    return idempotency_key(key)


def find_tool(tools: tuple[Tool, ...], operation: str, model: str | None = None) -> Tool:
    matches = [t for t in tools if t.operation == operation and (model is None or t.model == model)]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        models = sorted({t.model for t in tools if t.operation == operation})
        hint = f"; models of {operation}: {', '.join(models)}" if models else ""
        raise ToolLookupError(
            f"no tool for operation {operation!r}{f' and model {model!r}' if model else ''}{hint}"
        )
    raise ToolLookupError(
        f"operation {operation!r} has several models "
        f"({', '.join(sorted(t.model for t in matches))}); pass model="
    )


def estimate_for_tool(
    tool: Tool | None, payload: Mapping[str, Any], license: Any
) -> Estimate | None:
    if tool is None:
        return None
    if tool.operation == "agent":
        return estimate_agent(tool.model, payload.get("max_budget"), license)
    try:
        return estimate_operation(tool.operation, tool.model, license)
    except ValidationError:
        return None


class Generations(Generic[C]):
    def __init__(self, client: C) -> None:
        self._c = client

    def _create_op(
        self,
        tool_id: Any,
        operation: Any,
        model: Any,
        payload: Any,
        license: Any,
        key: Any,
        take: Any = 1,
        fresh: Any = False,
    ) -> Op:
        key = resolve_key(key)
        body, est = yield from self._prepare_op(tool_id, operation, model, payload, license)
        return (yield from self._c._create_op("/v1/generations", body, est, key, take, fresh))

    def _prepare_op(
        self, tool_id: Any, operation: Any, model: Any, payload: Any, license: Any
    ) -> Op:
        """(body, estimate) of a native create, checked; nothing billable is sent."""
        lic = None if isinstance(license, NotGiven) else license_number(license)
        text = payload_json(payload)
        obj = payload if isinstance(payload, Mapping) else json.loads(text)
        if isinstance(tool_id, NotGiven) or tool_id is None:
            if isinstance(operation, NotGiven) or operation is None:
                raise ValidationError("tool_id", "required (or operation= and model=)")
            tools = yield from self._c._tools_op()
            tool = find_tool(tools, operation, None if isinstance(model, NotGiven) else model)
            tool_id = tool.id
        else:
            if not isinstance(tool_id, str) or not tool_id:
                raise ValidationError("tool_id", "a non-empty string")
            tool = yield from self._c._tool_by_id(tool_id)
        payload_for(tool.operation if tool else None, obj, self._c._uploads)
        body: dict[str, Any] = {"tool_id": tool_id, "payload_json": text}
        if lic is not None:
            body["license"] = lic
        est = estimate_for_tool(tool, obj, lic)
        return body, est

    @overload
    def create(
        self: Generations[Client],
        *,
        payload: Mapping[str, Any] | str,
        tool_id: str | NotGiven = ...,
        operation: str | NotGiven = ...,
        model: str | NotGiven = ...,
        license: int | str | NotGiven = ...,
        idempotency_key: str | NotGiven = ...,
        take: int = ...,
        fresh: bool = ...,
    ) -> TaskHandle[Client]: ...
    @overload
    def create(
        self: Generations[AsyncClient],
        *,
        payload: Mapping[str, Any] | str,
        tool_id: str | NotGiven = ...,
        operation: str | NotGiven = ...,
        model: str | NotGiven = ...,
        license: int | str | NotGiven = ...,
        idempotency_key: str | NotGiven = ...,
        take: int = ...,
        fresh: bool = ...,
    ) -> Awaiting[TaskHandle[AsyncClient]]: ...
    def create(
        self,
        *,
        payload: Mapping[str, Any] | str,
        tool_id: str | NotGiven = NOT_GIVEN,
        operation: str | NotGiven = NOT_GIVEN,
        model: str | NotGiven = NOT_GIVEN,
        license: int | str | NotGiven = NOT_GIVEN,
        idempotency_key: str | NotGiven = NOT_GIVEN,
        take: int = 1,
        fresh: bool = False,
    ) -> Any:
        """``POST /v1/generations`` -> a :class:`TaskHandle`.

        Give ``tool_id``, or ``operation`` (and ``model``) to look it up.
        ``payload`` is a dict (sent as the string ``payload_json``); ``license``
        is 0-5 or a tier name. The same request again re-attaches to the recorded task
        (no POST, nothing billed; see ``docs/client.md``): ``take=2`` or ``fresh=True`` asks
        for a new one. Without an ``idempotency_key`` one is derived from the request.
        """
        return self._c._drive(
            self._create_op(
                tool_id, operation, model, payload, license, idempotency_key, take, fresh
            )
        )

    def _get_op(self, task_id: str, via: str = "get") -> Op:
        """The snapshot; one that shows the task ended is noted in the record (``via``: a
        single "get", or a "poll" of wait/watch)."""
        task = parse_task((yield Call("GET", "/v1/generations/" + path_id(task_id, "task_id"))))
        if task.done:
            yield from self._c._seen_ended_op(task_id, task.status, via)
        return task

    @overload
    def get(self: Generations[Client], task_id: str) -> Task: ...
    @overload
    def get(self: Generations[AsyncClient], task_id: str) -> Awaiting[Task]: ...
    def get(self, task_id: str) -> Any:
        """``GET /v1/generations/{id}`` -> :class:`Task`."""
        return self._c._drive(self._get_op(task_id))

    @staticmethod
    def _page_call(limit: int, cursor: str | None, expect: str = "json") -> Call:
        params: dict[str, Any] = {"limit": limit}
        if cursor:
            params["cursor"] = cursor
        return Call("GET", "/v1/generations", params=params, expect=expect)

    def _page_op(self, limit: int, cursor: str | None) -> Op:
        return parse_page((yield self._page_call(limit, cursor)))

    @overload
    def page(self: Generations[Client], *, limit: int = ..., cursor: str | None = ...) -> Page: ...
    @overload
    def page(
        self: Generations[AsyncClient], *, limit: int = ..., cursor: str | None = ...
    ) -> Awaiting[Page]: ...
    def page(self, *, limit: int = 20, cursor: str | None = None) -> Any:
        """One page (:class:`Page`) of the account's tasks, newest first."""
        list_limit(limit)
        return self._c._drive(self._page_op(limit, cursor))

    @overload
    def list(self: Generations[Client], *, limit: int = ...) -> CursorIterator: ...
    @overload
    def list(self: Generations[AsyncClient], *, limit: int = ...) -> AsyncCursorIterator: ...
    def list(self, *, limit: int = 20) -> Any:
        """Every task of the account, newest first, fetched ``limit`` per page as you iterate."""
        list_limit(limit)
        return self._c._paginate(lambda cursor: self._page_op(limit, cursor))

    def _raw_page_op(self, limit: int, cursor: str | None) -> Op:
        return parse_raw_page((yield self._page_call(limit, cursor, expect="bytes")))

    @overload
    def raw_pages(self: Generations[Client], *, limit: int = ...) -> Iterator[RawPage]: ...
    @overload
    def raw_pages(
        self: Generations[AsyncClient], *, limit: int = ...
    ) -> AsyncIterator[RawPage]: ...
    def raw_pages(self, *, limit: int = 100) -> Any:
        """Every page of the listing as :class:`RawPage` (the body's bytes, undecoded),
        fetched as you iterate, with the same retries as :meth:`list`. For readers that
        decode the tasks themselves (``songlab.ledger.tasks_frame`` reads them into Arrow
        without a Python dict per task)."""
        list_limit(limit)
        return self._c._paginate(lambda cursor: self._raw_page_op(limit, cursor)).pages()

    @overload
    def stream(self: Generations[Client], task_id: str, *, after: int = ...) -> Iterator[Event]: ...
    @overload
    def stream(
        self: Generations[AsyncClient], task_id: str, *, after: int = ...
    ) -> AsyncIterator[Event]: ...
    def stream(self, task_id: str, *, after: int = 0) -> Any:
        """The task's events (:class:`Event`): resumed after drops and ``timeout``/``error``
        events with ``after=<last seq>``; each event once, in order."""
        path_id(task_id, "task_id")
        if not isinstance(after, int) or after < 0:
            raise ValidationError("after", "a non-negative integer seq")
        return self._c._stream(task_id, after=after)

    @overload
    def wait(
        self: Generations[Client],
        task_id: str,
        *,
        timeout: float = ...,
        on_event: Callable[[Event], Any] | None = ...,
        raise_on_failure: bool = ...,
        poll_interval: float = ...,
        use_stream: bool = ...,
    ) -> Task: ...
    @overload
    def wait(
        self: Generations[AsyncClient],
        task_id: str,
        *,
        timeout: float = ...,
        on_event: Callable[[Event], Any] | None = ...,
        raise_on_failure: bool = ...,
        poll_interval: float = ...,
        use_stream: bool = ...,
    ) -> Awaiting[Task]: ...
    def wait(
        self,
        task_id: str,
        *,
        timeout: float = 600.0,
        on_event: Callable[[Event], Any] | None = None,
        raise_on_failure: bool = True,
        poll_interval: float = 0.5,
        use_stream: bool = True,
    ) -> Any:
        """Until the task is completed or failed -> final :class:`Task`.

        Follows the stream (``on_event`` gets each event), falls back to
        polling if the stream cannot be used. Past ``timeout`` seconds raises
        :class:`WaitTimeout` carrying ``task_id``; a failed task raises
        :class:`TaskFailed` unless ``raise_on_failure=False``.
        """
        path_id(task_id, "task_id")
        if not (isinstance(timeout, int | float) and timeout > 0):
            raise ValidationError("timeout", "a positive number of seconds")
        if not (isinstance(poll_interval, int | float) and poll_interval > 0):
            raise ValidationError("poll_interval", "a positive number of seconds")
        return self._c._wait(
            task_id,
            timeout=float(timeout),
            on_event=on_event,
            raise_on_failure=raise_on_failure,
            poll_interval=float(poll_interval),
            use_stream=use_stream,
        )


class Tools(Generic[C]):
    def __init__(self, client: C) -> None:
        self._c = client

    @overload
    def list(self: Tools[Client]) -> tuple[Tool, ...]: ...
    @overload
    def list(self: Tools[AsyncClient]) -> Awaiting[tuple[Tool, ...]]: ...
    def list(self) -> Any:
        """``GET /v1/tools`` -> tuple of :class:`Tool` (refreshes the client's cache)."""
        return self._c._drive(self._c._tools_op(refresh=True))

    def _by_id_op(self) -> Op:
        tools = yield from self._c._tools_op()
        return {t.id: t for t in tools}

    @overload
    def by_id(self: Tools[Client]) -> dict[str, Tool]: ...
    @overload
    def by_id(self: Tools[AsyncClient]) -> Awaiting[dict[str, Tool]]: ...
    def by_id(self) -> Any:
        """Every listed tool by its id, from the client's cached listing (one
        ``GET /v1/tools`` per client; ``list()`` refreshes it). Tool ids are stable."""
        return self._c._drive(self._by_id_op())

    def _get_op(self, tool_id: str) -> Op:
        if not isinstance(tool_id, str) or not tool_id:
            raise ValidationError("tool_id", "a non-empty string")
        return (yield from self._c._tool_by_id(tool_id))

    @overload
    def get(self: Tools[Client], tool_id: str) -> Tool | None: ...
    @overload
    def get(self: Tools[AsyncClient], tool_id: str) -> Awaiting[Tool | None]: ...
    def get(self, tool_id: str) -> Any:
        """The listed tool with ``tool_id`` (its ``model`` and ``operation``), or None if the
        listing does not have it; from the cached listing. ``get(id).is_agent`` tells an
        Agent One run by the tool it was created with, whatever its snapshot shows."""
        return self._c._drive(self._get_op(tool_id))

    def _find_op(self, operation: str, model: str | None) -> Op:
        tools = yield from self._c._tools_op()
        return find_tool(tools, operation, model)

    @overload
    def find(self: Tools[Client], operation: str, model: str | None = ...) -> Tool: ...
    @overload
    def find(
        self: Tools[AsyncClient], operation: str, model: str | None = ...
    ) -> Awaiting[Tool]: ...
    def find(self, operation: str, model: str | None = None) -> Any:
        """The tool of ``operation`` on ``model`` (model optional if there is one)."""
        return self._c._drive(self._find_op(operation, model))

    @overload
    def agent(self: Tools[Client], tier: str) -> Tool: ...
    @overload
    def agent(self: Tools[AsyncClient], tier: str) -> Awaiting[Tool]: ...
    def agent(self, tier: str) -> Any:
        """The Agent One tool of ``tier`` (flash, standard, pro)."""
        if tier not in AGENT_TIERS:
            raise ValidationError("tier", f"one of {', '.join(AGENT_TIERS)}, got {tier!r}")
        return self._c._drive(self._find_op("agent", tier))


class Account(Generic[C]):
    def __init__(self, client: C) -> None:
        self._c = client

    def _balance_op(self) -> Op:
        return parse_balance((yield Call("GET", "/v1/account/balance")))

    @overload
    def balance(self: Account[Client]) -> Balance: ...
    @overload
    def balance(self: Account[AsyncClient]) -> Awaiting[Balance]: ...
    def balance(self) -> Any:
        """``GET /v1/account/balance`` -> :class:`Balance` (tokens; 1 token = $0.01)."""
        return self._c._drive(self._balance_op())


def estimate_op(
    client: Any,
    *,
    tool_id: Any,
    operation: Any,
    model: Any,
    route: Any,
    tier: Any,
    max_budget: Any,
    license: Any,
    version: Any,
) -> Op:
    """The estimate of any create, named by tool id, operation+model, route or agent tier."""
    from songlab.client._estimate import estimate_route

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
            return estimate_agent(model, mb, lic)
        return estimate_operation(operation, model, lic)
    tool = yield from client._tool_by_id(tool_id)
    if tool is None:
        raise ToolLookupError(f"tool {tool_id!r} is not in GET /v1/tools")
    est = estimate_for_tool(tool, {"max_budget": mb}, lic)
    if est is None:
        raise ToolLookupError(f"no price for tool {tool.id!r} ({tool.operation} {tool.model})")
    return est
