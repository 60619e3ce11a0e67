"""What every create route shares: faults, idempotency, rate limits, reservation, insert.

A route builds a :class:`NewTask` (validation happens in its ``build``
callable, after the idempotency lookup, so a repeat returns the original answer
whatever its body says) and hands it to :meth:`Creates.submit`, which runs the checks
and the insert in one transaction: 50 concurrent calls with one key make one
task and one reservation. Only accepted creates are remembered under their key.

Validation runs *before* that transaction and writes nothing: it may decode an
input file the first time the file is used (the verdict is then cached with the
file), and every worker thread waits on the store's lock, so no decode may run
while it is held. What validation wants stored (the file of an inline base64
input) is carried in the :class:`NewTask` and written by :func:`insert`, so a
refused create stores nothing. Routes call :meth:`Creates.submit` from a worker thread
(``run_in_threadpool``), never on the event loop.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import songlab.sandbox.errors as errors
from songlab.sandbox.ports import EventSink, FaultGate, Links, Now, Scheduler
from songlab.sandbox.storage import billing
from songlab.sandbox.storage.db import Store
from songlab.sandbox.tasks import ratelimit
from songlab.sandbox.tasks import rows as tasks
from songlab.sandbox.tasks.ratelimit import Bucket
from songlab.sandbox.tasks.validation import InputSource, Resolved, Resolver
from songlab.spec import IDEMPOTENCY_KEY_PATTERN, ErrorCode

_KEY_RE = re.compile(IDEMPOTENCY_KEY_PATTERN)


@dataclass(slots=True)
class NewTask:
    operation: str
    model: str
    tool_id: str | None
    license: int
    kind: str  # runner: generation, voice_clone, translation, workflow, agent
    ledger_kind: str
    payload: dict[str, Any]
    resolved: Resolved
    price_units: int
    buckets: list[Bucket] = field(default_factory=list)
    parent_task_id: str | None = None
    # runs in the create transaction before the task row (e.g. the consent record)
    before_insert: Callable[[Store, str], dict[str, Any]] | None = None


def valid_key(key: str | None) -> str | None:
    """The key if it follows the spec's format; a malformed key means no dedup."""
    return key if key is not None and _KEY_RE.fullmatch(key) else None  # not "key\n"


def _lookup(store: Store, account_id: str, key: str) -> tuple[int, dict[str, Any]] | None:
    row = store.one(
        "SELECT status_code, body FROM idempotency WHERE account_id = ? AND key = ?",
        (account_id, key),
    )
    return None if row is None else (row[0], json.loads(row[1]))


class Creates:
    """The create path every create route shares (and the resolver of its file inputs)."""

    def __init__(
        self,
        store: Store,
        clock: Now,
        faults: FaultGate,
        events: EventSink,
        links: Links,
        scheduler: Scheduler,
    ) -> None:
        self._store = store
        self._clock = clock
        self._faults = faults
        self._events = events
        self._inputs = InputSource(store, links)
        self._scheduler = scheduler

    def resolver(self, account_id: str) -> Resolver:
        """The file inputs and saved voices of ``account_id``, for a payload's validation."""
        return Resolver(self._inputs, account_id)

    def submit(
        self, account_id: str, idempotency_key: str | None, build: Callable[[], NewTask]
    ) -> tuple[int, dict[str, Any]]:
        """Run one create: returns (201, body) or raises :class:`errors.ApiError`."""
        self._faults.check_create()
        store = self._store
        key = valid_key(idempotency_key)
        if key is not None and (hit := _lookup(store, account_id, key)) is not None:
            return hit
        spec = build()  # outside the lock: validation may decode audio (once per file)
        with store.tx():
            if key is not None and (hit := _lookup(store, account_id, key)) is not None:
                return hit
            now = self._clock.now()
            ratelimit.check(store, account_id, spec.buckets, now)
            task_id, body = insert(store, self._events, account_id, spec, now)
            ratelimit.record(store, account_id, spec.buckets, now)
            if key is not None:
                store.execute(
                    "INSERT INTO idempotency (account_id, key, status_code, body, created_at) "
                    "VALUES (?,?,?,?,?)",
                    (account_id, key, 201, json.dumps(body), now),
                )
        self._scheduler.submit(task_id)
        return 201, body


def insert(
    store: Store, events: EventSink, account_id: str, spec: NewTask, now: float
) -> tuple[str, dict[str, Any]]:
    """Reserve the price and insert the queued task (inside the caller's transaction)."""
    try:
        r = billing.reserve(store, account_id, spec.price_units, now)
    except billing.InsufficientFunds as exc:
        raise errors.pipeline(ErrorCode.INSUFFICIENT_FUNDS, str(exc)) from None
    for inline in spec.resolved.new_files:  # inline inputs, checked by validation
        inline.store(store, now)
    task_id = str(uuid.uuid4())
    extra = spec.before_insert(store, task_id) if spec.before_insert else {}
    tasks.insert(
        store,
        {
            "id": task_id,
            "account_id": account_id,
            "tool_id": spec.tool_id,
            "operation": spec.operation,
            "model": spec.model,
            "license": spec.license,
            "kind": spec.kind,
            "ledger_kind": spec.ledger_kind,
            "status": "queued",
            "payload": json.dumps(spec.payload),
            "inputs": json.dumps(
                {
                    "files": spec.resolved.inputs,
                    "vocal_id": spec.resolved.vocal_id,
                    "durations": spec.resolved.durations,
                }
            ),
            "parent_task_id": spec.parent_task_id,
            "price_units": spec.price_units,
            "reserved_base": r.base,
            "reserved_extra": r.extra,
            "created_at": now,
            "updated_at": now,
        },
    )
    events.emit(task_id, "progress", {"status": "queued", "progress": 0.0})
    return task_id, {"task_id": task_id, "status": "queued", **extra}
