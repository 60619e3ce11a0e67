"""What a task runner sees: :class:`TaskContext` in, :class:`Outcome` out.

This is the seam for runners (``generation``, ``voice_clone``, ``translation``,
``workflow`` and ``agent``). The worker claims a task, calls
``runner(ctx) -> Outcome`` in a worker thread, then completes the task,
charges it and writes its ledger lines in ONE transaction (or fails and
releases it if the runner raised).

A context sees the sandbox only through its :class:`TaskEnv` (the store, the clock,
the event sink, the links, the speed, and the worker's ``sleep`` and ``run_task``),
which the worker makes from the parts ``assembly.build`` handed it.

For Agent One (``songlab.sandbox.agent.runner.run_agent(ctx: TaskContext) -> Outcome``):

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
import math
import os
import sqlite3
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any, cast

import songlab.sandbox.errors as errors
from songlab.pricing import price
from songlab.sandbox.catalog import BY_PAIR, tool_id
from songlab.sandbox.ports import EventSink, Links, Now
from songlab.sandbox.storage import billing
from songlab.sandbox.storage import file_store as storage
from songlab.sandbox.storage.db import Store
from songlab.sandbox.tasks import payloads
from songlab.sandbox.tasks import rows as tasks
from songlab.sandbox.tasks.creates import NewTask, insert
from songlab.sandbox.tasks.validation import InputSource, Resolver

if TYPE_CHECKING:
    import songlab.sandbox.engine as engine


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
    metadata: Mapping[str, object] | None = None
    assets: list[dict[str, Any]] | None = None
    charges: list[Charge] | None = None  # None: the task's price as one line of its kind
    finalize: Callable[[Store], None] | None = None  # extra writes in the completion tx


# Simulated seconds between two progress events of a running task. A 5 s song sends 20
# (every 5 %): at --speed 1 the bar moves every quarter second for about five seconds; at
# 5 % steps even a fast speed shows a bar that fills smoothly rather than in quarters.
PROGRESS_TICK = 0.25


def ticks(sim_seconds: float) -> int:
    """How many progress events ``sim_seconds`` of simulated work sends: one per
    :data:`PROGRESS_TICK`, rounded up to a multiple of 4 (so 25 %, 50 % and 75 % are among
    them), at least 4, at most 40. It depends on the work only, never on ``--speed``."""
    per_tick = max(1, math.ceil(sim_seconds / PROGRESS_TICK / 4))
    return min(40, 4 * per_tick)


# At most one engine call per core at a time: more threads in CPU-bound numpy code only
# fight over the GIL and slow the event loop (create latency, polling) for nothing.
CPU_GATE = threading.BoundedSemaphore(max(1, os.cpu_count() or 1))


class SubtaskRefused(Exception):
    """A sub-task create was refused; ``body`` is the pipeline error body."""

    def __init__(self, status: int, body: dict[str, Any]) -> None:
        super().__init__(body.get("message", body.get("error")))
        self.status = status
        self.body = body


@dataclass(frozen=True, slots=True)
class TaskEnv:
    """What every task context of one worker shares: the parts a runner may call on."""

    store: Store
    clock: Now
    events: EventSink
    links: Links
    speed: float
    sleep: Callable[[float], None]  # real seconds, cut short when the worker stops
    run_task: Callable[[str], None]  # run a queued (sub-)task now, in this thread


class TaskContext:
    """One task as its runner sees it: its row's fields, and what the runner may do."""

    def __init__(self, env: TaskEnv, row: sqlite3.Row) -> None:
        self.env = env
        self.store = env.store
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
        self.seed = (
            seed
            if isinstance(seed, int) and not isinstance(seed, bool)
            else int.from_bytes(hashlib.sha256(self.task_id.encode()).digest()[:4], "little")
        )

    # --- pacing and events -------------------------------------------------------

    def now(self) -> float:
        """The sandbox clock."""
        return self.env.clock.now()

    @property
    def base_url(self) -> str:
        """The sandbox's address (an asset's ``url`` is a locator below it)."""
        return self.env.links.base_url

    def sleep(self, sim_seconds: float) -> None:
        self.env.sleep(sim_seconds / self.env.speed)

    def emit(self, kind: str, **data: object) -> int:
        return self.env.events.emit(self.task_id, kind, data)

    def advance(self, sim_seconds: float, start: float, end: float) -> Iterator[float]:
        """Spend ``sim_seconds`` of simulated work moving progress from ``start`` to ``end``:
        one ``progress`` event every :data:`PROGRESS_TICK` simulated seconds (the count is
        :func:`ticks`, fixed by the work, so every ``--speed`` sends the same events). Yields
        each fraction after its event, so a runner can emit more at a given point."""
        n = ticks(sim_seconds)
        for i in range(1, n + 1):
            self.sleep(sim_seconds / n)
            fraction = start + (end - start) * i / n
            self.progress(fraction)
            yield fraction

    def progress(self, fraction: float, **data: object) -> None:
        fraction = round(min(max(fraction, 0.0), 1.0), 4)
        with self.store.tx():
            self.store.execute(
                "UPDATE tasks SET progress = ?, updated_at = ? WHERE id = ?",
                (fraction, self.env.clock.now(), self.task_id),
            )
            self.emit("progress", status="processing", progress=fraction, **data)

    # --- audio ---------------------------------------------------------------------

    def audio_in(self, name: str) -> engine.AudioIn:
        return file_audio(self.store, self.inputs[name])

    def voice(self, vocal_id: str | None = None) -> engine.Voice | None:
        vid = vocal_id or self.vocal_id
        if vid is None:
            return None
        import songlab.sandbox.engine as engine

        row = self.store.one("SELECT timbre FROM voices WHERE id = ?", (vid,))
        return None if row is None else engine.Voice.from_dict(json.loads(row[0]))

    def render(
        self,
        operation: str,
        model: str,
        payload: dict[str, Any],
        *,
        inputs: dict[str, engine.AudioIn] | None = None,
        voice: engine.Voice | None = None,
    ) -> engine.RenderResult:
        import songlab.sandbox.engine as engine

        with CPU_GATE:
            return engine.render(
                operation, model, payload, seed=self.seed, inputs=inputs or {}, voice=voice
            )

    def store_asset(self, asset: engine.Asset, *, origin: str = "output") -> dict[str, Any]:
        meta = storage.put(
            self.store,
            account_id=self.account_id,
            data=asset.data,
            mime_type=asset.mime_type,
            origin=origin,
            now=self.env.clock.now(),
            task_id=self.task_id,
            name=asset.name,
            recipe=asset.recipe,
            duration_s=asset.duration_s,
        )
        return {
            "file_id": meta["id"],
            "blob_hash": meta["sha256"],
            "url": storage.locator(meta["id"]),
            "name": asset.name,
            "mime_type": asset.mime_type,
            "duration_s": round(asset.duration_s, 3),
        }

    def signed_url(self, file_id: str) -> str:
        return self.env.links.signed_url(file_id)[0]

    # --- money ---------------------------------------------------------------------

    def price_units(self, operation: str, model: str) -> int:
        return billing.to_units(price(operation, model, self.license))

    def charge(self, kind: str, operation: str, model: str, units: int | None = None) -> Charge:
        if units is None:
            units = self.price_units(operation, model)
        return Charge(kind, operation, model, units, tool_id(operation, model))

    def agent_fee(self, amount: Decimal) -> Charge:
        return Charge(
            "agent_fee", self.operation, self.model, billing.to_units(amount), self.tool_id
        )

    # --- sub-tasks (Agent One) -----------------------------------------------------

    def create_subtask(
        self, operation: str, model: str, payload: dict[str, Any], *, license: int | None = None
    ) -> str:
        lic = self.license if license is None else license
        tool = BY_PAIR.get((operation, model))
        try:
            if tool is None or operation == "agent":
                raise errors.invalid("tool", f"no sub-tool ({operation!r}, {model!r})")
            # Validation runs before the insert's transaction (as in Creates.submit): it may
            # decode an input file, which must not hold the store's lock; it writes nothing.
            resolved = payloads.validate(
                operation,
                payload,
                Resolver(InputSource(self.store, self.env.links), self.account_id),
            )
            with self.store.tx():
                spec = NewTask(
                    operation=operation,
                    model=model,
                    tool_id=tool.id,
                    license=lic,
                    kind="voice_clone" if operation == "vocal_clone" else "generation",
                    ledger_kind="agent_sub_tool",
                    payload=payload,
                    resolved=resolved,
                    price_units=billing.to_units(price(operation, model, lic)),
                    parent_task_id=self.task_id,
                )
                task_id, _ = insert(
                    self.store, self.env.events, self.account_id, spec, self.env.clock.now()
                )
        except errors.ApiError as exc:
            raise SubtaskRefused(exc.status, exc.body) from None
        return task_id

    def run_subtask(self, task_id: str) -> dict[str, Any]:
        self.env.run_task(task_id)
        row = tasks.get(self.store, task_id)
        assert row is not None  # a task row is never deleted
        return tasks.snapshot(row, self.env.links.base_url)


def file_audio(store: Store, file_id: str) -> engine.AudioIn:
    import songlab.sandbox.engine as engine

    m = storage.meta(store, file_id)
    if m is None:
        raise KeyError(file_id)
    # the recipe the engine stored with the file, read back from its JSON
    made = cast("engine.Recipe | None", storage.recipe(store, file_id))
    return engine.AudioIn(storage.data(store, file_id), m["mime_type"], made)
