"""Batches: many creates through the record, paced per tool, capped, resumable.

``client.batch(requests)`` checks every request and prices the new ones before anything
is sent (over ``budget_usd`` it refuses to start), then creates them ``concurrency`` at
a time. Each create goes through the client's one create path, so it is recorded, its
Idempotency-Key is derived from the request, and a request the record already holds
re-attaches to its task: running the same batch again after a kernel restart or a crash
follows the tasks already made and creates only the rest. A ``RateLimited`` answer is
not an error: it slows that tool down (:class:`Pacer`, an adaptive rate per tool) and
the request goes back in line. The result is a pandas frame, one row per request,
failures included as rows.

The decisions (:class:`Pacer`, :class:`BatchState`) are pure and unit-tested; the two
drivers (threads for :class:`Client`, asyncio tasks for :class:`AsyncClient`) only send,
sleep and report progress.
"""

from __future__ import annotations

import asyncio
import concurrent.futures as cf
import contextvars
import sys
import time
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Final

from songlab.client._errors import (
    APIConnectionError,
    BudgetExceeded,
    CreateUnconfirmed,
    DependencyUnavailable,
    RateLimited,
    SonglabError,
    UnexpectedResponse,
    ValidationError,
)

__all__ = ["BatchItem", "BatchState", "Pacer", "Progress", "run_batch", "run_batch_async"]

_REQUEST_KEYS: Final = frozenset({"tool_id", "operation", "model", "payload", "license", "take"})
# failures that may have left nothing (or a task the same key finds again): tried again
_AGAIN: Final = (CreateUnconfirmed, APIConnectionError, DependencyUnavailable, UnexpectedResponse)
MAX_TRIES: Final = 8  # attempts of one request after transient failures (429s not counted)


@dataclass
class Pacer:
    """The adaptive rate of one tool: the least time between two of its creates.

    Starts unpaced; a ``RateLimited`` answer doubles the spacing (from ``base_s``, at most
    ``max_s``) and holds the tool for that long (the answers of creates sent before the
    last one only hold it: one refusal episode doubles once, however many creates were in
    flight); each accepted create multiplies the spacing by ``relax`` (below ``base_s`` / 2
    it is zero again). The tool probes its limit at most every ``max_s`` while refused and
    is back to full speed a few accepted creates after the limit lets go."""

    base_s: float = 0.05
    max_s: float = 60.0
    relax: float = 0.5
    interval: float = 0.0
    next_at: float = 0.0
    limited_at: float = float("-inf")  # when the last RateLimited was taken into account
    limited: int = 0  # RateLimited answers seen

    def delay(self, now: float) -> float:
        return max(0.0, self.next_at - now)

    def sent(self, now: float) -> None:
        self.next_at = max(self.next_at, now) + self.interval

    def accepted(self) -> None:
        self.interval *= self.relax
        if self.interval < self.base_s / 2:
            self.interval = 0.0

    def rate_limited(self, now: float, sent_at: float | None = None) -> None:
        self.limited += 1
        if sent_at is None or sent_at >= self.limited_at:
            self.interval = min(self.max_s, max(self.base_s, self.interval * 2.0))
            self.limited_at = now
        self.next_at = max(self.next_at, now + self.interval)


@dataclass
class BatchItem:
    """One request of a batch and what became of it."""

    index: int
    body: dict[str, Any]  # the native create body
    estimate: Any  # Estimate or None
    take: int
    tool: str  # the pacing key (the tool id)
    recorded: bool = False  # the record already held it when the batch started
    tries: int = 0
    sent_at: float = 0.0  # the clock when its last attempt was released
    task_id: str | None = None
    reused: bool = False
    status: str | None = None
    cost_usd: Decimal | None = None
    cost_source: str | None = None
    file_ids: tuple[str, ...] = ()
    error: str | None = None

    @property
    def estimate_usd(self) -> Decimal | None:
        return getattr(self.estimate, "usd", None)


@dataclass
class BatchState:
    """Which request goes next, and when (pure: the drivers feed it outcomes and clocks)."""

    items: list[BatchItem]
    concurrency: int
    base_s: float = 0.05
    max_s: float = 60.0
    pacers: dict[str, Pacer] = field(default_factory=dict)
    queue: deque[BatchItem] = field(default_factory=deque)
    in_flight: int = 0
    created: int = 0
    failed: int = 0

    def __post_init__(self) -> None:
        self.queue.extend(self.items)

    def pacer(self, tool: str) -> Pacer:
        p = self.pacers.get(tool)
        if p is None:
            p = self.pacers[tool] = Pacer(base_s=self.base_s, max_s=self.max_s)
        return p

    @property
    def finished(self) -> bool:
        return not self.queue and self.in_flight == 0

    def take_ready(self, now: float) -> tuple[list[BatchItem], float | None]:
        """The items to send now (each marked in flight and its tool's pacer told), and
        the seconds until the next one could go (None: nothing waits but answers)."""
        ready: list[BatchItem] = []
        wait: float | None = None
        skipped: deque[BatchItem] = deque()
        held: set[str] = set()
        while self.queue and self.in_flight < self.concurrency:
            item = self.queue.popleft()
            if item.tool in held:
                skipped.append(item)
                continue
            delay = self.pacer(item.tool).delay(now)
            if delay > 0:
                held.add(item.tool)
                skipped.append(item)
                wait = delay if wait is None else min(wait, delay)
                continue
            self.pacer(item.tool).sent(now)
            self.in_flight += 1
            item.tries += 1
            item.sent_at = now
            ready.append(item)
        self.queue.extendleft(reversed(skipped))
        if self.queue and self.in_flight < self.concurrency and wait is None and ready:
            wait = 0.0
        return ready, wait

    def on_created(self, item: BatchItem, task_id: str, reused: bool) -> None:
        self.in_flight -= 1
        self.created += 1
        item.task_id, item.reused, item.error = task_id, reused, None
        if not reused:
            self.pacer(item.tool).accepted()

    def on_error(self, item: BatchItem, exc: BaseException, now: float) -> None:
        """A failed attempt: paced and queued again (RateLimited), tried again (a transient
        failure, at most ``MAX_TRIES``), or a failure row."""
        self.in_flight -= 1
        if isinstance(exc, RateLimited):
            item.tries -= 1  # pacing is not a failure
            self.pacer(item.tool).rate_limited(now, item.sent_at)
            self.queue.appendleft(item)  # keeps its place in line
            return
        if isinstance(exc, _AGAIN) and item.tries < MAX_TRIES:
            self.pacer(item.tool).rate_limited(now)  # back off that tool a little
            self.queue.append(item)
            return
        self.failed += 1
        item.status = "not created"
        item.error = _describe(exc)


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


# -- checking and pricing, before anything is sent ---------------------------------


def check_request(index: int, request: Any) -> dict[str, Any]:
    if not isinstance(request, Mapping):
        raise ValidationError(
            f"requests[{index}]",
            "a dict of generations.create arguments "
            "(tool_id or operation+model, payload, license, take)",
        )
    unknown = sorted(set(request) - _REQUEST_KEYS)
    if unknown:
        raise ValidationError(
            f"requests[{index}].{unknown[0]}",
            f"not a batch field (use {', '.join(sorted(_REQUEST_KEYS))})",
        )
    if "payload" not in request:
        raise ValidationError(f"requests[{index}].payload", "required")
    return dict(request)


def _prepare(client: Any, index: int, request: Any) -> Any:
    """An op: the :class:`BatchItem` of one request (checked and priced)."""
    from songlab.client._call import NOT_GIVEN

    req = check_request(index, request)
    take = req.get("take", 1)
    if not (isinstance(take, int) and not isinstance(take, bool) and take >= 1):
        raise ValidationError(f"requests[{index}].take", f"a whole number >= 1, got {take!r}")
    try:
        body, est = yield from client.generations._prepare_op(
            req.get("tool_id", NOT_GIVEN),
            req.get("operation", NOT_GIVEN),
            req.get("model", NOT_GIVEN),
            req["payload"],
            req.get("license", NOT_GIVEN),
        )
    except ValidationError as e:
        raise ValidationError(f"requests[{index}].{e.field}", e.rule) from None
    recorded = client.previous_create("/v1/generations", body, take=take) is not None
    return BatchItem(index, body, est, take, body["tool_id"], recorded=recorded)


def check_budget(items: list[BatchItem], budget_usd: Any) -> Decimal:
    """The estimated spend of the new requests; over ``budget_usd`` (or not priceable
    under a budget) raises :class:`BudgetExceeded` before anything is sent."""
    new = [i for i in items if not i.recorded]
    unknown = [i.index for i in new if i.estimate_usd is None]
    total = sum((i.estimate_usd for i in new if i.estimate_usd is not None), Decimal(0))
    if budget_usd is None:
        return total
    try:
        limit = Decimal(str(budget_usd))
    except ArithmeticError:
        raise ValidationError("budget_usd", f"a decimal amount, got {budget_usd!r}") from None
    if not (limit.is_finite() and limit >= 0):
        raise ValidationError("budget_usd", f"a non-negative amount, got {budget_usd}")
    if unknown:
        raise BudgetExceeded(
            f"batch not started: requests {unknown[:5]} have no list price, so the batch "
            f"cannot be held to budget_usd={limit}; nothing was sent",
            remaining_usd=limit,
        )
    if total > limit:
        raise BudgetExceeded(
            f"batch not started: its {len(new)} new creates are estimated at ${total} "
            f"(list price), over budget_usd=${limit}; nothing was sent "
            f"({len(items) - len(new)} already made re-attach for free)",
            estimate_usd=total,
            remaining_usd=limit,
        )
    return total


# -- progress ---------------------------------------------------------------------


class Progress:
    """One progress bar in a notebook (ipywidgets), one rewritten line elsewhere."""

    def __init__(self, total: int, *, show: bool | None = None) -> None:
        self.total = total
        self.show = _interactive() if show is None else show
        self._bar: Any = None
        self._label: Any = None
        self._last = 0.0
        self.text = ""
        if self.show and _in_kernel():
            import ipywidgets as W
            from IPython.display import display

            self._bar = W.IntProgress(min=0, max=max(total, 1), description="batch")
            self._label = W.Label()
            display(W.HBox([self._bar, self._label]))  # type: ignore[no-untyped-call]

    def update(self, phase: str, done: int, extra: str = "", *, force: bool = False) -> None:
        self.text = f"batch: {phase} {done}/{self.total}{extra}"
        if not self.show:
            return
        if self._bar is not None:
            self._bar.value = done
            self._bar.description = phase
            self._label.value = f"{done}/{self.total}{extra}"
            return
        now = time.monotonic()
        if force or now - self._last > 0.2:
            self._last = now
            sys.stderr.write("\r" + self.text.ljust(78))
            sys.stderr.flush()

    def close(self) -> None:
        if self.show and self._bar is None:
            sys.stderr.write("\r" + self.text.ljust(78) + "\n")
            sys.stderr.flush()


def _in_kernel() -> bool:
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


def _interactive() -> bool:
    return _in_kernel() or sys.stderr.isatty()


# -- the frame ---------------------------------------------------------------------


def _finish(item: BatchItem, task: Any) -> None:
    item.status = task.status
    cost = getattr(task, "cost_usd", None)
    if cost is not None:
        item.cost_usd, item.cost_source = cost, "service"
    elif task.status == "failed":
        item.cost_usd, item.cost_source = Decimal(0), "released"
    elif item.estimate_usd is not None:
        item.cost_usd, item.cost_source = item.estimate_usd, "estimate"
    else:
        item.cost_source = "unknown"
    item.file_ids = tuple(getattr(task, "file_ids", ()) or ())
    failure = getattr(task, "failure", None)
    if failure is not None:
        item.error = f"{failure.error}: {failure.message}" if failure.message else failure.error


def frame(items: list[BatchItem]) -> Any:
    """One row per request: request, task_id, status, reused, take, tool_id, cost_usd
    (Decimal), cost_source (service / estimate / released / unknown), file_ids, error."""
    import pandas as pd

    rows = [
        {
            "request": i.index,
            "task_id": i.task_id,
            "status": i.status,
            "reused": i.reused,
            "take": i.take,
            "tool_id": i.body.get("tool_id"),
            "cost_usd": i.cost_usd,
            "cost_source": i.cost_source,
            "file_ids": list(i.file_ids),
            "error": i.error,
        }
        for i in sorted(items, key=lambda x: x.index)
    ]
    cols = [
        "request",
        "task_id",
        "status",
        "reused",
        "take",
        "tool_id",
        "cost_usd",
        "cost_source",
        "file_ids",
        "error",
    ]
    return pd.DataFrame(rows, columns=cols)


def _summary(state: BatchState, items: list[BatchItem], spent: Decimal) -> str:
    reused = sum(1 for i in items if i.reused)
    made = state.created - reused
    limited = sum(p.limited for p in state.pacers.values())
    return (
        f"batch: {made} created, {reused} re-attached from the record (nothing spent "
        f"again), {state.failed} not created; ~${spent} at list price; "
        f"{limited} rate-limit pauses"
    )


# -- drivers -------------------------------------------------------------------------


@dataclass(frozen=True)
class Options:
    concurrency: int
    budget_usd: Any
    wait: bool
    timeout: float
    poll_interval: float
    progress: bool | None
    pace_base_s: float
    pace_max_s: float


def options(
    concurrency: Any,
    budget_usd: Any,
    wait: Any,
    timeout: Any,
    poll_interval: Any,
    progress: Any,
    pace_base_s: Any,
    pace_max_s: Any,
) -> Options:
    if not (
        isinstance(concurrency, int)
        and not isinstance(concurrency, bool)
        and 1 <= concurrency <= 256
    ):
        raise ValidationError("concurrency", f"a whole number 1-256, got {concurrency!r}")
    for name, value in (
        ("timeout", timeout),
        ("poll_interval", poll_interval),
        ("pace_base_s", pace_base_s),
        ("pace_max_s", pace_max_s),
    ):
        if not (isinstance(value, int | float) and value > 0):
            raise ValidationError(name, f"a positive number of seconds, got {value!r}")
    return Options(
        concurrency,
        budget_usd,
        bool(wait),
        float(timeout),
        float(poll_interval),
        progress,
        float(pace_base_s),
        float(pace_max_s),
    )


def _create_op(client: Any, item: BatchItem) -> Any:
    return client._create_op(
        "/v1/generations",
        item.body,
        item.estimate,
        None,
        item.take,
        False,
        paced=True,
        announce=False,
    )


def _spent(items: list[BatchItem]) -> Decimal:
    return sum(
        (
            i.estimate_usd
            for i in items
            if not i.reused and i.task_id is not None and i.estimate_usd is not None
        ),
        Decimal(0),
    )


def _settle(state: BatchState, item: BatchItem, fut: Any) -> None:
    """A finished create (a thread's or an asyncio future) told to the batch's state."""
    try:
        handle = fut.result()
    except SonglabError as exc:
        state.on_error(item, exc, time.monotonic())
    else:
        state.on_created(item, handle.task_id, bool(handle.raw.get("reused")))


def run_batch(client: Any, requests: Iterable[Any], opts: Options) -> Any:
    """The sync driver: a thread pool sends what :class:`BatchState` releases."""
    items = [client._drive(_prepare(client, n, r)) for n, r in enumerate(requests)]
    check_budget(items, opts.budget_usd)
    state = BatchState(items, opts.concurrency, opts.pace_base_s, opts.pace_max_s)
    bar = Progress(len(items), show=opts.progress)
    try:
        with cf.ThreadPoolExecutor(max_workers=opts.concurrency) as pool:
            running: dict[cf.Future[Any], BatchItem] = {}
            while not state.finished:
                ready, wait = state.take_ready(time.monotonic())
                for item in ready:  # in the caller's context: its labels and budgets
                    ctx = contextvars.copy_context()
                    running[pool.submit(ctx.run, client._drive, _create_op(client, item))] = item
                bar.update("creating", state.created + state.failed)
                if not running:
                    time.sleep(wait or 0.0)
                    continue
                done, _ = cf.wait(running, timeout=wait, return_when=cf.FIRST_COMPLETED)
                for fut in done:
                    _settle(state, running.pop(fut), fut)
            bar.update("creating", state.created + state.failed, force=True)
            if opts.wait:
                follow = [i for i in items if i.task_id is not None]
                futs = {
                    pool.submit(
                        client._wait,
                        i.task_id,
                        timeout=opts.timeout,
                        on_event=None,
                        raise_on_failure=False,
                        poll_interval=opts.poll_interval,
                        use_stream=False,
                    ): i
                    for i in follow
                }
                finished = 0
                for fut in cf.as_completed(futs):
                    item = futs[fut]
                    try:
                        _finish(item, fut.result())
                    except SonglabError as exc:
                        item.error = _describe(exc)
                        item.status = "unknown"
                    finished += 1
                    bar.update("finishing", finished)
    finally:
        bar.close()
    client._say(_summary(state, items, _spent(items)))
    return frame(items)


async def run_batch_async(client: Any, requests: Iterable[Any], opts: Options) -> Any:
    """The async driver: asyncio tasks send what :class:`BatchState` releases."""
    items = [await client._drive(_prepare(client, n, r)) for n, r in enumerate(requests)]
    check_budget(items, opts.budget_usd)
    state = BatchState(items, opts.concurrency, opts.pace_base_s, opts.pace_max_s)
    bar = Progress(len(items), show=opts.progress)
    try:
        running: dict[asyncio.Task[Any], BatchItem] = {}
        while not state.finished:
            ready, wait = state.take_ready(time.monotonic())
            for item in ready:
                running[asyncio.ensure_future(client._drive(_create_op(client, item)))] = item
            bar.update("creating", state.created + state.failed)
            if not running:
                await asyncio.sleep(wait or 0.0)
                continue
            done, _ = await asyncio.wait(running, timeout=wait, return_when=asyncio.FIRST_COMPLETED)
            for fut in done:
                _settle(state, running.pop(fut), fut)
        bar.update("creating", state.created + state.failed, force=True)
        if opts.wait:
            sem = asyncio.Semaphore(opts.concurrency)

            async def follow(item: BatchItem) -> None:
                async with sem:
                    try:
                        _finish(
                            item,
                            await client._wait(
                                item.task_id,
                                timeout=opts.timeout,
                                on_event=None,
                                raise_on_failure=False,
                                poll_interval=opts.poll_interval,
                                use_stream=False,
                            ),
                        )
                    except SonglabError as exc:
                        item.error, item.status = _describe(exc), "unknown"

            await asyncio.gather(*(follow(i) for i in items if i.task_id is not None))
            bar.update("finishing", sum(1 for i in items if i.task_id), force=True)
    finally:
        bar.close()
    client._say(_summary(state, items, _spent(items)))
    return frame(items)
