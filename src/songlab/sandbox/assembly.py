"""The sandbox assembled in one place: :func:`build` makes every part and wires them.

Order (each part gets only what it calls, typed by the Protocols of
:mod:`songlab.sandbox.ports`, never the whole sandbox):

1. ``store`` (SQLite), ``clock`` (its offset persisted in the store), ``faults``,
   ``catalog``, ``links`` (signer + address), ``accounts`` (seeds the demo account);
2. ``events`` (the event log; a clock advance wakes every stream reader);
3. ``worker`` with the runner table (generation, voice clone, translation, workflow,
   Agent One), each runner seeing one task through a ``TaskContext``;
4. ``creates`` (the shared create path; it queues on the worker);
5. ``asgi``: the FastAPI route groups behind the hot path and the answer profile.
"""

from __future__ import annotations

from dataclasses import dataclass

from starlette.types import ASGIApp

from songlab.sandbox.catalog import Catalog
from songlab.sandbox.config import SandboxConfig
from songlab.sandbox.http.app import create_asgi
from songlab.sandbox.storage.accounts import Accounts
from songlab.sandbox.storage.clock import Clock
from songlab.sandbox.storage.db import Store
from songlab.sandbox.storage.file_store import Links, Signer
from songlab.sandbox.tasks.creates import Creates
from songlab.sandbox.tasks.events import EventLog
from songlab.sandbox.tasks.faults import Faults
from songlab.sandbox.tasks.worker import Runner, Worker


def load_runners() -> dict[str, Runner]:
    """The runner of each task kind.

    Imported when first needed (the worker calls this in a background thread at
    start): the runners import the audio engine and with it numpy, which would
    otherwise delay the server's first answer. Nothing of the sandbox imports the
    assembly, so this hides no import order.
    """
    from songlab.sandbox.agent.runner import run_agent
    from songlab.sandbox.tasks import generation, pipelines

    return {
        "generation": generation.run_generation,
        "voice_clone": generation.run_voice_clone,
        "translation": pipelines.run_translation,
        "workflow": pipelines.run_workflow,
        "agent": run_agent,
    }


@dataclass(frozen=True, eq=False)
class Sandbox:
    """Every part of one sandbox, as :func:`build` made them, and its lifecycle."""

    config: SandboxConfig
    store: Store
    clock: Clock
    faults: Faults
    catalog: Catalog
    links: Links
    accounts: Accounts
    events: EventLog
    worker: Worker
    creates: Creates
    asgi: ASGIApp

    def __repr__(self) -> str:
        return f"Sandbox(base_url={self.links.base_url!r}, db={self.config.db!r})"

    def set_address(self, host: str, port: int) -> None:
        """The bound address, once the server knows its port (signed URLs name it)."""
        self.links.set_address(host, port)

    def start(self) -> None:
        self.worker.start()

    def kept(self, account_id: str) -> tuple[int, int]:
        """(tasks of ``account_id``, of which queued or processing): what a sandbox on a
        kept file found, its worker resuming the second (read after :meth:`start`)."""
        row = self.store.one(
            "SELECT COUNT(*), SUM(status IN ('queued', 'processing')) FROM tasks "
            "WHERE account_id = ? AND parent_task_id IS NULL",
            (account_id,),
        )
        return (int(row[0]), int(row[1] or 0)) if row is not None else (0, 0)

    def close(self) -> None:
        self.worker.stop()
        self.store.close()


def build(config: SandboxConfig) -> Sandbox:
    """Make and wire every part of a sandbox for ``config`` (not started: see ``start``)."""
    store = Store(config.db)
    clock = Clock(float(store.get_meta("clock_offset") or 0.0))
    faults = Faults()
    catalog = Catalog(store)
    links = Links(Signer(store), clock, config.host, config.port)
    accounts = Accounts(store, clock)
    accounts.seed_demo()
    events = EventLog(store, clock)
    clock.on_advance(events.hub.notify_all)
    clock.on_advance(lambda: store.set_meta("clock_offset", repr(clock.offset)))
    worker = Worker(
        store=store,
        clock=clock,
        events=events,
        links=links,
        faults=faults,
        load_runners=load_runners,
        workers=config.workers,
        speed=config.speed,
    )
    creates = Creates(store, clock, faults, events, links, worker)
    parts = _Parts(config, store, clock, faults, catalog, links, accounts, events, creates)
    return Sandbox(
        config=config,
        store=store,
        clock=clock,
        faults=faults,
        catalog=catalog,
        links=links,
        accounts=accounts,
        events=events,
        worker=worker,
        creates=creates,
        asgi=create_asgi(parts),
    )


@dataclass(frozen=True)
class _Parts:
    """What the HTTP layer is handed (:class:`~songlab.sandbox.http.app.AppParts`)."""

    config: SandboxConfig
    store: Store
    clock: Clock
    faults: Faults
    catalog: Catalog
    links: Links
    accounts: Accounts
    events: EventLog
    creates: Creates
