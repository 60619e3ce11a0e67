"""The fault storm: many generations through one songlab client against a faulty sandbox.

Used by ``tests/reliability/test_fault_storm.py`` (a few dozen generations),
``test_restarts.py`` and ``test_fault_proxy.py`` (the sandbox SIGKILLed and
restarted, or a misbehaving proxy in front of it) and ``benchmarks/fault_storm.py``
(1,000). It creates accounts through the admin routes, turns faults on
(``PUT /_sandbox/faults``: 429 RateLimited and 503 DependencyUnavailable on
creates, streams cut every few events, latency on every vendor route), runs
every generation as create -> stream (or create -> ``wait(on_event=...)``),
optionally while ``disrupt`` runs (restarts), turns faults off, and then checks,
from the server's own records, that:

- every create and every wait returned normally, and every task ended ``completed``;
- every account holds exactly the tasks created, its ledger has exactly one line
  per task, at the tool's price, and its balance moved by exactly their sum;
- every stream delivered each task event exactly once, in order, ending with
  ``terminal``: the same (seq, kind) list the server stored.

Counts of what happened on the wire come from a transport wrapper that sees every
answer and every transport error the client got (the client never knows it is there).
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import httpx

from songlab.client import AsyncClient, Client, RetryPolicy
from songlab.pricing import price
from songlab.sandbox.catalog import tool_id

StoredEvents = Callable[[list[str]], dict[str, list[tuple[int, str]]]]
Seen = list[tuple[int, str]]
# Deadline-bound retries (no attempt count) with a short backoff cap: at 30% + 10% injected
# refusals an attempt fails with probability ~0.37, and a restart lasts a few seconds.
STORM_RETRY = RetryPolicy(base_s=0.005, cap_s=0.5, max_total_s=60.0, create_deadline_s=60.0)
DEFAULT_FAULTS: dict[str, Any] = {
    "rate_limited": 0.3,
    "dependency_unavailable": 0.1,
    "drop_stream_after": 3,
    "latency_ms": 50,
    "seed": 20261122,
}
# write_lyrics is the cheapest short generation (no audio to render, $0.02).
OPERATION, MODEL = "write_lyrics", "v5"
PER_ACCOUNT = 50  # stays well under the per-tool hourly rate limit (100) of one account


def _kind(request: httpx.Request) -> str:
    path = request.url.path
    return (
        "stream"
        if path.endswith("/stream")
        else "create"
        if request.method == "POST" and path == "/v1/generations"
        else "get"
        if path.startswith("/v1/generations/")
        else "other"
    )


class CountingTransport(httpx.AsyncBaseTransport):
    """Counts (route kind, status or error) of every answer; forwards to the real transport."""

    def __init__(self, counts: Counter[str]) -> None:
        self._inner = httpx.AsyncHTTPTransport()
        self.counts = counts

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        try:
            response = await self._inner.handle_async_request(request)
        except Exception as exc:
            self.counts[f"{_kind(request)}:{type(exc).__name__}"] += 1
            raise
        self.counts[f"{_kind(request)}:{response.status_code}"] += 1
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()


class SyncCountingTransport(httpx.BaseTransport):
    """The same count for the sync client (shared by its threads)."""

    def __init__(self, counts: Counter[str]) -> None:
        self._inner = httpx.HTTPTransport()
        self.counts = counts
        self._lock = threading.Lock()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        try:
            response = self._inner.handle_request(request)
        except Exception as exc:
            with self._lock:
                self.counts[f"{_kind(request)}:{type(exc).__name__}"] += 1
            raise
        with self._lock:
            self.counts[f"{_kind(request)}:{response.status_code}"] += 1
        return response

    def close(self) -> None:
        self._inner.close()


@dataclass
class StormResult:
    requested: int
    completed: int = 0
    billed_once: int = 0
    streams_exact: int = 0
    accounts: int = 0
    seconds: float = 0.0
    counts: Counter[str] = field(default_factory=Counter)
    problems: list[str] = field(default_factory=list)
    events_seen: int = 0
    balance_moved_usd: Decimal = Decimal(0)
    prices_usd: Decimal = Decimal(0)
    tasks_listed: int = 0
    ledger_lines: int = 0

    @property
    def transport_errors(self) -> int:
        return sum(v for k, v in self.counts.items() if not k.split(":")[1].isdigit())

    def summary(self) -> str:
        c = self.counts
        return (
            f"generations={self.requested} completed={self.completed} "
            f"billed_once={self.billed_once} streams_exact={self.streams_exact} "
            f"accounts={self.accounts} tasks={self.tasks_listed} ledger_lines={self.ledger_lines} "
            f"seconds={self.seconds:.1f} | create 201={c['create:201']} 429={c['create:429']} "
            f"503={c['create:503']} | transport errors={self.transport_errors} | "
            f"stream connections={sum(v for k, v in c.items() if k.startswith('stream:'))} "
            f"events={self.events_seen} | balance moved ${self.balance_moved_usd} "
            f"= prices ${self.prices_usd} | problems={len(self.problems)}"
        )


def events_from_db(path: str) -> StoredEvents:
    """Reads the stored events of tasks from a sandbox's SQLite file (read-only)."""

    def read(task_ids: list[str]) -> dict[str, list[tuple[int, str]]]:
        out: dict[str, list[tuple[int, str]]] = {t: [] for t in task_ids}
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30) as conn:
            for task_id, seq, kind in conn.execute(
                "SELECT task_id, seq, kind FROM events ORDER BY task_id, seq"
            ):
                if task_id in out:
                    out[task_id].append((seq, kind))
        return out

    return read


def events_from_store(store: Any) -> StoredEvents:
    """Reads the stored events of tasks from an in-process sandbox's store."""

    def read(task_ids: list[str]) -> dict[str, list[tuple[int, str]]]:
        out: dict[str, list[tuple[int, str]]] = {t: [] for t in task_ids}
        for r in store.all("SELECT task_id, seq, kind FROM events ORDER BY task_id, seq"):
            if r[0] in out:
                out[r[0]].append((r[1], r[2]))
        return out

    return read


async def _one(client: AsyncClient, tid: str, i: int, wait: bool) -> tuple[str, Seen]:
    handle = await client.generations.create(tool_id=tid, payload={"prompt": f"storm {i}"})
    seen: Seen = []
    if wait:
        task = await handle.wait(on_event=lambda ev: seen.append((ev.seq, ev.kind)), timeout=600)
        assert task.task_id == handle.task_id
    else:
        async for ev in client.generations.stream(handle.task_id):
            seen.append((ev.seq, ev.kind))
    return handle.task_id, seen


def _one_sync(client: Client, tid: str, i: int) -> tuple[str, Seen]:
    handle = client.generations.create(tool_id=tid, payload={"prompt": f"storm {i}"})
    seen: Seen = []
    task = handle.wait(on_event=lambda ev: seen.append((ev.seq, ev.kind)), timeout=600)
    assert task.task_id == handle.task_id
    return handle.task_id, seen


async def _accounts(admin: httpx.AsyncClient, n: int, per_account: int) -> list[tuple[str, str]]:
    accounts = []
    for _ in range(-(-n // per_account)):
        r = await admin.post("/_sandbox/accounts", json={"balance_tokens": 10_000})
        assert r.status_code == 201, r.text
        accounts.append((r.json()["account_id"], r.json()["api_key"]))
    return accounts


async def run_storm(
    base_url: str,
    admin_token: str,
    n: int,
    *,
    stored_events: StoredEvents,
    concurrency: int = 32,
    faults: dict[str, Any] | None = None,
    per_account: int = PER_ACCOUNT,
    wait: bool = False,
    threads: int = 0,
    stagger_s: float = 0.0,
    disrupt: Callable[[], Awaitable[Any]] | None = None,
    retry: RetryPolicy = STORM_RETRY,
    timeout: float | httpx.Timeout = 60.0,
    admin_url: str | None = None,
) -> StormResult:
    """Run ``n`` generations under ``faults`` and check the invariants; returns the figures.

    ``wait``: create -> ``wait(on_event=...)`` instead of create -> stream.
    ``threads``: use one sync :class:`Client` per account from that many threads
    (create -> wait) instead of the AsyncClient. ``stagger_s``: generation ``i``
    starts ``i * stagger_s`` seconds in, so creates keep coming during ``disrupt``,
    a coroutine run alongside (restarts). ``stored_events(task_ids)`` gives the
    server's own event log of each task: what a stream must deliver. ``admin_url``:
    where the admin calls and the final checks go when ``base_url`` is a proxy.
    """
    res = StormResult(requested=n)
    tid = tool_id(OPERATION, MODEL)
    admin = httpx.AsyncClient(
        base_url=admin_url or base_url, timeout=60.0, headers={"X-Sandbox-Admin-Token": admin_token}
    )
    accounts = await _accounts(admin, n, per_account)
    res.accounts = len(accounts)
    before = {
        acct: (await admin.get(f"/_sandbox/accounts/{acct}/balance")).json() for acct, _ in accounts
    }
    r = await admin.put("/_sandbox/faults", json=DEFAULT_FAULTS if faults is None else faults)
    assert r.status_code == 200, r.text
    start = time.perf_counter()
    try:
        runner = _run_threads if threads else _run_async
        gen = asyncio.ensure_future(
            runner(
                base_url,
                accounts,
                res,
                tid,
                n,
                per_account=per_account,
                concurrency=threads or concurrency,
                wait=wait,
                stagger_s=stagger_s,
                retry=retry,
                timeout=timeout,
            )
        )
        side = asyncio.ensure_future(disrupt()) if disrupt is not None else None
        results = await gen
        if side is not None:
            await side
    finally:
        res.seconds = time.perf_counter() - start
        assert (await admin.delete("/_sandbox/faults")).status_code == 204
    await _check(res, admin, accounts, results, before, stored_events, per_account)
    await admin.aclose()
    return res


async def _run_async(
    base_url: str,
    accounts: list[tuple[str, str]],
    res: StormResult,
    tid: str,
    n: int,
    *,
    per_account: int,
    concurrency: int,
    wait: bool,
    stagger_s: float,
    retry: RetryPolicy,
    timeout: float | httpx.Timeout,
) -> list[Any]:
    clients = [
        AsyncClient(
            key,
            base_url=base_url,
            retry=retry,
            seed=k,
            timeout=timeout,
            transport=CountingTransport(res.counts),
            max_connections=concurrency,
        )
        for k, (_, key) in enumerate(accounts)
    ]
    for c in clients:  # the tool cache, so creates send nothing but the create
        await c.tools.list()
    gate = asyncio.Semaphore(concurrency)

    async def guarded(i: int) -> tuple[str, Seen] | BaseException:
        if stagger_s:
            await asyncio.sleep(i * stagger_s)
        async with gate:
            try:
                return await _one(clients[i // per_account], tid, i, wait)
            except Exception as exc:  # noqa: BLE001 - whatever one of n requests raises (songlab, httpx, an assert, a bug) is a finding for res.problems; raised, it would cancel the storm and lose the other results
                return exc

    try:
        return await asyncio.gather(*(guarded(i) for i in range(n)))
    finally:
        for c in clients:
            await c.aclose()


async def _run_threads(
    base_url: str,
    accounts: list[tuple[str, str]],
    res: StormResult,
    tid: str,
    n: int,
    *,
    per_account: int,
    concurrency: int,
    wait: bool,
    stagger_s: float,
    retry: RetryPolicy,
    timeout: float | httpx.Timeout,
) -> list[Any]:
    clients = [
        Client(
            key,
            base_url=base_url,
            retry=retry,
            seed=k,
            timeout=timeout,
            transport=SyncCountingTransport(res.counts),
        )
        for k, (_, key) in enumerate(accounts)
    ]
    for c in clients:
        c.tools.list()
    t0 = time.monotonic()

    def guarded(i: int) -> tuple[str, Seen] | BaseException:
        time.sleep(max(0.0, t0 + i * stagger_s - time.monotonic()))
        try:
            return _one_sync(clients[i // per_account], tid, i)
        except Exception as exc:  # noqa: BLE001 - as in _run_async: every failure is reported, none stops the storm
            return exc

    try:
        with ThreadPoolExecutor(max_workers=concurrency) as pool:
            return await asyncio.to_thread(lambda: list(pool.map(guarded, range(n))))
    finally:
        for c in clients:
            c.close()


async def _check(
    res: StormResult,
    admin: httpx.AsyncClient,
    accounts: list[tuple[str, str]],
    results: list[Any],
    before: dict[str, Any],
    stored_events: StoredEvents,
    per_account: int,
) -> None:
    unit_price = price(OPERATION, MODEL, 1)
    by_account: dict[str, list[str]] = {acct: [] for acct, _ in accounts}
    delivered: dict[str, Seen] = {}
    for i, out in enumerate(results):
        if isinstance(out, BaseException):
            res.problems.append(f"generation {i}: {type(out).__name__}: {out}")
            continue
        task_id, seen = out
        by_account[accounts[i // per_account][0]].append(task_id)
        delivered[task_id] = seen
        res.events_seen += len(seen)

    # streams: what the client delivered == what the server stored, each once, in order
    stored = stored_events(list(delivered))
    for task_id, seen in delivered.items():
        seqs = [s for s, _ in seen]
        if (
            seen
            and seen == stored[task_id]
            and seqs == sorted(set(seqs))
            and seen[-1][1] == "terminal"
        ):
            res.streams_exact += 1
        else:
            res.problems.append(f"stream of {task_id}: got {seen}, stored {stored[task_id]}")

    for acct, key in accounts:
        task_ids = by_account[acct]
        async with AsyncClient(key, base_url=str(admin.base_url)) as client:
            statuses = {t.task_id: t.status async for t in client.generations.list(limit=100)}
        res.tasks_listed += len(statuses)
        if set(statuses) != set(task_ids):
            res.problems.append(
                f"account {acct}: listing has {len(statuses)} tasks, {len(task_ids)} were created"
            )
        for task_id in task_ids:
            if statuses.get(task_id) == "completed":
                res.completed += 1
            else:
                res.problems.append(f"task {task_id} ended {statuses.get(task_id)}")
        # billing: one line per task at the tool's price, balance moved by the sum
        entries = (await admin.get(f"/_sandbox/accounts/{acct}/ledger")).json()["entries"]
        res.ledger_lines += len(entries)
        for task_id in task_ids:
            amounts = [Decimal(e["amount_usd"]) for e in entries if e["task_id"] == task_id]
            if amounts == [unit_price]:
                res.billed_once += 1
            else:
                res.problems.append(f"task {task_id} has ledger lines {amounts}")
        stray = {e["task_id"] for e in entries} - set(task_ids)
        if stray:
            res.problems.append(f"account {acct}: ledger lines of unknown tasks {sorted(stray)}")
        after = (await admin.get(f"/_sandbox/accounts/{acct}/balance")).json()
        moved = Decimal(before[acct]["total_effective"] - after["total_effective"]) / 100
        billed = sum((Decimal(e["amount_usd"]) for e in entries), Decimal(0))
        res.balance_moved_usd += moved
        res.prices_usd += unit_price * len(task_ids)
        if moved != billed or billed != unit_price * len(task_ids):
            res.problems.append(
                f"account {acct}: balance moved ${moved}, ledger ${billed}, "
                f"prices ${unit_price * len(task_ids)}"
            )
