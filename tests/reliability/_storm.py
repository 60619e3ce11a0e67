"""The fault storm: many generations through the AsyncClient against an injected-fault sandbox.

Used by ``tests/reliability/test_fault_storm.py`` (a few dozen generations) and by
``benchmarks/fault_storm.py`` (1,000). It creates accounts through the admin
routes, turns faults on (``PUT /_sandbox/faults``: 429 RateLimited and 503
DependencyUnavailable on creates, streams cut every few events, latency on
every vendor route), runs every generation as create -> stream (resumed by the
client) -> get, turns faults off, and then checks, from the server's own
records, that:

- every task ended ``completed``;
- every account's ledger has exactly one line per task, at the tool's price,
  and its balance moved by exactly the sum of those prices;
- every stream delivered each task event exactly once, in order, ending with
  ``terminal``: the same (seq, kind) list a fault-free replay (``after=0``) shows.

Counts of what the faults did come from a transport wrapper that sees every
HTTP answer the client got (the client never knows it is there).
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import httpx

from songlab.client import AsyncClient, RetryPolicy
from songlab.pricing import price
from songlab.sandbox.catalog import tool_id

# Retries sized for the storm: with 30% + 10% injected refusals, an attempt fails
# with probability ~0.37; 16 attempts leave ~1e-7 per create of giving up.
StoredEvents = Callable[[list[str]], dict[str, list[tuple[int, str]]]]
STORM_RETRY = RetryPolicy(max_attempts=16, base_s=0.005, cap_s=0.08, max_total_s=60.0)
DEFAULT_FAULTS: dict[str, Any] = {
    "rate_limited": 0.3, "dependency_unavailable": 0.1, "drop_stream_after": 3,
    "latency_ms": 50, "seed": 20261122,
}
# write_lyrics is the cheapest short generation (no audio to render, $0.02).
OPERATION, MODEL = "write_lyrics", "v5"
PER_ACCOUNT = 50  # stays well under the per-tool hourly rate limit (100) of one account


class CountingTransport(httpx.AsyncBaseTransport):
    """Counts (method, route kind, status) of every answer; forwards to the real transport."""

    def __init__(self, counts: Counter[str]) -> None:
        self._inner = httpx.AsyncHTTPTransport()
        self.counts = counts

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        kind = ("stream" if path.endswith("/stream") else
                "create" if request.method == "POST" and path == "/v1/generations" else
                "get" if path.startswith("/v1/generations/") else "other")
        response = await self._inner.handle_async_request(request)
        self.counts[f"{kind}:{response.status_code}"] += 1
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()


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

    def summary(self) -> str:
        c = self.counts
        return (
            f"generations={self.requested} completed={self.completed} "
            f"billed_once={self.billed_once} streams_exact={self.streams_exact} "
            f"accounts={self.accounts} seconds={self.seconds:.1f} | "
            f"create 201={c['create:201']} 429={c['create:429']} 503={c['create:503']} | "
            f"stream connections={sum(v for k, v in c.items() if k.startswith('stream:'))} "
            f"events={self.events_seen} | balance moved ${self.balance_moved_usd} "
            f"= prices ${self.prices_usd} | problems={len(self.problems)}"
        )


async def _one(client: AsyncClient, tid: str, i: int) -> tuple[str, list[tuple[int, str]]]:
    handle = await client.generations.create(tool_id=tid, payload={"prompt": f"storm {i}"})
    seen: list[tuple[int, str]] = []
    async for ev in client.generations.stream(handle.task_id):
        seen.append((ev.seq, ev.kind))
    return handle.task_id, seen


def events_from_db(path: str) -> StoredEvents:
    """Reads the stored events of tasks from a sandbox's SQLite file (read-only)."""

    def read(task_ids: list[str]) -> dict[str, list[tuple[int, str]]]:
        out: dict[str, list[tuple[int, str]]] = {t: [] for t in task_ids}
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
            for task_id, seq, kind in conn.execute(
                    "SELECT task_id, seq, kind FROM events ORDER BY task_id, seq"):
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


async def run_storm(base_url: str, admin_token: str, n: int, *, stored_events: StoredEvents,
                    concurrency: int = 32, faults: dict[str, Any] | None = None,
                    per_account: int = PER_ACCOUNT) -> StormResult:
    """Run ``n`` generations under ``faults`` and check the invariants; returns the figures.

    ``stored_events(task_ids)`` gives the server's own event log of each task
    (:func:`events_from_db` or :func:`events_from_store`): what a stream must deliver.
    """
    res = StormResult(requested=n)
    tid = tool_id(OPERATION, MODEL)
    unit_price = price(OPERATION, MODEL, 1)
    admin = httpx.AsyncClient(base_url=base_url, headers={"X-Sandbox-Admin-Token": admin_token},
                              timeout=60.0)
    accounts: list[tuple[str, str]] = []
    for _ in range(-(-n // per_account)):
        r = await admin.post("/_sandbox/accounts", json={"balance_tokens": 10_000})
        assert r.status_code == 201, r.text
        accounts.append((r.json()["account_id"], r.json()["api_key"]))
    res.accounts = len(accounts)
    before = {}
    for acct, _ in accounts:
        before[acct] = (await admin.get(f"/_sandbox/accounts/{acct}/balance")).json()
    clients = [AsyncClient(key, base_url=base_url, retry=STORM_RETRY, seed=k,
                           transport=CountingTransport(res.counts), timeout=60.0,
                           max_connections=concurrency)
               for k, (_, key) in enumerate(accounts)]
    for c in clients:  # the tool cache, so creates send nothing but the create
        await c.tools.list()
    gate = asyncio.Semaphore(concurrency)

    async def guarded(i: int) -> tuple[str, list[tuple[int, str]]] | BaseException:
        async with gate:
            try:
                return await _one(clients[i // per_account], tid, i)
            except Exception as exc:  # reported as a problem, not raised mid-storm
                return exc

    r = await admin.put("/_sandbox/faults", json=DEFAULT_FAULTS if faults is None else faults)
    assert r.status_code == 200, r.text
    start = time.perf_counter()
    try:
        results = await asyncio.gather(*(guarded(i) for i in range(n)))
    finally:
        res.seconds = time.perf_counter() - start
        assert (await admin.delete("/_sandbox/faults")).status_code == 204

    by_account: dict[str, list[str]] = {acct: [] for acct, _ in accounts}
    delivered: dict[str, list[tuple[int, str]]] = {}
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
        if seen == stored[task_id] and seqs == sorted(set(seqs)) and seen[-1][1] == "terminal":
            res.streams_exact += 1
        else:
            res.problems.append(f"stream of {task_id}: got {seen}, stored {stored[task_id]}")

    for (acct, _), client in zip(accounts, clients, strict=True):
        task_ids = by_account[acct]
        # status: every task of the account, from its listing
        statuses = {}
        async for task in client.generations.list(limit=100):
            statuses[task.task_id] = task.status
        if set(statuses) != set(task_ids):
            res.problems.append(f"account {acct}: listing has {len(statuses)} tasks, "
                                f"{len(task_ids)} were created")
        for task_id in task_ids:
            if statuses.get(task_id) == "completed":
                res.completed += 1
            else:
                res.problems.append(f"task {task_id} ended {statuses.get(task_id)}")
        # billing: one line per task at the tool's price, balance moved by the sum
        entries = (await admin.get(f"/_sandbox/accounts/{acct}/ledger")).json()["entries"]
        lines = Counter(e["task_id"] for e in entries)
        for task_id in task_ids:
            amounts = [Decimal(e["amount_usd"]) for e in entries if e["task_id"] == task_id]
            if amounts == [unit_price]:
                res.billed_once += 1
            else:
                res.problems.append(f"task {task_id} has ledger lines {amounts}")
        stray = set(lines) - set(task_ids)
        if stray:
            res.problems.append(f"account {acct}: ledger lines of unknown tasks {sorted(stray)}")
        after = (await admin.get(f"/_sandbox/accounts/{acct}/balance")).json()
        moved = Decimal(before[acct]["total_effective"] - after["total_effective"]) / 100
        billed = sum((Decimal(e["amount_usd"]) for e in entries), Decimal(0))
        res.balance_moved_usd += moved
        res.prices_usd += unit_price * len(task_ids)
        if moved != billed or billed != unit_price * len(task_ids):
            res.problems.append(f"account {acct}: balance moved ${moved}, ledger ${billed}, "
                                f"prices ${unit_price * len(task_ids)}")
    for c in clients:
        await c.aclose()
    await admin.aclose()
    return res
