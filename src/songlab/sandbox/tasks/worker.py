"""The task state machine: queued -> processing -> completed | failed, in background threads.

Work goes on whether or not anyone polls or streams. A runner per task kind
(the runner table handed in by :func:`songlab.sandbox.assembly.build`) does the work; completion, the charge and the ledger lines are
one transaction, and so are failure and the release of the reservation, so a
task is never billed twice. On start, tasks left in flight by a previous
process are recovered: queued and processing top-level tasks run again from the
start (nothing of theirs was billed), except Agent One runs and sub-tasks that
were already processing, which fail cleanly and are released (their sub-tools
may have billed already; re-running would bill them twice).
"""

from __future__ import annotations

import json
import logging
import queue
import threading
from collections.abc import Callable
from typing import Any

from songlab.sandbox.ports import EventSink, FaultGate, Links, Now
from songlab.sandbox.storage import billing
from songlab.sandbox.storage.billing import Reservation
from songlab.sandbox.storage.db import Store
from songlab.sandbox.tasks import rows as tasks
from songlab.sandbox.tasks.context import Charge, Outcome, TaskContext, TaskEnv

log = logging.getLogger("songlab.sandbox.tasks.worker")
Runner = Callable[[TaskContext], Outcome]
FAILED = "GenerationFailed"


class Worker:
    """Runs queued tasks in ``workers`` threads with the runner of each task's kind.

    ``load_runners`` returns the runner table (task kind -> runner); it is called once,
    in the background at start (the runners load the audio engine), or by the first task.
    """

    def __init__(
        self,
        *,
        store: Store,
        clock: Now,
        events: EventSink,
        links: Links,
        faults: FaultGate,
        load_runners: Callable[[], dict[str, Runner]],
        workers: int,
        speed: float,
    ) -> None:
        self._store = store
        self._clock = clock
        self._events = events
        self._faults = faults
        self._load_runners = load_runners
        self._workers = workers
        self.env = TaskEnv(
            store=store,
            clock=clock,
            events=events,
            links=links,
            speed=speed,
            sleep=self.sleep,
            run_task=self.run,
        )
        self._queue: queue.Queue[str | None] = queue.Queue()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._runners: dict[str, Runner] | None = None
        self._runners_lock = threading.Lock()

    @property
    def runners(self) -> dict[str, Runner]:
        with self._runners_lock:
            if self._runners is None:
                self._runners = self._load_runners()
            return self._runners

    def start(self) -> None:
        # The runners (and the audio engine behind them) load in the background, so the
        # server answers at once; the first task waits for the import if it must.
        threading.Thread(target=lambda: self.runners, name="songlab-preload", daemon=True).start()
        for tid in self._recover():
            self._queue.put(tid)
        for i in range(self._workers):
            t = threading.Thread(target=self._loop, name=f"songlab-worker-{i}", daemon=True)
            t.start()
            self._threads.append(t)

    def stop(self) -> None:
        self._stop.set()
        for _ in self._threads:
            self._queue.put(None)
        for t in self._threads:
            t.join(timeout=10)
        self._threads.clear()

    def submit(self, task_id: str) -> None:
        self._queue.put(task_id)

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            self._stop.wait(seconds)

    def _recover(self) -> list[str]:
        store = self._store
        rows = store.all(
            "SELECT id, status, kind, parent_task_id FROM tasks "
            "WHERE status IN ('queued', 'processing') ORDER BY rowid"
        )
        requeue = []
        for r in rows:
            if r["parent_task_id"] is not None or (
                r["kind"] == "agent" and r["status"] == "processing"
            ):
                self.fail(r["id"], "interrupted by a sandbox restart; released, not billed")
                continue
            if r["status"] == "processing":
                with store.tx():
                    store.execute(
                        "UPDATE tasks SET status = 'queued', progress = NULL, "
                        "updated_at = ? WHERE id = ?",
                        (self._clock.now(), r["id"]),
                    )
                    self._events.emit(
                        r["id"],
                        "progress",
                        {
                            "status": "queued",
                            "progress": 0.0,
                            "message": "resumed after a sandbox restart",
                        },
                    )
            requeue.append(r["id"])
        return requeue

    def _loop(self) -> None:
        while not self._stop.is_set():
            tid = self._queue.get()
            if tid is None:
                return
            try:
                self.run(tid)
            except Exception:  # the store may be closing; never kill the thread
                log.exception("worker failed on task %s", tid)

    # --- one task ------------------------------------------------------------------

    def run(self, task_id: str) -> None:
        row = self._claim(task_id)
        if row is None:
            return
        # the engine's error types: the engine (numpy) is loaded by now (the runners import
        # it); imported here so that importing the worker does not load it at start-up
        import songlab.sandbox.engine as engine

        ctx = TaskContext(self.env, row)
        if self._faults.fail_task():
            ctx.sleep(0.5)
            self.fail(task_id, "the generation failed (injected fault)")
            return
        try:
            outcome = self.runners[row["kind"]](ctx)
        except (engine.RenderError, engine.EngineInputError) as exc:
            self.fail(task_id, str(exc))
            return
        except Exception as exc:
            if self._stop.is_set():
                return  # shutting down: the task stays in flight and is recovered
            log.exception("runner failed on task %s", task_id)
            self.fail(task_id, f"internal error: {type(exc).__name__}")
            return
        if self._stop.is_set():
            return
        self.complete(task_id, outcome)

    def _claim(self, task_id: str) -> Any:
        store = self._store
        with store.tx():
            row = tasks.get(store, task_id)
            if row is None or row["status"] != "queued":
                return None
            store.execute(
                "UPDATE tasks SET status = 'processing', progress = 0.0, updated_at = ? "
                "WHERE id = ?",
                (self._clock.now(), task_id),
            )
            self._events.emit(task_id, "progress", {"status": "processing", "progress": 0.0})
            return tasks.get(store, task_id)

    def complete(self, task_id: str, outcome: Outcome) -> None:
        store, now = self._store, self._clock.now()
        with store.tx():
            row = tasks.get(store, task_id)
            if row is None or row["status"] != "processing":
                return
            charges = outcome.charges
            if charges is None:
                charges = [
                    Charge(
                        row["ledger_kind"],
                        row["operation"],
                        row["model"],
                        row["price_units"],
                        row["tool_id"],
                    )
                ]
            total = sum(c.units for c in charges)
            charged = billing.settle(
                store,
                row["account_id"],
                Reservation(row["reserved_base"], row["reserved_extra"]),
                total,
                now,
            )
            short = total - charged  # only when a usage fee outgrew the balance
            for c in reversed(charges):
                cut = min(short, c.units)
                c.units -= cut
                short -= cut
            parent = row["parent_task_id"]
            if row["kind"] in ("translation", "workflow", "agent"):
                parent = task_id
            for c in charges:
                billing.add_line(
                    store,
                    account_id=row["account_id"],
                    task_id=task_id,
                    parent_task_id=parent,
                    tool_id=c.tool_id,
                    operation=c.operation,
                    model=c.model,
                    license=row["license"],
                    kind=c.kind,
                    units=c.units,
                    now=now,
                )
            if outcome.finalize is not None:
                outcome.finalize(store)
            store.execute(
                "UPDATE tasks SET status = 'completed', progress = 1.0, output_text = ?, "
                "output_metadata = ?, output_assets = ?, cost_units = ?, reserved_base = 0, "
                "reserved_extra = 0, updated_at = ? WHERE id = ?",
                (
                    outcome.text,
                    json.dumps(outcome.metadata or {}),
                    None if not outcome.assets else json.dumps(outcome.assets),
                    self._cost(task_id),
                    now,
                    task_id,
                ),
            )
            self._events.emit(task_id, "terminal", {"status": "completed", "progress": 1.0})

    def fail(self, task_id: str, message: str) -> None:
        store, now = self._store, self._clock.now()
        with store.tx():
            row = tasks.get(store, task_id)
            if row is None or row["status"] in ("completed", "failed"):
                return
            billing.release(
                store, row["account_id"], Reservation(row["reserved_base"], row["reserved_extra"])
            )
            store.execute(
                "UPDATE tasks SET status = 'failed', failure = ?, cost_units = ?, "
                "reserved_base = 0, reserved_extra = 0, updated_at = ? WHERE id = ?",
                (
                    json.dumps({"error": FAILED, "message": message}),
                    self._cost(task_id),
                    now,
                    task_id,
                ),
            )
            self._events.emit(task_id, "terminal", {"status": "failed", "message": message})

    def _cost(self, task_id: str) -> int:
        units: int = self._store.value(
            "SELECT COALESCE(SUM(amount_units), 0) FROM ledger WHERE task_id = ? OR "
            "parent_task_id = ?",
            (task_id, task_id),
        )
        return units
