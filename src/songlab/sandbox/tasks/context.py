"""What a task runner sees: :class:`TaskContext` in, :class:`Outcome` out.

This is the seam for runners (``generation``, ``voice_clone``, ``translation``,
``workflow`` and ``agent``). The worker claims a task, calls
``runner(ctx) -> Outcome`` in a worker thread, then completes the task,
charges it and writes its ledger lines in ONE transaction (or fails and
releases it if the runner raised).

For Agent One (``songlab.sandbox.agent``, a module exposing
``run(ctx: TaskContext) -> Outcome``):

- ``ctx.create_subtask(operation, model, payload, license=None) -> task_id``:
  a sub-task of the same account with ``parent_task_id`` = the run, validated
  like a native create (file inputs as ``file_id:<id>``), its price reserved
  (raises :class:`SubtaskRefused` with the pipeline error body: 402, 422, ...).
  Validation and insert share one transaction: a refused sub-task stores nothing.
  Internal tools (``web_search``, ``mix``, ``translate_lyrics``) are allowed.
- ``ctx.run_subtask(task_id) -> snapshot``: runs it now, in this thread; it is
  charged at its own completion as a ledger line of kind ``agent_sub_tool``
  (``task_id`` = the sub-task, ``parent_task_id`` = the run).
- ``ctx.agent_fee(amount: Decimal) -> Charge``: the run's own fee line
  (kind ``agent_fee``); return it in ``Outcome.charges``. The reserve floor held
  at create is settled against it (unused part released).
- ``ctx.sleep(sim_seconds)`` (scaled by ``--speed``), ``ctx.progress(f, **data)``,
  ``ctx.emit(kind, **data)``, ``ctx.render(...)``, ``ctx.store_asset(asset)``.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from songlab.pricing import price
from songlab.sandbox import errors
from songlab.sandbox.catalog import BY_PAIR, tool_id
from songlab.sandbox.storage import billing
from songlab.sandbox.storage import files as storage
from songlab.sandbox.storage.db import Store
from songlab.sandbox.tasks import payloads
from songlab.sandbox.tasks.validation import Resolver

if TYPE_CHECKING:
    from songlab.sandbox import engine
    from songlab.sandbox.service import Sandbox


@dataclass(slots=True)
class Charge:
    """One ledger line to write when the task completes."""

    kind: str
    operation: str
    model: str
    units: int
    tool_id: str | None = None


@dataclass(slots=True)
class Outcome:
    text: str | None = None
    metadata: dict[str, Any] | None = None
    assets: list[dict[str, Any]] | None = None
    charges: list[Charge] | None = None  # None: the task's price as one line of its kind
    finalize: Callable[[Store], None] | None = None  # extra writes in the completion tx


# At most one engine call per core at a time: more threads in CPU-bound numpy code only
# fight over the GIL and slow the event loop (create latency, polling) for nothing.
CPU_GATE = threading.BoundedSemaphore(max(1, os.cpu_count() or 1))


class SubtaskRefused(Exception):
    """A sub-task create was refused; ``body`` is the pipeline error body."""

    def __init__(self, status: int, body: dict[str, Any]) -> None:
        super().__init__(body.get("message", body.get("error")))
        self.status = status
        self.body = body


class TaskContext:
    def __init__(self, svc: Sandbox, row: Any) -> None:
        self.svc = svc
        self.task_id: str = row["id"]
        self.account_id: str = row["account_id"]
        self.operation: str = row["operation"]
        self.model: str = row["model"]
        self.license: int = row["license"]
        self.tool_id: str | None = row["tool_id"]
        self.parent_task_id: str | None = row["parent_task_id"]
        self.payload: dict[str, Any] = json.loads(row["payload"])
        resolved = json.loads(row["inputs"])
        self.inputs: dict[str, str] = resolved["files"]
        self.durations: dict[str, float] = resolved.get("durations", {})
        self.vocal_id: str | None = resolved["vocal_id"]
        seed = self.payload.get("seed")
        self.seed = seed if isinstance(seed, int) and not isinstance(seed, bool) else int.from_bytes(
            hashlib.sha256(self.task_id.encode()).digest()[:4], "little")

    # --- pacing and events -------------------------------------------------------

    def sleep(self, sim_seconds: float) -> None:
        self.svc.worker.sleep(sim_seconds / self.svc.config.speed)

    def emit(self, kind: str, **data: Any) -> int:
        return self.svc.emit(self.task_id, kind, data)

    def progress(self, fraction: float, **data: Any) -> None:
        fraction = round(min(max(fraction, 0.0), 1.0), 4)
        with self.svc.store.tx():
            self.svc.store.execute("UPDATE tasks SET progress = ?, updated_at = ? WHERE id = ?",
                                   (fraction, self.svc.clock.now(), self.task_id))
            self.emit("progress", status="processing", progress=fraction, **data)

    # --- audio ---------------------------------------------------------------------

    def audio_in(self, name: str) -> engine.AudioIn:
        return file_audio(self.svc.store, self.inputs[name])

    def voice(self, vocal_id: str | None = None) -> engine.Voice | None:
        vid = vocal_id or self.vocal_id
        if vid is None:
            return None
        from songlab.sandbox import engine

        row = self.svc.store.one("SELECT timbre FROM voices WHERE id = ?", (vid,))
        return None if row is None else engine.Voice.from_dict(json.loads(row[0]))

    def render(self, operation: str, model: str, payload: dict[str, Any], *,
               inputs: dict[str, engine.AudioIn] | None = None,
               voice: engine.Voice | None = None) -> engine.RenderResult:
        from songlab.sandbox import engine

        with CPU_GATE:
            return engine.render(operation, model, payload, seed=self.seed,
                                 inputs=inputs or {}, voice=voice)

    def store_asset(self, asset: engine.Asset, *, origin: str = "output") -> dict[str, Any]:
        meta = storage.put(
            self.svc.store, account_id=self.account_id, data=asset.data,
            mime_type=asset.mime_type, origin=origin, now=self.svc.clock.now(),
            task_id=self.task_id, name=asset.name, recipe=asset.recipe,
            duration_s=asset.duration_s,
        )
        return {"file_id": meta["id"], "blob_hash": meta["sha256"],
                "url": storage.locator(meta["id"]), "name": asset.name,
                "mime_type": asset.mime_type, "duration_s": round(asset.duration_s, 3)}

    def signed_url(self, file_id: str) -> str:
        return self.svc.signed_url(file_id)[0]

    # --- money ---------------------------------------------------------------------

    def price_units(self, operation: str, model: str) -> int:
        return billing.to_units(price(operation, model, self.license))

    def charge(self, kind: str, operation: str, model: str, units: int | None = None) -> Charge:
        if units is None:
            units = self.price_units(operation, model)
        return Charge(kind, operation, model, units, tool_id(operation, model))

    def agent_fee(self, amount: Decimal) -> Charge:
        return Charge("agent_fee", self.operation, self.model, billing.to_units(amount),
                      self.tool_id)

    # --- sub-tasks (Agent One) -----------------------------------------------------

    def create_subtask(self, operation: str, model: str, payload: dict[str, Any], *,
                       license: int | None = None) -> str:
        from songlab.sandbox.tasks.creates import NewTask, insert

        lic = self.license if license is None else license
        tool = BY_PAIR.get((operation, model))
        try:
            if tool is None or operation == "agent":
                raise errors.invalid("tool", f"no sub-tool ({operation!r}, {model!r})")
            # Validation runs before the insert's transaction (as in creates.submit): it may
            # decode an input file, which must not hold the store's lock; it writes nothing.
            resolved = payloads.validate(operation, payload, Resolver(self.svc, self.account_id))
            with self.svc.store.tx():
                spec = NewTask(
                    operation=operation, model=model, tool_id=tool.id, license=lic,
                    kind="voice_clone" if operation == "vocal_clone" else "generation",
                    ledger_kind="agent_sub_tool", payload=payload, resolved=resolved,
                    price_units=billing.to_units(price(operation, model, lic)),
                    parent_task_id=self.task_id,
                )
                task_id, _ = insert(self.svc, self.account_id, spec, self.svc.clock.now())
        except errors.ApiError as exc:
            raise SubtaskRefused(exc.status, exc.body) from None
        return task_id

    def run_subtask(self, task_id: str) -> dict[str, Any]:
        from songlab.sandbox.tasks import rows as tasks

        self.svc.worker.run(task_id)
        row = tasks.get(self.svc.store, task_id)
        return tasks.snapshot(row, self.svc.base_url)


def file_audio(store: Store, file_id: str) -> engine.AudioIn:
    from songlab.sandbox import engine

    m = storage.meta(store, file_id)
    if m is None:
        raise KeyError(file_id)
    return engine.AudioIn(storage.data(store, file_id), m["mime_type"],
                          storage.recipe(store, file_id))
