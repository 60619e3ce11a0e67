"""Batches: many creates through the record, paced per tool, capped, resumable.

``client.batch(requests)`` checks every request and prices the new ones before anything
is sent (over ``budget_usd`` it refuses to start), then creates them ``concurrency`` at
a time. Each create goes through the client's one create path, so it is recorded, its
Idempotency-Key is derived from the request, and a request the record already holds
re-attaches to its task: running the same batch again after a kernel restart or a crash
follows the tasks already made and creates only the rest. A ``RateLimited`` answer is
not an error: it slows that tool down (:class:`Pacer`, an adaptive rate per tool) and
the request goes back in line. The result is a :class:`BatchResult`, one typed
:class:`BatchRow` per request, failures included as rows.

The client shows nothing: it tells ``on_progress`` a :class:`BatchProgress` as the batch
moves. ``songlab.widgets.batch`` draws it (a bar in a notebook, a line on a terminal) and
``songlab.ledger.batch_frame`` makes the result a frame.

The decisions (:class:`Pacer`, :class:`BatchState`) are pure and unit-tested; the two
drivers (:func:`run_batch`: threads for :class:`Client`; :func:`run_batch_async`: asyncio
tasks for :class:`AsyncClient`) only send, sleep and report progress.
"""

from __future__ import annotations

import asyncio
import concurrent.futures as cf
import contextvars
import functools
import logging
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Final, Literal, TypedDict

from songlab.client._call import NOT_GIVEN, Batch, Op, Work
from songlab.client._create import CreateRequest, Reuse, create_op, find_previous, identity_of
from songlab.client._exceptions import (
    APIConnectionError,
    BudgetExceeded,
    CreateUnconfirmed,
    DependencyUnavailable,
    RateLimited,
    SonglabError,
    UnexpectedResponse,
    ValidationError,
)
from songlab.client._handle import TaskHandle, wait_op
from songlab.client._models import Task
from songlab.pricing import cents

if TYPE_CHECKING:
    from songlab.client._async import AsyncClient
    from songlab.client._base import BaseClient
    from songlab.client._sync import Client

__all__ = [
    "BatchArgs",
    "BatchItem",
    "BatchOptions",
    "BatchProgress",
    "BatchRequest",
    "BatchResult",
    "BatchRow",
    "BatchState",
    "Pacer",
    "batch_op",
    "check_budget",
    "check_request",
    "result_of",
    "run_batch",
    "run_batch_async",
]

log = logging.getLogger("songlab.client")

BatchRequest = Mapping[str, object]  # generations.create's arguments
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
    request: CreateRequest  # the native create, checked and priced
    take: int
    tool: str  # the pacing key (the tool id)
    recorded: bool = False  # the record already held it when the batch started
    tries: int = 0
    sent_at: float = 0.0  # the clock when its last attempt was released
    task_id: str | None = None
    reused: bool = False
    status: str | None = None
    billed_usd: Decimal | None = None  # the cost the task's snapshot showed, if it did
    file_ids: tuple[str, ...] = ()
    error: str | None = None

    @property
    def estimate_usd(self) -> Decimal | None:
        estimate = self.request.estimate
        return None if estimate is None else estimate.usd


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

    @property
    def rate_limited(self) -> int:
        return sum(p.limited for p in self.pacers.values())

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

    def on_finished(self, item: BatchItem, task: Task) -> None:
        """The task's end: its status, the cost its snapshot shows (None where the service
        shows none: what counts is the ledger's rule, ``ledger.batch_frame``), files and
        failure."""
        item.status = task.status
        item.billed_usd = task.cost_usd
        item.file_ids = task.file_ids
        if task.failure is not None:
            f = task.failure
            item.error = f"{f.error}: {f.message}" if f.message else f.error

    def on_lost(self, item: BatchItem, exc: BaseException) -> None:
        """Following the task failed (its deadline passed, the service went away)."""
        item.error, item.status = _describe(exc), "unknown"


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


# -- what the batch tells and returns -----------------------------------------------


@dataclass(frozen=True, slots=True)
class BatchProgress:
    """Where a batch is: ``phase`` ("creating", then "finishing" while it follows the
    tasks, then "done"), ``done`` of ``total`` requests through that phase, and the counts
    so far (``created`` includes the ``reused``; ``failed``: not created)."""

    phase: Literal["creating", "finishing", "done"]
    done: int
    total: int
    created: int
    reused: int
    failed: int
    rate_limited: int


@dataclass(frozen=True, slots=True)
class BatchRow:
    """What became of one request of a batch: the facts, not a verdict. ``billed_usd``: the
    cost the task's snapshot showed (None where the service shows none, as the spec's does
    not promise one); ``estimate_usd``: the request's list price (None: not priceable);
    ``status`` "not created" for a request refused for good. What the row costs, and why,
    is the ledger's one rule: ``songlab.ledger.batch_frame`` gives ``cost_usd`` and
    ``cost_source`` (billed, estimate, unbilled, pending or unknown)."""

    request: int
    task_id: str | None
    status: str | None
    reused: bool
    take: int
    tool_id: str | None
    billed_usd: Decimal | None
    estimate_usd: Decimal | None
    file_ids: tuple[str, ...]
    error: str | None


@dataclass(frozen=True, slots=True)
class BatchResult:
    """The rows of a batch (one per request, in request order) and its counts:
    ``created`` new tasks, ``reused`` re-attached from the record (nothing spent again),
    ``failed`` not created, ``rate_limit_pauses``, and ``spent_usd``: the list price of the
    new tasks."""

    rows: tuple[BatchRow, ...]
    created: int
    reused: int
    failed: int
    rate_limit_pauses: int
    spent_usd: Decimal

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self) -> Iterator[BatchRow]:
        return iter(self.rows)

    def summary(self) -> str:
        """One line: what was created, re-attached and refused, and what it cost."""
        return (
            f"batch: {self.created} created, {self.reused} re-attached from the record "
            f"(nothing spent again), {self.failed} not created; ~${cents(self.spent_usd)} at list "
            f"price; {self.rate_limit_pauses} rate-limit pauses"
        )


def result_of(state: BatchState) -> BatchResult:
    items = sorted(state.items, key=lambda i: i.index)
    reused = sum(1 for i in items if i.reused)
    spent = sum(
        (
            i.estimate_usd
            for i in items
            if not i.reused and i.task_id is not None and i.estimate_usd is not None
        ),
        Decimal(0),
    )
    rows = tuple(
        BatchRow(
            request=i.index,
            task_id=i.task_id,
            status=i.status,
            reused=i.reused,
            take=i.take,
            tool_id=i.request.tool_id,
            billed_usd=i.billed_usd,
            estimate_usd=i.estimate_usd,
            file_ids=i.file_ids,
            error=i.error,
        )
        for i in items
    )
    return BatchResult(
        rows, state.created - reused, reused, state.failed, state.rate_limited, spent
    )


class _Reporter:
    """Tells ``on_progress`` each change (never the same progress twice in a row)."""

    def __init__(self, state: BatchState, on_progress: Callable[[BatchProgress], object] | None):
        self.state, self.on_progress = state, on_progress
        self.last: BatchProgress | None = None

    def __call__(self, phase: Literal["creating", "finishing", "done"], done: int) -> None:
        if self.on_progress is None:
            return
        s = self.state
        now = BatchProgress(
            phase,
            done,
            len(s.items),
            s.created,
            sum(1 for i in s.items if i.reused),
            s.failed,
            s.rate_limited,
        )
        if now != self.last:
            self.last = now
            self.on_progress(now)


# -- checking and pricing, before anything is sent ---------------------------------


def check_request(index: int, request: object) -> dict[str, object]:
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


def _prepare_op(client: BaseClient, index: int, request: object) -> Op[BatchItem]:
    """The :class:`BatchItem` of one request (checked and priced; nothing sent)."""
    from songlab.client._generations import native_request

    req = check_request(index, request)
    take = req.get("take", 1)
    if not (isinstance(take, int) and not isinstance(take, bool) and take >= 1):
        raise ValidationError(f"requests[{index}].take", f"a whole number >= 1, got {take!r}")
    try:
        native = yield from native_request(
            client,
            tool_id=req.get("tool_id", NOT_GIVEN),
            operation=req.get("operation", NOT_GIVEN),
            model=req.get("model", NOT_GIVEN),
            payload=req["payload"],
            license=req.get("license", NOT_GIVEN),
        )
    except ValidationError as e:
        raise ValidationError(f"requests[{index}].{e.field}", e.rule) from None
    _, scope = client._scope()
    recorded = False
    if scope is not None and client.record is not None:
        identity = identity_of(client, native)
        found = yield Work(
            functools.partial(
                find_previous, client, native.route, identity, scope, take, native.payload_sha256
            )
        )
        recorded = found is not None
    return BatchItem(index, native, take, native.tool_id or "", recorded=recorded)


def check_budget(items: list[BatchItem], budget_usd: object) -> Decimal:
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


# -- the operation and its two drivers ------------------------------------------------


@dataclass(frozen=True)
class BatchOptions:
    concurrency: int
    budget_usd: Decimal | int | str | None
    wait: bool
    timeout: float
    poll_interval: float
    pace_base_s: float
    pace_max_s: float


class BatchArgs(TypedDict, total=False):
    """The options of ``client.batch`` (and of ``songlab.widgets.batch``, which passes them
    on), declared once: ``concurrency`` (creates in flight, 1-256, default 8),
    ``budget_usd`` (refuse to start over it), ``wait`` (follow every task to its end,
    default True), ``timeout`` (of each wait, 600 s), ``poll_interval`` (0.5 s),
    ``pace_base_s`` / ``pace_max_s`` (a rate-limited tool's spacing, 0.05 s up to 60 s)."""

    concurrency: int
    budget_usd: Decimal | int | str | None
    wait: bool
    timeout: float
    poll_interval: float
    pace_base_s: float
    pace_max_s: float


_DEFAULTS: Final[BatchArgs] = {
    "concurrency": 8,
    "budget_usd": None,
    "wait": True,
    "timeout": 600.0,
    "poll_interval": 0.5,
    "pace_base_s": 0.05,
    "pace_max_s": 60.0,
}


def options(given: BatchArgs) -> BatchOptions:
    """The checked options of a batch (an unknown one is refused as Python refuses an
    unexpected keyword argument; each bad value names its option and rule)."""
    unknown = sorted(set(given) - set(_DEFAULTS))
    if unknown:
        raise TypeError(f"batch() got an unexpected keyword argument {unknown[0]!r}")
    args: BatchArgs = {**_DEFAULTS, **given}
    concurrency = args["concurrency"]
    if not (
        isinstance(concurrency, int)
        and not isinstance(concurrency, bool)
        and 1 <= concurrency <= 256
    ):
        raise ValidationError("concurrency", f"a whole number 1-256, got {concurrency!r}")
    seconds: dict[str, float] = {}
    for name in ("timeout", "poll_interval", "pace_base_s", "pace_max_s"):
        value: object = args[name]
        if not (isinstance(value, int | float) and not isinstance(value, bool) and value > 0):
            raise ValidationError(name, f"a positive number of seconds, got {value!r}")
        seconds[name] = float(value)
    return BatchOptions(
        concurrency,
        args["budget_usd"],
        bool(args["wait"]),
        seconds["timeout"],
        seconds["poll_interval"],
        seconds["pace_base_s"],
        seconds["pace_max_s"],
    )


def batch_op(
    client: BaseClient,
    requests: Iterable[BatchRequest],
    given: BatchArgs,
    on_progress: Callable[[BatchProgress], object] | None,
) -> Op[BatchResult]:
    """``client.batch``: every request checked and priced, the budget checked, then the
    client runs the batch (:class:`Batch`) and the result is read off its state."""
    opts = options(given)
    items: list[BatchItem] = []
    for n, request in enumerate(requests):
        items.append((yield from _prepare_op(client, n, request)))
    check_budget(items, opts.budget_usd)
    state = BatchState(items, opts.concurrency, opts.pace_base_s, opts.pace_max_s)
    yield Batch(state, opts, _Reporter(state, on_progress))
    result = result_of(state)
    client._say(result.summary())
    return result


def _create(client: BaseClient, item: BatchItem) -> Op[TaskHandle[BaseClient]]:
    return create_op(client, item.request, Reuse(take=item.take, paced=True, announce=False))


def _follow(item: BatchItem, opts: BatchOptions) -> Op[Task]:
    assert item.task_id is not None
    return wait_op(item.task_id, opts.timeout, None, False, opts.poll_interval, False)


def _settle(
    state: BatchState, item: BatchItem, handle: TaskHandle[BaseClient] | BaseException
) -> None:
    """A finished create (a handle or what it raised) told to the batch's state."""
    if isinstance(handle, SonglabError):
        state.on_error(item, handle, time.monotonic())
    elif isinstance(handle, BaseException):
        raise handle
    else:
        state.on_created(item, handle.task_id, handle.reused)


def run_batch(client: Client, step: Batch) -> None:
    """The sync driver: a thread pool sends what :class:`BatchState` releases."""
    state, opts, report = step.state, step.options, step.report
    with cf.ThreadPoolExecutor(max_workers=opts.concurrency) as pool:
        running: dict[cf.Future[TaskHandle[BaseClient]], BatchItem] = {}
        while not state.finished:
            ready, wait = state.take_ready(time.monotonic())
            for item in ready:  # in the caller's context: its labels and budgets
                ctx = contextvars.copy_context()
                running[pool.submit(ctx.run, client._drive, _create(client, item))] = item
            report("creating", state.created + state.failed)
            if not running:
                time.sleep(wait or 0.0)
                continue
            done, _ = cf.wait(running, timeout=wait, return_when=cf.FIRST_COMPLETED)
            for fut in done:
                item = running.pop(fut)
                exc = fut.exception()
                _settle(state, item, exc if exc is not None else fut.result())
        report("creating", state.created + state.failed)
        if opts.wait:
            follow = {
                pool.submit(client._drive, _follow(i, opts)): i
                for i in state.items
                if i.task_id is not None
            }
            for finished, ended in enumerate(cf.as_completed(follow), 1):
                item = follow[ended]
                try:
                    state.on_finished(item, ended.result())
                except SonglabError as exc:
                    state.on_lost(item, exc)
                report("finishing", finished)
    report("done", len(state.items))


async def run_batch_async(client: AsyncClient, step: Batch) -> None:
    """The async driver: asyncio tasks send what :class:`BatchState` releases."""
    state, opts, report = step.state, step.options, step.report
    running: dict[asyncio.Task[TaskHandle[BaseClient]], BatchItem] = {}
    while not state.finished:
        ready, wait = state.take_ready(time.monotonic())
        for item in ready:
            running[asyncio.ensure_future(client._drive(_create(client, item)))] = item
        report("creating", state.created + state.failed)
        if not running:
            await asyncio.sleep(wait or 0.0)
            continue
        done, _ = await asyncio.wait(running, timeout=wait, return_when=asyncio.FIRST_COMPLETED)
        for fut in done:
            item = running.pop(fut)
            exc = fut.exception()
            _settle(state, item, exc if exc is not None else fut.result())
    report("creating", state.created + state.failed)
    if opts.wait:
        sem = asyncio.Semaphore(opts.concurrency)
        finished = 0

        async def follow(item: BatchItem) -> None:
            nonlocal finished
            async with sem:
                try:
                    state.on_finished(item, await client._drive(_follow(item, opts)))
                except SonglabError as exc:
                    state.on_lost(item, exc)
            finished += 1
            report("finishing", finished)

        await asyncio.gather(*(follow(i) for i in state.items if i.task_id is not None))
    report("done", len(state.items))
