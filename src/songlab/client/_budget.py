"""The budget guard: ``with client.budget(usd=...)`` refuses creates that would exceed it.

Before a create is sent its estimate is reserved against every active budget
(so concurrent async creates cannot overshoot together); the reservation
becomes spending when the create is answered, and is released if it fails. An
idempotent repeat that returns a task already counted is not counted again.

A budget is active only in the code its ``with`` block runs: the active
budgets live in a :mod:`contextvars` variable, so a widget's thread or another
coroutine of the same client is not charged to it, while tasks started inside
the block (``asyncio.gather``, ``create_task``) inherit it, as context does.

A budget may be scoped to a project, a tag or a key id (``client.budget(usd=...,
project=...)``): only the creates carrying that label count against it. It may start with
an amount already spent (``spent=``): ``songlab.ledger.budgets.hold`` makes the hard budgets
of a team's budgets file this way, from the spend the ledger knows in the period.
"""

from __future__ import annotations

import contextvars
import threading
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING

from songlab.client._exceptions import BudgetExceeded

if TYPE_CHECKING:
    from songlab.client._cost_estimate import Estimate

__all__ = ["Budget", "BudgetStack", "Reservation"]

# Every active budget of every client in the current context; each stack keeps its own.
_ACTIVE: contextvars.ContextVar[tuple[Budget, ...]] = contextvars.ContextVar(
    "songlab_budgets", default=()
)


class BudgetStack:
    """The budgets of one client (nested blocks all count)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()

    @property
    def active(self) -> tuple[Budget, ...]:
        """The budgets of this client whose block the current context is inside."""
        return tuple(b for b in _ACTIVE.get() if b._stack is self)

    def reserve(
        self,
        estimate: Estimate | None,
        *,
        project: str | None = None,
        tags: tuple[str, ...] = (),
        key_id: str | None = None,
    ) -> Reservation:
        """Hold ``estimate`` on every active budget the create's labels fall under, or raise
        BudgetExceeded."""
        active = tuple(b for b in self.active if b.covers(project, tags, key_id))
        if not active:
            return Reservation((), Decimal(0))
        with self.lock:
            if estimate is None or not estimate.bounded:
                what = estimate.describe() if estimate is not None else "this create"
                raise BudgetExceeded(
                    f"{what} has no upper bound on its cost inside client.budget(...)"
                    + (f"; {estimate.note}" if estimate is not None and estimate.note else "")
                )
            amount = estimate.usd
            for b in active:
                if amount > b.remaining:
                    raise BudgetExceeded(
                        f"{estimate.describe()} is estimated at ${amount}, over "
                        f"{'the budget' if b.label is None else b.label}'s "
                        f"remaining ${b.remaining} (limit ${b.limit}, spent ${b.spent})",
                        estimate_usd=amount,
                        remaining_usd=b.remaining,
                    )
            budgets = active
            for b in budgets:
                b.held += amount
            return Reservation(budgets, amount, self.lock)


@dataclass(slots=True)
class Reservation:
    budgets: tuple[Budget, ...]
    amount: Decimal
    lock: threading.Lock = field(default_factory=threading.Lock)

    def commit(self, task_id: str) -> None:
        for b in self.budgets:
            with self.lock:
                b.held -= self.amount
                if task_id not in b.task_ids:
                    b.task_ids.append(task_id)
                    b.spent += self.amount

    def release(self) -> None:
        for b in self.budgets:
            with self.lock:
                b.held -= self.amount


class Budget:
    """A spending limit in USD over the creates made inside a ``with`` block (of one project,
    tag or key id when scoped; ``spent``: what counts against it already)."""

    def __init__(
        self,
        limit: Decimal,
        stack: BudgetStack,
        *,
        spent: Decimal = Decimal(0),
        project: str | None = None,
        tag: str | None = None,
        key_id: str | None = None,
        label: str | None = None,
    ) -> None:
        self.limit = limit
        # spent before the block (given), then the estimates of the creates answered in it
        self.spent = spent
        self.project, self.tag, self.key_id, self.label = project, tag, key_id, label
        self.held = Decimal(0)  # creates in flight
        self.task_ids: list[str] = []
        self._stack = stack
        self._tokens: list[contextvars.Token[tuple[Budget, ...]]] = []

    @property
    def remaining(self) -> Decimal:
        return self.limit - self.spent - self.held

    def covers(self, project: str | None, tags: tuple[str, ...], key_id: str | None) -> bool:
        """Whether a create with these labels counts against this budget."""
        return (
            (self.project is None or project == self.project)
            and (self.tag is None or self.tag in tags)
            and (self.key_id is None or key_id == self.key_id)
        )

    def __enter__(self) -> Budget:
        self._tokens.append(_ACTIVE.set((*_ACTIVE.get(), self)))
        return self

    def __exit__(self, *exc: object) -> None:
        _ACTIVE.reset(self._tokens.pop())

    def __repr__(self) -> str:
        scope = "".join(
            f", {k}={v!r}"
            for k, v in (("project", self.project), ("tag", self.tag), ("key_id", self.key_id))
            if v is not None
        )
        return (
            f"Budget(limit=${self.limit}, spent=${self.spent}, tasks={len(self.task_ids)}{scope})"
        )
