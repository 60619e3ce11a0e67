"""Native pipeline: POST/GET /v1/generations, the listing and the SSE stream."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import StreamingResponse

import songlab.sandbox.errors as errors
from songlab.pricing import AGENT_RATES, price
from songlab.sandbox.catalog import Catalog, Tool
from songlab.sandbox.http import bodies, jsonrules
from songlab.sandbox.http.routes._request_io import account, create, json_response, parse_object
from songlab.sandbox.ports import Authenticator, FaultGate, Links, Now
from songlab.sandbox.storage import billing
from songlab.sandbox.storage.db import Store
from songlab.sandbox.tasks import events, payloads, ratelimit
from songlab.sandbox.tasks import rows as tasks
from songlab.sandbox.tasks.creates import Creates, NewTask
from songlab.sandbox.tasks.events import EventLog
from songlab.sandbox.tasks.validation import Resolver
from songlab.spec import LIMITS, LicenseError, effective_license, parse_license

STREAM_IDLE_SECONDS = 30.0
LIMIT_MIN = int(LIMITS["list_limit_min"])
LIMIT_MAX = int(LIMITS["list_limit_max"])
LIMIT_DEFAULT = int(LIMITS["list_limit_default"])
MAX_SEQ = 2**63 - 1  # an event seq is an SQLite INTEGER
EVENT_PAGE = 500
_DIGITS = re.compile(r"[0-9]{1,19}")


def query_int(raw: str | None, name: str, *, lo: int, hi: int, default: int) -> int:
    """A query integer written in ASCII digits, inside ``lo``-``hi``, or 422 naming it."""
    if raw is None:
        return default
    if not _DIGITS.fullmatch(raw) or not lo <= int(raw) <= hi:
        raise errors.invalid(name, f"must be an integer {lo}-{hi}, got {raw[:40]!r}")
    return int(raw)


def native_license(value: Any) -> int:
    """The native integer ``license`` (0-5; 0 or absent = royalty-free)."""
    if value is None:
        return 1
    try:
        return effective_license(parse_license(value, ints_only=True))
    except LicenseError as exc:
        raise errors.invalid(exc.field, exc.rule) from None


def generation_task(
    catalog: Catalog,
    resolver: Resolver,
    tool: Tool,
    license: int,
    payload: Any,
    *,
    checked: bool = False,
) -> NewTask:
    """Validate a payload for ``tool`` and price it (native and compat creates).

    ``checked``: the body model built from the registry checked the payload's fields
    already (compat routes): only its files and saved voice are resolved."""
    catalog.check_priced(tool, license)
    if checked:
        resolved = payloads.resolve(tool.operation, payload, resolver)
    else:
        resolved = payloads.validate(tool.operation, payload, resolver)
    if tool.operation == "agent":
        units = billing.to_units(AGENT_RATES[tool.model].reserve_floor)
        kind, ledger_kind = "agent", "agent_fee"
    else:
        units = billing.to_units(price(tool.operation, tool.model, license))
        kind = "voice_clone" if tool.operation == "vocal_clone" else "generation"
        ledger_kind = "voice_clone" if kind == "voice_clone" else "generation"
    return NewTask(
        operation=tool.operation,
        model=tool.model,
        tool_id=tool.id,
        license=license,
        kind=kind,
        ledger_kind=ledger_kind,
        payload=payload,
        resolved=resolved,
        price_units=units,
        buckets=ratelimit.for_tool(tool.id, tool.operation, tool.model),
    )


def _payload_of(req: dict[str, Any]) -> Any:
    """The checked native body's ``payload_json``, decoded (the raw-object 500 included)."""
    pj = req.get("payload_json")
    if isinstance(pj, dict | list):
        raise errors.UnhandledPayloadError("payload_json is not a string")
    if pj is None:
        raise errors.invalid("payload_json", "is required: the tool's input as JSON text")
    if not isinstance(pj, str):
        raise errors.invalid("payload_json", "must be a string of JSON text")
    return jsonrules.loads(pj, "payload_json")


class _NativeRoutes:
    """The native pipeline's endpoints over the sandbox parts they read."""

    def __init__(
        self,
        accounts: Authenticator,
        store: Store,
        clock: Now,
        catalog: Catalog,
        creates: Creates,
        event_log: EventLog,
        faults: FaultGate,
        links: Links,
    ) -> None:
        self._accounts = accounts
        self._store = store
        self._clock = clock
        self._catalog = catalog
        self._creates = creates
        self._event_log = event_log
        self._faults = faults
        self._links = links

    def _native_task(self, account_id: str, body: bytes) -> NewTask:
        req = parse_object(body)
        tool = self._catalog.resolve(req.get("tool_id"))  # absent or unknown: 400 UnknownTool
        req = bodies.check(bodies.NativeCreate, req)  # the raw-object 500 included
        lic = native_license(req.get("license"))
        payload = _payload_of(req)
        resolver = self._creates.resolver(account_id)
        return generation_task(self._catalog, resolver, tool, lic, payload)

    async def create_generation(self, request: Request) -> Response:
        account_id = account(self._accounts, request)
        body = await request.body()
        return await create(
            self._creates, request, account_id, lambda: self._native_task(account_id, body)
        )

    async def get_generation(self, task_id: str, request: Request) -> Response:
        account_id = self._accounts.authenticate(request.headers.get("authorization"))
        status, body, _ = tasks.answer(self._store, account_id, task_id, self._links.base_url)
        return Response(body, status_code=status, media_type="application/json")

    async def list_generations(self, request: Request) -> Response:
        account_id = account(self._accounts, request)
        q = request.query_params
        limit = query_int(
            q.get("limit"), "limit", lo=LIMIT_MIN, hi=LIMIT_MAX, default=LIMIT_DEFAULT
        )
        before = None
        if "cursor" in q:  # present, even empty: it must be one this listing returned
            try:
                before = tasks.decode_cursor(q["cursor"])
            except ValueError as exc:
                raise errors.invalid("cursor", str(exc).split(": ", 1)[1]) from None
        rows, nxt = tasks.page(self._store, account_id, limit, before)
        return json_response(
            {
                "data": [tasks.snapshot(row, self._links.base_url) for row in rows],
                "next_cursor": None if nxt is None else tasks.encode_cursor(nxt),
            }
        )

    def _own_task_and_after(self, task_id: str, request: Request) -> tuple[Any, int]:
        """The caller's task (403 another's, 404 none) and the ``after`` cursor (stream, page)."""
        row = tasks.own(self._store, account(self._accounts, request), task_id)
        return row, query_int(
            request.query_params.get("after"), "after", lo=0, hi=MAX_SEQ, default=0
        )

    async def event_page(self, task_id: str, request: Request) -> Response:
        """The stored events after ``after`` as one JSON page, at once (for clients that
        cannot read a stream, such as generated ones)."""
        row, after = self._own_task_and_after(task_id, request)
        rows = self._event_log.after(task_id, after)[:EVENT_PAGE]
        data = [json.loads(d) for _, _, d in rows]
        done = row["status"] in ("completed", "failed") and (
            not rows or rows[-1][1] == "terminal" or len(rows) < EVENT_PAGE
        )
        return json_response(
            {"data": data, "next_after": rows[-1][0] if rows else after, "done": done}
        )

    async def stream(self, task_id: str, request: Request) -> Response:
        _, after = self._own_task_and_after(task_id, request)
        return StreamingResponse(
            _events(self._event_log, self._store, self._clock, self._faults, task_id, after),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )


def router(
    accounts: Authenticator,
    store: Store,
    clock: Now,
    catalog: Catalog,
    creates: Creates,
    event_log: EventLog,
    faults: FaultGate,
    links: Links,
) -> APIRouter:
    routes = _NativeRoutes(accounts, store, clock, catalog, creates, event_log, faults, links)
    r = APIRouter()
    r.add_api_route("/v1/generations", routes.create_generation, methods=["POST"], status_code=201)
    r.add_api_route("/v1/generations/{task_id}", routes.get_generation, methods=["GET"])
    r.add_api_route("/v1/generations", routes.list_generations, methods=["GET"])
    r.add_api_route("/v1/generations/{task_id}/events", routes.event_page, methods=["GET"])
    r.add_api_route("/v1/generations/{task_id}/stream", routes.stream, methods=["GET"])
    return r


async def _events(
    log: EventLog, store: Store, clock: Now, faults: FaultGate, task_id: str, after: int
) -> AsyncIterator[bytes]:
    """Replay what follows ``after``, then follow live events until terminal/timeout/drop."""
    entry = log.hub.subscribe(task_id)
    _, wake = entry
    last, sent = after, 0
    drop_after = faults.settings.drop_stream_after
    idle_since = clock.now()
    try:
        while True:
            wake.clear()
            # the status before the events: completion and its terminal event commit
            # together, so a task seen finished here has all its events in the batch below
            # (read the other way round, a worker committing in between hid the last
            # progress and the terminal, and the stream closed short)
            status = store.value("SELECT status FROM tasks WHERE id = ?", (task_id,))
            batch = log.after(task_id, last)
            for seq, kind, data in batch:
                if drop_after is not None and sent >= drop_after:
                    yield _ephemeral(
                        log,
                        task_id,
                        "error",
                        last,
                        "stream dropped (injected fault); resume with after=cursor",
                    )
                    return
                yield events.frame(seq, kind, data)
                last, sent = seq, sent + 1
                idle_since = clock.now()
                if kind == "terminal":
                    return
            if batch:
                continue
            if status in ("completed", "failed"):
                return  # a finished task: nothing follows ``after``
            idle = clock.now() - idle_since
            if idle >= STREAM_IDLE_SECONDS:
                yield _ephemeral(
                    log,
                    task_id,
                    "timeout",
                    last,
                    f"no event for {STREAM_IDLE_SECONDS:.0f} s; resume with after=cursor",
                )
                return
            try:
                await asyncio.wait_for(wake.wait(), timeout=min(STREAM_IDLE_SECONDS - idle, 1.0))
            except TimeoutError:
                pass
    finally:
        log.hub.unsubscribe(task_id, entry)


def _ephemeral(log: EventLog, task_id: str, kind: str, cursor: int, message: str) -> bytes:
    seq = log.emit(task_id, kind, {}, persist=False)
    data = {"seq": seq, "kind": kind, "task_id": task_id, "cursor": cursor, "message": message}
    return events.frame(seq, kind, json.dumps(data))
