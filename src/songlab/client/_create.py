"""The one create path: every create of every route goes through :func:`create_op`.

A route's method checks its arguments and builds a :class:`CreateRequest` (native, Agent
One, compat, dedicated, workflow, batch: :func:`native_request` or :func:`route_request`);
the request is made canonical once (sorted keys, no spaces; a native payload's canonical
text is also the ``payload_json`` sent) and hashed once (``payload_sha256``). Then
:func:`create_op` names the create (the caller's Idempotency-Key, or one derived from the
request's hash, its reuse scope and take; a file this client uploaded counts by the SHA-256
of its bytes, not its file id: :func:`content_keyed`), re-attaches to the recorded task of the same
request instead of buying it again, or reserves the estimate against the active budgets,
POSTs, and builds the one :class:`~songlab.client._create_record.CreateRecord` that the record
writes and the create hook's listeners get.
"""

from __future__ import annotations

import functools
import hashlib
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final, TypedDict

import songlab.client._attribution as _attribution
from songlab.client._call import NOT_GIVEN, Call, NotGiven, Op, Work, new_idempotency_key, path_id
from songlab.client._cost_estimate import Estimate
from songlab.client._create_record import CreateRecord
from songlab.client._exceptions import Forbidden, MalformedResponse, NotFound
from songlab.client._handle import TaskHandle
from songlab.client._models import UploadedFile, parse_task
from songlab.client._typing import C
from songlab.client._validate import ValidationError, canonical_json, idempotency_key, require

if TYPE_CHECKING:
    from songlab.client._base import BaseClient

__all__ = [
    "CreateOptions",
    "CreateRequest",
    "Reuse",
    "canonical_body",
    "content_keyed",
    "create_op",
    "create_options",
    "find_previous",
    "identity_of",
    "request_key",
    "reuse_of",
    "route_request",
]

log = logging.getLogger("songlab.client")

_PACED: Final = frozenset({"RateLimited"})


def canonical_body(fields: Mapping[str, object], payload: str | None = None) -> str:
    """The canonical text of a request body: ``fields`` and, for a native create, the
    canonical ``payload`` text as the object it encodes (so key order or spacing inside
    ``payload_json`` never makes two requests differ). Written out from the parts, never
    parsed again: the same text as ``canonical_json`` of the body with the payload parsed."""
    parts = [(k, canonical_json(v, k)) for k, v in fields.items() if k != "payload_json"]
    if payload is not None:
        parts.append(("payload_json", payload))
    return "{" + ",".join(f"{canonical_json(k)}:{v}" for k, v in sorted(parts)) + "}"


@dataclass(frozen=True, slots=True)
class CreateRequest:
    """One create, checked, priced and canonical: what is sent, what the record keeps.

    ``body`` is the JSON body (a native create's ``payload_json`` is the canonical payload
    text); ``canonical`` the request's canonical text (kept by ``keep_payloads``) and
    ``payload_sha256`` its hash, computed once. The rest is what the record says of it,
    as the route's method knew it (never read back out of the body)."""

    route: str
    body: Mapping[str, object]
    canonical: str
    payload_sha256: str
    estimate: Estimate | None
    tool_id: str | None = None
    operation: str | None = None
    model: str | None = None
    license: int | None = None


def route_request(
    route: str,
    fields: Mapping[str, object],
    estimate: Estimate | None,
    *,
    payload: str | None = None,
    payload_text: str | None = None,
    tool_id: str | None = None,
    operation: str | None = None,
    model: str | None = None,
    license: int | None = None,
) -> CreateRequest:
    """The :class:`CreateRequest` of a checked body: ``fields`` and, for a native create,
    the canonical ``payload`` text (sent as ``payload_json``, unless the caller gave the
    payload as JSON text of their own: ``payload_text``, sent unchanged). The operation,
    model and license default to the estimate's (a route's name for the workflow and
    dedicated routes)."""
    body = dict(fields)
    if payload is not None:
        body["payload_json"] = payload if payload_text is None else payload_text
    canonical = canonical_body(fields, payload)
    return CreateRequest(
        route=route,
        body=body,
        canonical=canonical,
        payload_sha256=hashlib.sha256(canonical.encode()).hexdigest(),
        estimate=estimate,
        tool_id=tool_id,
        operation=operation or (estimate.what if estimate else None),
        model=model or (estimate.model if estimate else None),
        license=estimate.license if estimate else license,
    )


@dataclass(frozen=True, slots=True)
class Reuse:
    """How a create is named: the caller's Idempotency-Key, or a take of the request
    (``fresh``: a random key, never re-attached). ``paced``: a RateLimited answer is raised
    at once (a batch's pacer decides when to send again); ``announce``: say a re-attach in
    one line (a batch sums them up instead)."""

    key: str | None = None
    take: int = 1
    fresh: bool = False
    paced: bool = False
    announce: bool = True


def reuse_of(key: str | NotGiven | None, take: object = 1, fresh: object = False) -> Reuse:
    """The checked :class:`Reuse` of a create's ``idempotency_key``, ``take`` and ``fresh``."""
    caller_key = None if isinstance(key, NotGiven) or key is None else idempotency_key(key)
    if not (isinstance(take, int) and not isinstance(take, bool) and take >= 1):
        raise ValidationError("take", f"a whole number >= 1, got {take!r}")
    require(isinstance(fresh, bool), "fresh", f"True or False, got {fresh!r}")
    if caller_key is not None and (fresh or take != 1):
        raise ValidationError(
            "idempotency_key", "alone names the create: give it, or take=/fresh=, not both"
        )
    return Reuse(caller_key, take, fresh is True)


class CreateOptions(TypedDict, total=False):
    """The options of every create, none of them a field of the request: ``license`` (0-5
    or a tier name), ``idempotency_key`` (names the create alone), ``take`` (2, 3 ...: a
    new result for the same request) and ``fresh`` (a random key, never re-attached).
    Declared once here; a create method takes them as ``**options: Unpack[CreateOptions]``
    and mypy checks them on both clients."""

    license: int | str
    idempotency_key: str | None
    take: int
    fresh: bool


_OPTIONS: Final = frozenset(CreateOptions.__annotations__)


def create_options(options: CreateOptions, where: str) -> tuple[Reuse, int | str | NotGiven]:
    """The :class:`Reuse` and the license of a create's ``**options`` (an unknown one is
    refused as Python refuses an unexpected keyword argument)."""
    unknown = sorted(set(options) - _OPTIONS)
    if unknown:
        raise TypeError(f"{where}() got an unexpected keyword argument {unknown[0]!r}")
    reuse = reuse_of(
        options.get("idempotency_key", NOT_GIVEN),
        options.get("take", 1),
        options.get("fresh", False),
    )
    return reuse, options.get("license", NOT_GIVEN)


def request_key(key_id: str, route: str, payload_sha256: str, scope: str, take: int) -> str:
    """The Idempotency-Key of a create: the same (key id, route, canonical request, scope,
    take) always gives the same key, so the service itself deduplicates a re-run even when
    the record is lost or on another machine. 74 characters of the spec's alphabet."""
    digest = hashlib.sha256("\n".join((key_id, route, payload_sha256, scope, str(take))).encode())
    return "songlab:r:" + digest.hexdigest()


def content_keyed(canonical: str, payload_sha256: str, uploads: Mapping[str, UploadedFile]) -> str:
    """The hash that names a request: ``payload_sha256`` (its canonical text's), unless the
    request names files this client uploaded. Each such file id is then replaced by the
    SHA-256 of the file's bytes before hashing, so the same reference uploaded again under
    a new file id (the record that remembered the first upload was lost) names the same
    request: the same Idempotency-Key, and the service returns the original task instead of
    billing it again. Settings (name, consent, every other field) stay part of it."""
    known = [(fid, up.sha256) for fid, up in uploads.items() if up.sha256 and fid in canonical]
    if not known:
        return payload_sha256
    text = canonical
    for fid, sha in known:
        text = text.replace(fid, f"sha256:{sha}")
    return hashlib.sha256(text.encode()).hexdigest()


def identity_of(client: BaseClient, request: CreateRequest) -> str:
    """:func:`content_keyed` of ``request`` with the files ``client`` uploaded."""
    return content_keyed(request.canonical, request.payload_sha256, client._uploads)


def find_previous(
    client: BaseClient,
    route: str,
    payload_sha256: str,
    scope: str,
    take: int,
    also: str | None = None,
) -> CreateRecord | None:
    """The recorded create of this request on the client's account, or None (local).
    ``also``: a second hash the same request was recorded under (by file id, before
    creates were keyed by the bytes of their uploads)."""
    if client.record is None:
        return None
    for sha in dict.fromkeys(h for h in (payload_sha256, also) if h):
        found = client.record.find_request(
            key_id=client.key_id,
            base_url=client.base_url,
            route=route,
            payload_sha256=sha,
            scope=scope,
            take=take,
        )
        if found is not None:
            return found
    return None


@dataclass(frozen=True, slots=True)
class _Naming:
    """How one create is named: where it came from, its reuse scope (None: never
    re-attached), the hash of what it asks (and the one an older songlab recorded it
    under), and its Idempotency-Key."""

    origin: str | None
    scope: str | None
    identity: str
    legacy: str | None
    key: str


def _naming(client: BaseClient, request: CreateRequest, reuse: Reuse) -> _Naming:
    origin, scope = client._scope()
    if reuse.key is not None or reuse.fresh:
        scope = None
    identity = identity_of(client, request)
    legacy = request.payload_sha256 if identity != request.payload_sha256 else None
    if reuse.key is not None:
        key = reuse.key
    elif scope is None:
        key = new_idempotency_key()
    else:
        key = request_key(client.key_id, request.route, identity, scope, reuse.take)
    return _Naming(origin, scope, identity, legacy, key)


def _recorded_op(
    client: C, request: CreateRequest, reuse: Reuse, naming: _Naming
) -> Op[TaskHandle[C] | None]:
    """A handle on the recorded task of the same request, or None (none recorded, gone,
    or the record unreadable: the Idempotency-Key still lets the service deduplicate)."""
    if naming.scope is None or client.record is None:
        return None
    try:
        found = yield Work(
            functools.partial(
                find_previous,
                client,
                request.route,
                naming.identity,
                naming.scope,
                reuse.take,
                naming.legacy,
            )
        )
    except Exception:
        log.warning(
            "could not read the record %s; creating (the Idempotency-Key "
            "still lets the service deduplicate)",
            client.record.path,
            exc_info=True,
        )
        return None
    if found is None:
        return None
    handle: TaskHandle[C] | None = yield from reattach_op(client, found, reuse.announce)
    return handle


def _post_op(
    client: BaseClient, request: CreateRequest, reuse: Reuse, key: str, labels: _attribution.Labels
) -> Op[tuple[dict[str, Any], str]]:
    """POST under the active budgets: (the answer, its task id); the budgets' hold is
    released if no task id came back, committed to the task if one did."""
    reservation = client._budgets.reserve(
        request.estimate, project=labels.project, tags=labels.tags, key_id=client.key_id
    )
    try:
        data = yield Call(
            "POST",
            request.route,
            json=request.body,
            idempotency_key=key,
            final_codes=_PACED if reuse.paced else frozenset(),
        )
        task_id = data.get("task_id") if isinstance(data, dict) else None
        if not (isinstance(task_id, str) and task_id):
            raise MalformedResponse(
                f"the create answer has no task_id (got {str(data)[:200]!r}); the task may "
                f"exist: send the same create again with idempotency_key={key!r}",
                method="POST",
                path=request.route,
            )
    except BaseException:
        reservation.release()
        raise
    reservation.commit(task_id)
    return data, task_id


def _write_op(
    client: BaseClient, record: CreateRecord, request: CreateRequest, consent: object
) -> Op[None]:
    """Write the accepted create to the record; a failure is logged, never raised."""
    if client.record is None:
        return None
    try:
        yield Work(
            functools.partial(
                client.record.write,
                record,
                payload=request.canonical,
                consent_id=consent if isinstance(consent, str) else None,
            )
        )
    except Exception:
        log.exception("could not record task %s in %s", record.task_id, client.record.path)
    return None


def create_op(client: C, request: CreateRequest, reuse: Reuse) -> Op[TaskHandle[C]]:
    """POST ``request`` under its Idempotency-Key and the active budgets, record it and tell
    the listeners; or re-attach to the recorded task of the same request (no POST)."""
    naming = _naming(client, request, reuse)
    handle = yield from _recorded_op(client, request, reuse, naming)
    if handle is not None:
        return handle
    sent_at = datetime.now(UTC)
    labels = _attribution.active_labels(client)
    data, task_id = yield from _post_op(client, request, reuse, naming.key, labels)
    estimate = request.estimate
    record = CreateRecord(
        task_id=task_id,
        key_id=client.key_id,
        base_url=client.base_url,
        idempotency_key=naming.key,
        route=request.route,
        tool_id=request.tool_id,
        operation=request.operation,
        model=request.model,
        license=request.license,
        payload_sha256=naming.identity,
        estimate_usd=estimate.usd if estimate else None,
        project=labels.project,
        tags=labels.tags,
        scope=naming.scope,
        take=reuse.take if naming.scope is not None else None,
        origin=naming.origin,
        sent_at=sent_at,
        accepted_at=datetime.now(UTC),
    )
    yield from _write_op(client, record, request, data.get("consent_id"))
    _attribution.notify(client, record)
    return TaskHandle.created(data, naming.key, client)


def reattach_op(client: C, found: CreateRecord, announce: bool) -> Op[TaskHandle[C] | None]:
    """A handle on the recorded task, checked with one GET; None (and the row forgotten)
    when the service no longer has it."""
    record = client.record
    assert record is not None  # only a recorded create is found
    try:
        raw = yield Call("GET", "/v1/generations/" + path_id(found.task_id, "task_id"))
    except (NotFound, Forbidden):
        yield Work(functools.partial(record.forget, task_id=found.task_id, key_id=client.key_id))
        client._say(
            f"recorded task {found.task_id[:8]}... is gone from the service; creating it again"
        )
        return None
    task = parse_task(raw)
    if task.done:
        yield from client._seen_ended_op(found.task_id, task.status, "get")
    if announce:
        when = (
            found.accepted_at.astimezone().strftime("%H:%M")
            if found.accepted_at is not None
            else "earlier"
        )
        # which create this was, so "the same call" below is unambiguous
        what = " ".join(x for x in (found.operation, found.model) if x) or found.route
        if found.take is not None:
            what += f", take {found.take}"
        if task.status == "failed":
            client._say(
                f"reused task {found.task_id[:8]}... ({what}) from {when}: it failed (nothing "
                "was billed); the same call with take=2 or fresh=True asks again"
            )
        else:
            cost = (
                f"${found.estimate_usd.normalize():f}"
                if found.estimate_usd is not None
                else "its price"
            )
            client._say(
                f"reused task {found.task_id[:8]}... ({what}) from {when}; {cost} not "
                "spent again; the same call with fresh=True makes a new one"
            )
    consent = yield Work(
        functools.partial(record.consent_id, task_id=found.task_id, key_id=client.key_id)
    )
    body = {"task_id": found.task_id, "status": task.status, "consent_id": consent, "reused": True}
    return TaskHandle.created(body, found.idempotency_key, client)
